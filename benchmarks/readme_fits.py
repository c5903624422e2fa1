"""One small fit of each README pipeline, for timing two versions of the library side by side.

MR's training split, every third document, 2 epochs, ``random_state=0``:
``python -m benchmarks.readme_fits`` as one whole process, alternated with the
same command on the other version (the refactoring note of the training
driver quotes such a run).
"""

from sklearn_lama.datasets import load_mr

from ._models import OURS, make


def main():
    texts, labels = load_mr(subset="train", return_X_y=True)
    for name in OURS:
        make(name, seed=0, max_epochs=2).fit(texts[::3], labels[::3])


if __name__ == "__main__":
    main()
