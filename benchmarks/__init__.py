"""Benchmark suite of sklearn_lama: ``python -m benchmarks [PART ...] --size quick|full``.

One module per question, on the shared harness (``_harness``: isolated,
timed cells; ``_report``: tables and plots; ``_data``: corpora; ``_models``:
the pipelines and peers; ``_env``: the stamp of every result; ``_options``:
the options each part reads; ``_parts``: the parts and their results files):

* ``params``: parameters against attention heads, LAMA vs a Transformer
  encoder (Table 5 of Mehta & Rangwala, "Compact Multi-Head Self-Attention
  for Learning Supervised Text Representations");
* ``accuracy``: test accuracy of the default pipelines against the tuned
  peers, over seeds;
* ``cost``: four questions of cost, a module each (``--section``):
  ``pipelines``, where the fit and prediction time goes; ``corpus-size``;
  ``doc-length``, per token against document length; ``paper-length``, a
  training step against length, vs a Transformer;
* ``select``: defaults chosen by cross-validation on training splits
  (``--grid``: defaults, pretrained, speed, default);
* ``translation``: DuoTranslator against a Transformer for equal time;
* ``multilabel``: one multi-task model against separate models;
* ``export``: ONNX Runtime against the estimators;
* ``latency``: p50 and p99 of one document from raw text;
* ``explain``: faithfulness of attention, integrated gradients and occlusion;
* ``side``: text beside tabular columns;
* ``gpu``: the CUDA tests and the pipelines' cost on a GPU (``--section
  device``), a fit against the CPU cores given (``--section cores``);
* ``equivalence``: fingerprints of fitted models, before/after a change.
"""
