"""The ``gpu`` part: the classifiers on a CUDA GPU, and a fit against the CPU cores given.

* ``device`` (the default, :mod:`.device`, results ``gpu``): the CUDA tests
  and the pipelines' cost on the GPU against one CPU thread;
* ``cores`` (:mod:`.cores`, ``gpu-cores``): each default pipeline's fit on
  1, 2, 4, ... CPU threads;
* ``epoch`` (:mod:`.epoch`, ``gpu-epoch``): one epoch of each classifier on
  the GPU against one CPU worker.
"""

from . import cores, device, epoch

NAME = "gpu"
SECTIONS = {"device": device, "cores": cores, "epoch": epoch}
OPTIONS = {
    "section": {
        "choices": list(SECTIONS),
        "help": "device (default): the CUDA tests and the pipelines on the GPU; cores: the "
        "pipelines' CPU fits on 1, 2, 4, ... threads; epoch: one epoch on the GPU against one CPU "
        "worker",
    }
}
