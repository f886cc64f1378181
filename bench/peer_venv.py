"""The peer's separate virtual environment (swh-scheduler 3.6.0 and what runs beside it), shared
by the benchmarks against it (``bench/vs_swh.py``, ``bench/celery_dispatch.py``) and the
swh-compat harness (``bench/swh_compat.py``).

The environment itself is made by ``test_servers.swh_peer`` (one marker, one lock, for the
benchmarks, the tests and this harness).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's root: its test_servers

from test_servers import swh_peer

REPO = Path(__file__).resolve().parent.parent
PEER_VERSION = swh_peer.PEER_VERSION
PEER_VENV = swh_peer.default_peer_venv(REPO)


def ensure_peer_venv(venv: Path, requirements: Sequence[str], *, say: Callable[[str], None] = print) -> Path:
    """``venv`` with ``requirements`` installed besides the peer itself (``test_servers.swh_peer``); returns its python."""
    return swh_peer.ensure_peer_venv(venv, extra=requirements, log=say)
