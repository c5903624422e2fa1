"""The parameter values that every classifier's ``paper_parameters`` share."""

__all__ = ["ADDITIONS_OFF"]


# The library's additions to every paper, switched off: the Naive Bayes
# features, the dropout on the token vectors, the weight average and the
# tolerance of early stopping (every decrease of the loss counts).
ADDITIONS_OFF = {
    "nb_unigram_weight": 0.0,
    "nb_bigram_weight": 0.0,
    "embedding_dropout": 0.0,
    "ema_horizon": 0.0,
    "tol": 0.0,
}
