"""What the gradients' reduction costs data-parallel training: two workers with and without it.

``python -m benchmarks.gradient_reduction [--model lama] [--rounds 2] [--corpus mr]
[--limit N]`` fits the model's classifier at its defaults on the corpus's training
split (MR's by default; a stratified ``N`` of its documents) vectorised with
the shipped GloVe (one epoch, no early stopping) over two workers, once as
the package trains (the workers' gradients averaged at every step) and once
with the averaging replaced by nothing (each worker then trains alone on its
share: a measurement only, not a model), alternated over ``--rounds``
rounds, and prints the seconds each worker spent in skorch's ``partial_fit``
(the architecture page's "Decisions"). Run it on an otherwise idle machine.
"""

import time


def _timed_workers(estimator, X, y):
    """Fit ``estimator`` over two workers; print the seconds of each worker's ``partial_fit``."""
    import skorch

    partial_fit = skorch.NeuralNet.partial_fit

    def timed(net, *args, **kwargs):
        start = time.perf_counter()
        result = partial_fit(net, *args, **kwargs)
        print(f"worker {net.workers.rank}: {time.perf_counter() - start:.2f} s", flush=True)
        return result

    skorch.NeuralNet.partial_fit = timed
    try:
        estimator.fit(X, y)
    finally:
        skorch.NeuralNet.partial_fit = partial_fit


def _alone(workers, parameters, weight, samples):
    """No reduction: each worker keeps its own gradients, and its step its own samples."""
    return samples


def main(argv=None):
    from sklearn_lama import Word2VecVectorizer
    from sklearn_lama.training import _distributed

    from ._drivers import read

    args, make, X, y = read(
        "python -m benchmarks.gradient_reduction",
        __doc__.splitlines()[0],
        argv,
        model="lama",
        rounds=2,
    )
    sequences = Word2VecVectorizer().fit_transform(X)
    averaging = _distributed.Workers.average_gradients
    for round_ in range(args.rounds):
        for label, average in (("averaged", averaging), ("not averaged", None)):
            _distributed.Workers.average_gradients = average or _alone
            try:
                print(f"round {round_ + 1}, gradients {label}:", flush=True)
                estimator = make(max_epochs=1, early_stopping=False, n_workers=2, random_state=0)
                _timed_workers(estimator, sequences, y)
            finally:
                _distributed.Workers.average_gradients = averaging


if __name__ == "__main__":
    main()
