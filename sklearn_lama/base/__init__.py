"""What the estimators share above the training layer: the part of ``fit`` around ``train``."""
