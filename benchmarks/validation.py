"""What validation costs a fit over two workers.

``python -m benchmarks.validation [--model lama] [--corpus mr] [--limit N] [--rounds 1]``
fits the model's classifier at its defaults (early stopping on: the
validation split held out and validated after the epoch; one epoch) on the
corpus's training split (a stratified ``N`` of its documents), vectorised
with the shipped GloVe, over two workers, and prints for each round the
seconds each worker spent validating and the seconds of the whole fit. Run
it on an otherwise idle machine, from two checkouts in turn to compare them
(``PYTHONPATH=<checkout>``).
"""

import time


def _timed_validation(estimator, X, y):
    """Fit ``estimator``, printing each worker's seconds of validation; the fit's seconds."""
    from sklearn_lama.training._net import NetMixin

    run_single_epoch = NetMixin.run_single_epoch

    def timed(net, iterator, training, *args, **kwargs):
        start = time.perf_counter()
        result = run_single_epoch(net, iterator, training, *args, **kwargs)
        if not training and iterator is not None:
            rank = 0 if net.workers is None else net.workers.rank
            print(f"worker {rank}: validation {time.perf_counter() - start:.2f} s", flush=True)
        return result

    NetMixin.run_single_epoch = timed
    try:
        start = time.perf_counter()
        estimator.fit(X, y)
        return time.perf_counter() - start
    finally:
        NetMixin.run_single_epoch = run_single_epoch


def main(argv=None):
    import sklearn_lama
    from sklearn_lama import Word2VecVectorizer

    from ._drivers import read

    args, make, X, y = read(
        "python -m benchmarks.validation", __doc__.splitlines()[0], argv, model="lama", rounds=1
    )
    print(f"sklearn_lama from {sklearn_lama.__file__}", flush=True)
    sequences = Word2VecVectorizer().fit_transform(X)
    for round_ in range(args.rounds):
        estimator = make(max_epochs=1, n_workers=2, random_state=0)
        print(f"round {round_ + 1}: fit {_timed_validation(estimator, sequences, y):.2f} s")


if __name__ == "__main__":
    main()
