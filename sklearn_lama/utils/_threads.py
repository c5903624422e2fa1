"""How many torch threads a fit or a prediction uses, and the restoring of the caller's.

torch's intra-op threads are one process-wide setting. Two facts decide the
default (the user guide's "Scaling out" page has the timings):

- On a machine whose cores other processes keep busy, torch's OpenMP threads
  spin at the barrier that ends every parallel operation while the thread
  they wait for is descheduled, so a second thread can make a fit much
  slower. ``OMP_WAIT_POLICY=PASSIVE`` avoids the spinning, but torch reads it
  only when it starts. On a quiet machine a second thread gains little for
  these small recurrent and attention operations.
- Under a parallel search, every worker that runs torch at its default (all
  cores) oversubscribes the machine. joblib's loky backend and Dask's nanny
  set ``OMP_NUM_THREADS`` in their workers, but a Dask worker without a
  nanny, a threaded worker, or an environment that sets it higher does not.

So ``torch_threads=None`` means one thread, as ``n_jobs=None`` means one job
in scikit-learn, whatever process runs the fit; an int asks for more.
"""

import os
import threading
from contextlib import contextmanager

import torch

__all__ = ["available_cpus", "resolve_threads", "torch_threads"]

_lock = threading.Lock()
_active = 0
_saved = None


def available_cpus():
    """CPUs this process was given: ``OMP_NUM_THREADS`` when set, else its CPU affinity.

    Process pools set ``OMP_NUM_THREADS`` to a worker's share of the cores
    (joblib's loky backend: ``cpu_count() // n_jobs``; Dask's nanny: 1);
    the affinity mask is what the scheduler (``taskset``, cgroups, SLURM)
    lets the process run on.
    """
    value = os.environ.get("OMP_NUM_THREADS", "")
    try:
        given = int(value.split(",")[0])
    except ValueError:
        given = 0
    if given >= 1:
        return given
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_threads(torch_threads):
    """The number of threads that ``torch_threads`` (None, or an int other than 0) asks for.

    ``None`` is 1; a positive int is that number; a negative one counts from
    the CPUs the process was given (:func:`available_cpus`), joblib's
    ``n_jobs`` convention: -1 is all of them, -2 all but one, at least 1.
    """
    if torch_threads is None:
        return 1
    if torch_threads < 0:
        return max(available_cpus() + 1 + torch_threads, 1)
    return torch_threads


@contextmanager
def torch_threads(n_threads):
    """Run the block with ``n_threads`` torch threads, then restore the caller's setting.

    The setting is process-wide, so calls that overlap in threads of one
    process share it: the first to enter remembers the caller's value and the
    last to leave restores it (the others leave it as the first set it).
    """
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = torch.get_num_threads()
            if _saved != n_threads:
                torch.set_num_threads(n_threads)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and torch.get_num_threads() != _saved:
                torch.set_num_threads(_saved)
