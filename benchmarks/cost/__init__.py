"""The ``cost`` part: four questions of cost, one module each (``--section``).

* ``pipelines`` (the default, :mod:`.pipelines`, results ``cost*``): where
  each default pipeline's fit and prediction time goes, beside the tuned
  peers' fit time;
* ``corpus-size`` (:mod:`.corpus_size`, ``scaling*``): fit time and peak
  memory against the corpus's size;
* ``doc-length`` (:mod:`.doc_length`, ``scaling-length``): fit cost per token
  against the documents' length;
* ``paper-length`` (:mod:`.paper_length`, ``runtime_vs_length``): a training
  step against the sequence length, LAMA, the LAMA Encoder and FCSR against a
  Transformer encoder (LAMA paper, §5.2).

Each section declares the options it reads (``OPTIONS``); the command line
refuses the others.
"""

from . import corpus_size, doc_length, paper_length, pipelines

NAME = "cost"
SECTIONS = {
    "pipelines": pipelines,
    "corpus-size": corpus_size,
    "doc-length": doc_length,
    "paper-length": paper_length,
}
OPTIONS = {
    "section": {
        "choices": list(SECTIONS),
        "help": "pipelines (default): where each default pipeline's fit and prediction time "
        "goes; corpus-size: fit against the corpus's size; doc-length: fit per token against "
        "the documents' length; paper-length: a training step against the length, LAMA, FCSR "
        "vs a Transformer (LAMA paper §5.2)",
    }
}
