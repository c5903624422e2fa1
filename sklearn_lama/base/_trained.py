"""``TrainedMixin``: the part of ``fit`` that the classifiers and the translator share."""

import warnings

from ..training._config import training_config
from ..training._driver import restore_net, train
from ..training._net import training_state
from ..utils._persistence import save_state

__all__ = ["TrainedMixin"]


class TrainedMixin:
    """Mixin of the estimators that :func:`~sklearn_lama.training._driver.train` fits.

    It holds what their ``fit`` shares around the one training call: the
    :class:`~sklearn_lama.training._config.TrainingConfig` of the current
    parameters, the call itself with the state it continues from and the
    checkpoints' writer, the net of a loaded model, and the warning of an
    interrupted fit. The estimator reads its own data, holds out its split and
    builds its module; it defines

    - ``_make_net(module, config, split, callbacks, device)``: the skorch net
      of ``module`` (a factory of the training layer over its parameters);
    - ``_fitted_state(net, kept, checkpoint_path)``: the state that
      :func:`~sklearn_lama.save_weights` writes of ``net`` (``kept=None`` for
      a checkpoint written in training).

    A fitted estimator has ``net_``.
    """

    def _training_config(self):
        """The :class:`~sklearn_lama.training._config.TrainingConfig` of the current parameters."""
        return training_config(type(self).__name__, self.get_params(deep=False))

    def _train_net(self, X, y, *, config, seed, resume, checkpoint, **options):
        """Train a net on ``X`` and ``y``; return the ``TrainingResult`` of ``train``.

        Continues from ``net_``'s training state when ``resume``; writes the
        checkpoints to the template ``checkpoint`` (``None``: none).
        ``options`` are :func:`~sklearn_lama.training._driver.train`'s
        other keyword arguments (``build_module`` among them).
        """

        def save(net, path):
            save_state(self, self._fitted_state(net, None, checkpoint), path)

        return train(
            X,
            y,
            config=config,
            seed=seed,
            make_net=self._make_net,
            previous=training_state(self.net_) if resume else None,
            checkpoint=checkpoint,
            save=save,
            **options,
        )

    def _restore_net(self, build_module, state):
        """The net of a loaded model: the module of ``build_module()`` holding ``state``."""
        return restore_net(build_module, self._make_net, self._training_config(), state)

    def _warn_if_interrupted(self, result, method, kept):
        """Warn when ``result`` says ``method`` was interrupted; ``kept``: the weights kept."""
        if result.interrupted:
            warnings.warn(
                f"{type(self).__name__}.{method} was interrupted (KeyboardInterrupt) during "
                f"epoch {result.n_epochs}; the estimator is usable and keeps {kept}; fit with "
                "warm_start=True continues from there.",
                UserWarning,
                stacklevel=4,
            )
