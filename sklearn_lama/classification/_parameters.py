"""The parameter values that every classifier's ``paper_parameters`` share."""

__all__ = ["ADDITIONS_OFF"]


# The library's additions to every paper, switched off: the Naive Bayes
# features, the dropout on the token vectors and the weight average.
ADDITIONS_OFF = {
    "nb_unigram_weight": 0.0,
    "nb_bigram_weight": 0.0,
    "embedding_dropout": 0.0,
    "ema_horizon": 0.0,
}
