"""The JSON-lines protocol of the benchmarks' peer drivers, which run in the peer's own virtual environment.

The benchmark starts a driver script with the peer venv's Python and sends it one
JSON object per line on stdin, ``{"op": NAME, ...parameters}``; :func:`serve`
answers each with one JSON line on stdout: ``init`` builds the driver (its answer
is the driver's ``versions``), ``quit`` ends, any other ``op`` calls the driver's
method of that name; a failure answers ``{"error", "traceback"}``. Standard
library only: it runs where nothing of Ostinato is installed.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any


def serve(create: Callable[..., Any]) -> int:
    """Answer the benchmark's commands on stdin with ``create(**init)``'s methods until ``quit``."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr  # whatever the peer prints must not garble the answers
    driver: Any = None
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        op = command.pop("op")
        try:
            if op == "quit":
                out.write(json.dumps({"ok": True}) + "\n")
                return 0
            if op == "init":
                driver = create(**command)
                answer: dict[str, Any] = {"versions": driver.versions}
            else:
                assert driver is not None, "init first"
                method: Callable[..., dict[str, Any]] = getattr(driver, op)
                answer = method(**command)
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        out.write(json.dumps(answer) + "\n")
    return 0
