"""Peak memory of fitted pipelines on one long document or a long stream.

Run in a fresh process by ``test_memory.py``::

    python _memory_probe.py PIPELINES.joblib {long,stream} SIZE [transform]

``PIPELINES.joblib`` holds a dict of fitted pipelines. ``long SIZE``: one
document of SIZE tokens with 255 short ones (a full inference batch);
``stream SIZE``: a generator of SIZE ten-token documents. Each pipeline
predicts (or, with ``transform``, only transforms) and one JSON line reports
the resident memory above the level before the call (``extra_mib``), the
absolute peak and the seconds taken. Linux only: the peak is VmHWM from
/proc/self/status, reset between pipelines through /proc/self/clear_refs
(glibc's ``malloc_trim`` first returns freed memory).
A cap on the address space turns a regression into a MemoryError-like
failure instead of exhausting a shared machine.
"""

import ctypes
import gc
import json
import resource
import sys
import time

import joblib
import numpy as np

_CAP_MIB = 8 * 1024  # address space allowed above the level after loading


def _status_mib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def _reset_peak():
    # Hand freed heap back to the system first, so that what an earlier
    # pipeline freed is not reused unseen by the next one.
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def _long_documents(words, n_tokens):
    rng = np.random.RandomState(0)
    return [" ".join(rng.choice(words, n_tokens))] + [
        " ".join(rng.choice(words, 10)) for _ in range(255)
    ]


def _stream(words, n_documents):
    rng = np.random.RandomState(0)
    for _ in range(n_documents):
        yield " ".join(words[i] for i in rng.randint(0, len(words), 10))


def main(path, case, size, method="predict"):
    pipelines = joblib.load(path)
    virtual = _status_mib("VmSize")
    cap = int((virtual + _CAP_MIB) * 2**20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    for name, pipe in pipelines.items():
        words = list(pipe[0].vocabulary_)
        pipe.predict(words[:3])  # first-call allocations are not what is measured
        documents = _long_documents(words, size) if case == "long" else _stream(words, size)
        run = pipe.predict if method == "predict" else pipe[0].transform
        _reset_peak()
        base = _status_mib("VmRSS")
        start = time.perf_counter()
        out = run(documents)
        seconds = time.perf_counter() - start
        peak = _status_mib("VmHWM")
        assert len(out) == (256 if case == "long" else size)
        del out, documents
        print(
            json.dumps(
                {
                    "name": name,
                    "case": case,
                    "size": size,
                    "method": method,
                    "base_mib": round(base, 1),
                    "peak_mib": round(peak, 1),
                    "extra_mib": round(peak - base, 1),
                    "seconds": round(seconds, 2),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:])
