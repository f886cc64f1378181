"""Child processes of the test servers and harnesses that do not outlive them.

A harness killed without its own cleanup (its parent killed, its output pipe closed) would leave the
services it started running: they hold ports, poll databases and load the machine under the next
benchmark. ``die_with_parent()`` is a ``preexec_fn`` that asks the kernel to kill the child when the
thread that started it ends (``PR_SET_PDEATHSIG`` on Linux; None elsewhere): start such children from a
thread that outlives them, such as the main thread. The function the child runs between fork and exec
is one call of a C function resolved beforehand: nothing that could wait on a lock another thread held
at the fork. (util-linux's ``setpriv --pdeathsig`` would need no code in the child, but here it does
not take effect: tested.)
"""

from __future__ import annotations

import ctypes
import signal
import sys
from collections.abc import Callable
from typing import Final

_PR_SET_PDEATHSIG: Final = 1


def die_with_parent() -> Callable[[], None] | None:
    """A function for the child, between fork and exec, that asks the kernel to kill it when we die (Linux)."""
    if sys.platform != "linux":
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here: the child only calls it
    except (OSError, AttributeError):
        return None
    return lambda: prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
