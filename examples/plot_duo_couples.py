"""
Duo meta-embeddings: which pair of embeddings works best?
=========================================================

DuoClassifier lets two embeddings of the same words attend to each other.
MetaEmbeddingTransformer builds them over one shared vocabulary; here three
"couples" are compared on Reuters R8: one skip-gram embedding in both roles
(the diagonal of the Duo paper's Table 2), CBOW with skip-gram, and two
skip-gram embeddings of different sizes.
"""

import time

from sklearn.pipeline import Pipeline

from sklearn_lama import DuoClassifier, MetaEmbeddingTransformer, Word2VecVectorizer
from sklearn_lama.datasets import load_r8

texts, labels = load_r8(return_X_y=True)
test_texts, test_labels = load_r8(subset="test", return_X_y=True)

couples = {
    "skip-gram 100 (diagonal)": [("sg", Word2VecVectorizer(sg=1, random_state=0))],
    "CBOW 100 + skip-gram 100": [("cbow", Word2VecVectorizer(sg=0, random_state=0)),
                                 ("sg", Word2VecVectorizer(sg=1, random_state=0))],
    "skip-gram 50 + skip-gram 100": [
        ("sg50", Word2VecVectorizer(vector_size=50, random_state=0)),
        ("sg100", Word2VecVectorizer(random_state=0)),
    ],
}
for name, sources in couples.items():
    start = time.perf_counter()
    pipe = Pipeline([
        ("emb", MetaEmbeddingTransformer(sources)),
        ("clf", DuoClassifier(random_state=0)),
    ]).fit(texts, labels)
    print(f"{name:<30} test accuracy {pipe.score(test_texts, test_labels):.4f} "
          f"(fit {time.perf_counter() - start:.0f}s)")
