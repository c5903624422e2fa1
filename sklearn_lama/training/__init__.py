"""The training stack every estimator shares: the skorch net, callbacks, batching, inference."""
