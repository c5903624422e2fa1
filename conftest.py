import os

# scikit-learn's array-API check runs (instead of skipping) only when SciPy is
# imported with this flag set.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

# Two cores in CI: one intra-op thread per test process avoids oversubscription
# and keeps float results independent of the thread count.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def toy_corpus():
    """A small two-class corpus whose classes differ by vocabulary."""
    rng = np.random.RandomState(0)
    pos = ["good", "great", "excellent", "fine", "nice", "happy", "love"]
    neg = ["bad", "awful", "poor", "terrible", "sad", "hate", "worst"]
    filler = ["the", "a", "movie", "film", "plot", "was", "is", "and"]
    texts, labels = [], []
    for i in range(120):
        words = pos if i % 2 else neg
        n = rng.randint(3, 15)
        tokens = list(rng.choice(words, size=3)) + list(rng.choice(filler, size=n))
        rng.shuffle(tokens)
        texts.append(" ".join(tokens))
        labels.append("pos" if i % 2 else "neg")
    return texts, np.array(labels)
