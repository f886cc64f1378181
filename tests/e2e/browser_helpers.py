"""What the dashboard's browser tests share: the app served by uvicorn in a thread, Debian's chromium
driven by Playwright (the ``chromium`` fixture, in conftest.py: its own browsers are never downloaded), the
two screen sizes, and screenshots
kept in the test's tmp_path and, when ``$OSTINATO_SCREENSHOTS`` names a directory, there too (the
docs' pictures)."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from waiting import wait_until

from test_servers.postgres import free_port

VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}


@contextlib.contextmanager
def serve(app: Any, name: str = "dashboard-uvicorn") -> Iterator[str]:
    """``app`` served on a free port of 127.0.0.1 until the block ends; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()

    def started() -> bool:
        assert thread.is_alive(), "uvicorn did not start"
        return server.started

    wait_until(started, timeout=30, interval=0.01, what="uvicorn to start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def keep_screenshot(page: Any, tmp_path: Path, name: str, width: int | None = None) -> Path:
    """A full-page screenshot ``name.png`` in ``tmp_path`` (and in ``$OSTINATO_SCREENSHOTS`` when set);
    with ``width``, the page must not scroll sideways at it."""
    if width is not None:
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        assert scroll_width <= width, f"{name} at {width} px: the page is {scroll_width} px wide"
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 5_000
    wanted = os.environ.get("OSTINATO_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(wanted) / shot.name)
    print(f"screenshot: {shot}")
    return shot
