"""Fit cost of one model over MR and R8 as two tasks: the before/after driver of batching.

Fits the default pipeline of ``--model`` on the training documents of both
corpora as the two columns of one ``y`` (each document labelled for its own
corpus, ``None`` in the other column, as the ``multilabel`` part's
multi-task cell does) and prints one line of JSON: wall and CPU seconds of
the fit, epochs and each task's test accuracy. Run from the root of a
checkout, it fits that checkout's library, so that two versions can be timed
side by side (copy this file into the other checkout's ``benchmarks/``)::

    python -m benchmarks.multitask_fit --limit 3000 --max-epochs 2

One torch thread, ``random_state=0``.
"""

import argparse
import json
import pathlib
import time

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="fcsr", choices=["lama", "fcsr", "duo"])
    p.add_argument("--limit", type=int, default=None, help="training documents of each corpus")
    p.add_argument("--max-epochs", type=int, default=None)
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    import sklearn_lama
    from sklearn_lama.datasets import load_mr, load_r8

    from .multilabel import _head, _pipeline

    corpora = {"mr": load_mr, "r8": load_r8}
    train = {n: _head(*f(subset="train", return_X_y=True), args.limit) for n, f in corpora.items()}
    texts = train["mr"][0] + train["r8"][0]
    y = np.full((len(texts), 2), None, dtype=object)
    y[: len(train["mr"][0]), 0] = train["mr"][1]
    y[len(train["mr"][0]) :, 1] = train["r8"][1]
    joint = _pipeline(args.model, args.max_epochs)
    start, cpu = time.perf_counter(), time.process_time()
    joint.fit(texts, y)
    result = {"fit_s": time.perf_counter() - start, "fit_cpu_s": time.process_time() - cpu}
    result["library"] = str(pathlib.Path(sklearn_lama.__file__).parents[1])
    result["epochs"] = joint[-1].n_epochs_
    for k, (name, loader) in enumerate(corpora.items()):
        X_test, y_test = loader(subset="test", return_X_y=True)
        result[name] = float(np.mean(joint.predict(X_test)[:, k] == np.asarray(y_test)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
