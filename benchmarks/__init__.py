"""Benchmark suite of sklearn_lama: ``python -m benchmarks [part ...] --size quick|full``.

Parts (each also runs alone, e.g. ``python -m benchmarks peers --size full``):

* ``params``: parameters against attention heads, LAMA vs a Transformer
  encoder (Table 5 of Mehta & Rangwala, "Compact Multi-Head Self-Attention
  for Learning Supervised Text Representations");
* ``runtime``: training time and peak memory against sequence length, LAMA
  Encoder, LAMA, FCSR vs a Transformer encoder (§5.2 of the LAMA paper
  (Mehta & Rangwala));
* ``peers``: accuracy, fit time, throughput and latency of every estimator
  against TF-IDF + LogisticRegression and fastText on R8, MR or a user corpus;
* ``scaling``: fit time and peak memory as the corpus grows, per token;
* ``explain``: faithfulness of attention, integrated gradients and occlusion
  (deletion test, AOPC) on R8 and MR, with each class's top words.

Every comparison is measured side by side in one run and reported as ratios;
each part writes ``<name>.json``, ``<name>.md``, ``<name>.rst`` (for the docs)
and ``<name>.png`` under ``benchmarks/results/`` (``results/quick/`` for the
quick size), stamped with the date, machine and library versions.
"""
