from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
version = {}
for line in (HERE / "sklearn_lama" / "__init__.py").read_text().splitlines():
    if line.startswith("__version__"):
        exec(line, version)

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
    package_data={"sklearn_lama.datasets": ["data/*/*.jsonl.gz"]},
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.24",
        "scipy>=1.10",
        "scikit-learn>=1.6,<1.10",
        "joblib>=1.2",
        "torch>=2.1",
        "skorch>=1.0",
        "gensim>=4.3",
        "tqdm>=4.60",
    ],
    extras_require={
        "translation": ["sentencepiece>=0.1.99", "sacrebleu>=2.0"],
        "test": ["pytest>=7", "pandas>=1.5", "hypothesis>=6", "sentencepiece>=0.1.99", "sacrebleu>=2.0"],
        "docs": ["sphinx>=7", "numpydoc>=1.6"],
        "benchmarks": ["matplotlib>=3.5", "fasttext>=0.9.2"],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Intended Audience :: Science/Research",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
