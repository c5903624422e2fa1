"""Measurement primitives shared by every part: timing, peak memory, isolation.

Each measurement cell runs in a fresh Python process (:func:`run_cell`) so
that its memory belongs to it alone. ``tracemalloc`` does not see torch's
allocations and CPU tensors have no peak counter, so memory is the kernel's
peak resident set size (``VmHWM``) during a window opened by
:func:`start_peak` once the cell's inputs exist, minus the resident size at
that moment: the extra memory the measured phase needed at its worst. It is
page-granular and includes the allocator's slack: a few MiB are noise.
"""

import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from ._env import ROOT

_MARKER = "@@benchmark-result@@ "


def _status_mib(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise OSError(field)


def start_peak():
    """Start a peak-memory window; return the resident set size (MiB) it starts from.

    Freed heap is handed back to the OS first (glibc ``malloc_trim``) and the
    kernel's high-water mark is reset (``/proc/self/clear_refs``, Linux 4.0+),
    so the window's peak is not hidden by memory an earlier phase (imports,
    warm-up) touched and freed. Elsewhere it falls back to the process's
    lifetime peak, which can under-report.
    """
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return _status_mib("VmRSS")
    except OSError:
        return peak_rss_mib()


def peak_rss_mib():
    """Peak resident set size (MiB) since the last :func:`start_peak` (or the process's start)."""
    try:
        return _status_mib("VmHWM")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def median_time(fn, repeats, warmup=1):
    """Median wall time of ``fn()`` over ``repeats`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return {"median_s": statistics.median(times), "times_s": times}


def run_cell(target, threads, kwargs, timeout=None):
    """Run ``target`` (``"module:function"`` in this package) in a fresh process.

    The function gets the dict ``kwargs`` as keyword arguments and returns a
    JSON-able dict. Thread pools (torch, OpenMP, BLAS) are limited to
    ``threads`` through the environment, before anything is imported. A cell
    that fails returns ``{"error": ...}`` instead of stopping the suite, so
    one broken model leaves the others' results; so does a cell still running
    after ``timeout`` seconds (``None``: no limit), which is killed, with
    ``"timed_out": timeout``.
    """
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    )
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    spec = json.dumps({"target": target, "threads": threads, "kwargs": kwargs})
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks._worker", spec],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"still running after {timeout} s: stopped", "timed_out": timeout}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_MARKER):
            return json.loads(line[len(_MARKER) :])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"error": f"exit {proc.returncode}: {tail[0][:300]}"}


def run_cells(target, threads, kwargs_list, jobs=1, done=None):
    """:func:`run_cell` of ``target`` for every dict of ``kwargs_list``, ``jobs`` at a time.

    Returns the results in the order of ``kwargs_list``; ``done(kwargs,
    result)`` is called as each cell ends (for a progress log). Cells run
    in parallel share the CPU: their times are comparable among themselves
    only.
    """
    from concurrent.futures import ThreadPoolExecutor

    def one(kwargs):
        result = run_cell(target, threads, kwargs)
        if done is not None:
            done(kwargs, result)
        return result

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, kwargs_list))


def worker_main(argv):
    """Entry point of the child process started by :func:`run_cell`."""
    import importlib

    import torch

    spec = json.loads(argv[0])
    torch.set_num_threads(spec["threads"])
    # The first optimizer of a process imports torch._dynamo (seconds): a
    # one-off that would otherwise land in whichever fit comes first.
    start = time.perf_counter()
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    first_optimizer_s = time.perf_counter() - start
    module, function = spec["target"].split(":")
    result = getattr(importlib.import_module(module), function)(**spec["kwargs"])
    result.update(torch_threads=torch.get_num_threads(), first_optimizer_s=first_optimizer_s)
    print(_MARKER + json.dumps(result), flush=True)
