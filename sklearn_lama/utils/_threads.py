"""How many torch threads a fit or a prediction uses, and the restoring of the caller's.

torch's intra-op threads are a setting of each Python thread.
``torch_threads=None`` (the default) means the CPUs the process was given
(:func:`available_cpus`), as torch itself and fastText default to the
machine's cores, with four guards against oversubscription:

- Process pools give each worker its share: joblib's loky backend sets
  ``OMP_NUM_THREADS`` to ``cpu_count() // n_jobs`` in its workers, Dask's
  nanny to 1, and :func:`available_cpus` reads it first.
- A task of a Dask worker, which runs one task per thread it was given,
  uses one (:func:`resolve_threads`).
- A call that starts while others run in threads of the same process
  (joblib's threading backend, a threaded Dask worker) takes its share of
  the CPUs (:func:`torch_threads`).

- Cores that other work keeps busy when the call starts are left out
  (:func:`busy_cpus`): there OpenMP's spinning makes a second thread cost
  several times what it gains.

OpenMP's waiting policy is left as the caller started torch (the user
guide's "Scaling out" page gives the reason): passive waiting slows every
fit on idle cores, and torch reads it only when it starts.
"""

import os
import sys
import threading
import time
from contextlib import contextmanager

import torch

__all__ = ["available_cpus", "busy_cpus", "resolve_threads", "runnable_threads", "torch_threads"]

_lock = threading.Lock()
# The Python threads inside a torch_threads block: their nesting depth and the
# setting to restore when they leave it.
_inside = {}


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

    ``None`` is every CPU the process was given (:func:`available_cpus`)
    less those other processes keep busy (:func:`busy_cpus`), at least one;
    or one in a task of a Dask worker, which runs one task per thread it
    was given whatever its environment says; a positive int is that
    number; a negative one counts from the given CPUs, joblib's ``n_jobs``
    convention: -1 is all of them, -2 all but one, at least 1.
    """
    if torch_threads is None:
        return 1 if _in_dask_task() else max(available_cpus() - busy_cpus(), 1)
    if torch_threads < 0:
        return max(available_cpus() + 1 + torch_threads, 1)
    return torch_threads


def busy_cpus():
    """How many of this process's CPUs other work keeps busy now.

    A second OpenMP thread on a core that another process keeps busy spins
    at every barrier while the thread it waits for is descheduled, which
    makes a fit several times slower than one thread; so the default leaves
    such cores out. Other work is the threads the kernel counts runnable,
    less the calling one (:func:`runnable_threads`), taken to fill the
    machine's CPUs outside this process's share first. It is read when a
    call starts, not averaged over the past minute, so that the load of this
    process's own previous fit does not count. 0 where it cannot be read.
    """
    runnable = runnable_threads()
    if runnable is None:
        return 0
    outside = max((os.cpu_count() or 1) - available_cpus(), 0)
    return max(runnable - 1 - outside, 0)


def runnable_threads(readings=2, interval=0.0005):
    """The kernel's count of runnable threads: the least of ``readings``, ``interval`` s apart.

    Linux's ``/proc/loadavg`` (its fourth field, ``runnable/total``); a
    passing process shows in one reading, a busy one in all. ``None`` where
    the file is absent or unreadable (not Linux).
    """
    counts = []
    for k in range(readings):
        if k:
            time.sleep(interval)
        try:
            with open("/proc/loadavg", encoding="ascii") as fh:
                counts.append(int(fh.read(256).split()[3].split("/")[0]))
        except (OSError, ValueError, IndexError):
            return None
    return min(counts)


def _in_dask_task():
    """Whether this thread runs a task of a Dask worker (never imports ``distributed``)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return False
    try:
        distributed.get_worker()
    except ValueError:  # "No worker found": not in a worker's task
        return False
    return True


@contextmanager
def torch_threads(n_threads):
    """Run the block with ``n_threads`` torch threads, then restore the caller's setting.

    torch keeps the setting per Python thread (OpenMP's per-thread
    ``nthreads`` of its parallel regions). A block entered while ``k - 1``
    other Python threads are inside one (joblib's threading backend, a
    threaded Dask worker) runs ``n_threads // k`` threads (at least one), so
    that overlapping fits share the cores instead of each running a full
    team. A block nested in another of the same Python thread (a
    prediction inside a fit) keeps the outer block's setting.
    """
    ident = threading.get_ident()
    with _lock:
        depth, saved = _inside.get(ident, (0, None))
        if depth == 0:
            saved = torch.get_num_threads()
            _set(max(n_threads // (len(_inside) + 1), 1))
        _inside[ident] = (depth + 1, saved)
    try:
        yield
    finally:
        with _lock:
            depth, saved = _inside.pop(ident)
            if depth > 1:
                _inside[ident] = (depth - 1, saved)
            else:
                _set(saved)


def _set(n_threads):
    if torch.get_num_threads() != n_threads:
        torch.set_num_threads(n_threads)
