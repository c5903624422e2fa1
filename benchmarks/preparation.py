"""What a default pipeline's fit spends before its training starts.

``python -m benchmarks.preparation [--model duo] [--corpus mr] [--limit N] [--rounds 1]``
fits the model's default pipeline (the shipped GloVe, then the classifier;
one epoch, no early stopping, one worker) on the corpus's training split (a
stratified ``N`` of its documents) and prints, for each round, the seconds
of the vectorizer's ``fit_transform``, of the classifier's ``fit`` until its
net starts training (reading the input, the Naive Bayes ratios, building the
network and the optimizer) and of the whole fit. That part runs in one
process whatever ``n_workers``: it bounds what more workers can gain. Run it
on an otherwise idle machine, from two checkouts in turn to compare them
(``PYTHONPATH=<checkout>``).
"""

import time


def _time_to_training(estimator, X, y):
    """Seconds of ``estimator.fit(X, y)`` until its net's ``partial_fit`` starts, and in all."""
    import skorch

    partial_fit = skorch.NeuralNet.partial_fit
    started = []

    def timed(net, *args, **kwargs):
        started.append(time.perf_counter())
        return partial_fit(net, *args, **kwargs)

    skorch.NeuralNet.partial_fit = timed
    try:
        start = time.perf_counter()
        estimator.fit(X, y)
        return started[0] - start, time.perf_counter() - start
    finally:
        skorch.NeuralNet.partial_fit = partial_fit


def main(argv=None):
    import sklearn_lama
    from sklearn_lama import Word2VecVectorizer

    from ._drivers import read

    args, make, X, y = read(
        "python -m benchmarks.preparation", __doc__.splitlines()[0], argv, model="duo", rounds=1
    )
    print(f"sklearn_lama from {sklearn_lama.__file__}", flush=True)
    for round_ in range(args.rounds):
        start = time.perf_counter()
        sequences = Word2VecVectorizer().fit_transform(X)
        vectorizer = time.perf_counter() - start
        estimator = make(max_epochs=1, early_stopping=False, random_state=0)
        before, fit = _time_to_training(estimator, sequences, y)
        print(
            f"round {round_ + 1}: vectorizer {vectorizer:.2f} s, classifier before training "
            f"{before:.2f} s, pipeline {vectorizer + fit:.2f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
