"""The command line of the one-model drivers: gradient_reduction, preparation, validation."""

import argparse

MODELS = {"lama": "LAMAClassifier", "fcsr": "FCSRClassifier", "duo": "DuoClassifier"}


def read(prog, description, argv, model, rounds):
    """The driver's options and data: ``(args, classifier class, texts, labels)``.

    ``--model`` (default ``model``), ``--rounds`` (default ``rounds``),
    ``--corpus`` (a name or path of ``benchmarks/_data.py``; MR by default)
    and ``--limit`` (a stratified number of its training documents).
    """
    import sklearn_lama

    from ._data import head, load

    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--model", choices=sorted(MODELS), default=model)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument(
        "--corpus", default="mr", help="a name or path of benchmarks/_data.py (default: mr)"
    )
    parser.add_argument("--limit", type=int, help="training documents (default: all)")
    args = parser.parse_args(argv)
    X, y, _, _ = load(args.corpus)
    X, y = head(X, y, args.limit)
    return args, getattr(sklearn_lama, MODELS[args.model]), X, y
