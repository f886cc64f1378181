"""Where a benchmark runs: a folder kept for a look afterwards (``--keep DIR``), or a temporary one
removed at the end; readable by the ``postgres`` account, which the throwaway servers run as when the
benchmark runs as root."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def work_folder(keep: Path | None, prefix: str) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        os.chmod(keep, 0o755)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix, dir="/tmp") as work:
        os.chmod(work, 0o755)
        yield Path(work)
