"""``python -m benchmarks._worker SPEC``: one measurement cell, in its own process."""

import sys

from ._harness import worker_main

if __name__ == "__main__":
    worker_main(sys.argv[1:])
