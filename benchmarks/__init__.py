"""Benchmark suite of sklearn_lama: ``python -m benchmarks [part ...] --size quick|full``.

Parts (each also runs alone, e.g. ``python -m benchmarks peers --size full``):

* ``params``: parameters against attention heads, LAMA vs a Transformer
  encoder (``papers/lama.md`` Table 5);
* ``runtime``: training time and peak memory against sequence length, LAMA
  Encoder, LAMA, FCSR vs a Transformer encoder (``papers/lama.md`` §5.2);
* ``peers``: accuracy, fit time, throughput and latency of every estimator
  against TF-IDF + LogisticRegression and fastText on R8, MR or a user corpus;
* ``scaling``: fit time and peak memory as the corpus grows, per token.

Every comparison is measured side by side in one run and reported as ratios;
each part writes ``<name>.json``, ``<name>.md``, ``<name>.rst`` (for the docs)
and ``<name>.png`` under ``benchmarks/results/`` (``results/quick/`` for the
quick size), stamped with the date, machine and library versions.
"""
