"""One of Ostinato's beats in the comparison (``bench/beat/beat_compare.py``), on the driver's simulated
clock: the real ``OstinatoScheduler``, in its own process, reading the time from the file
``BEAT_CLOCK``. On each line ``tick`` of its input it ticks until nothing more is due at that time
and answers ``done <sends so far>``; on ``stop`` it closes and exits."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.beat.beat_app import app
from ostinato.integrations.celery.beat import OstinatoScheduler


class FileClock:
    """The simulated time the driver writes to a file."""

    def __init__(self, path: Path):
        self.path = path

    def now(self) -> datetime:
        return datetime.fromisoformat(self.path.read_text().strip())


def main() -> int:
    beat = OstinatoScheduler(app, clock=FileClock(Path(os.environ["BEAT_CLOCK"])))
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "stop":
            break
        while beat.tick() <= 0:
            pass
        print("done", beat.sent, flush=True)
    beat.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
