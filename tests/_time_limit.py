"""A time limit for a block of a test, for the calls that must provably end.

SIGALRM rather than a subprocess per call: the loops where a hang would be
are Python code, which the signal interrupts between two bytecodes (or two
torch operations), and the alarm costs nothing per call, where a subprocess
would cost an interpreter start with numpy and torch. A hang inside C code,
which the signal cannot interrupt, is caught by faulthandler: after ten times
the limit it prints every thread's stack and ends the test process, which
fails the run instead of stalling it.
"""

import contextlib
import faulthandler
import signal

__all__ = ["Overran", "time_limit"]


class Overran(BaseException):
    """Raised by :func:`time_limit`; a BaseException, so that no ``except Exception`` hides it."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raise :class:`Overran` in the block if it runs longer than ``seconds``."""

    def alarm(signum, frame):
        raise Overran(f"the call did not end within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    faulthandler.dump_traceback_later(10 * seconds, exit=True)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)
