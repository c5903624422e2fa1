"""Where and with what a benchmark ran: the stamp every result carries."""

import datetime
import os
import platform
import subprocess
from importlib import metadata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_DISTRIBUTIONS = (
    "torch",
    "scikit-learn",
    "skorch",
    "gensim",
    "numpy",
    "scipy",
    "matplotlib",
    "fasttext",
)
# Distributions that install the same module under another name.
_ALIASES = {"fasttext": ("fasttext-wheel",)}


def cpu_model():
    """The CPU's marketing name, as the kernel reports it."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores():
    """Cores this process may run on (a container can see more than it gets)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def _versions():
    versions = {"python": platform.python_version()}
    for name in _DISTRIBUTIONS:
        versions[name] = "not installed"
        for distribution in (name, *_ALIASES.get(name, ())):
            try:
                versions[name] = metadata.version(distribution)
                break
            except metadata.PackageNotFoundError:
                pass
    import sklearn_lama

    versions["sklearn_lama"] = sklearn_lama.__version__
    return versions


def _git_commit():
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "sklearn_lama"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return out + (" (sklearn_lama/ modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def stamp(size, threads):
    """Return the run's metadata: date, machine, device, versions, threads, load."""
    import torch

    device = "cpu"
    if torch.cuda.is_available():
        device += f" (CUDA {torch.cuda.get_device_name(0)} present, not used)"
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "size": size,
        "machine": {
            "platform": platform.platform(),
            "cpu": cpu_model(),
            "cores": usable_cores(),
            "device": device,
        },
        "torch_threads": threads,
        "versions": _versions(),
        "git_commit": _git_commit(),
        "loadavg_start": round(os.getloadavg()[0], 2),
    }


def describe(meta):
    """One line per fact of the stamp, for the Markdown and rst reports."""
    m, v = meta["machine"], meta["versions"]
    return [
        f"date: {meta['date']}; size: {meta['size']}; wall time of the run: {meta['wall_s']:.0f} "
        f"s (``{meta['command']}``)",
        f"machine: {m['cpu']}, {m['cores']} cores, {m['platform']}; device: {m['device']}",
        f"torch threads: {meta['torch_threads']} (every measurement in its own process)",
        "versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"commit: {meta['git_commit']}",
        f"1-minute load average: {meta['loadavg_start']} at start, {meta['loadavg_end']} at end "
        f"({m['cores']} cores; above that, other jobs shared the CPU and absolute times are "
        "inflated)",
    ]
