"""The API's documentation page, ``/docs``, in a real headless Chromium (Debian's ``chromium``,
driven by Playwright): Swagger UI reads the OpenAPI 3.1 description the server declares and lists
its operations, with every file it loads served by the server itself (no network beyond it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_helpers import keep_screenshot, serve

from ostinato.api import create_app
from ostinato.config import Settings


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[str]:
    with serve(create_app(sqlite_store, Settings(), clock), "docs-uvicorn") as base:
        yield base


def test_the_docs_page_lists_the_operations(served, chromium, tmp_path):
    base = served
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    elsewhere: list[str] = []
    # the page may load only what this server serves
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
                  else (elsewhere.append(route.request.url), route.abort()))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{base}/docs")
        declared = page.request.get(f"{base}/openapi.json").json()["openapi"]
        assert declared.startswith("3.1"), declared
        # the operations, or Swagger UI's word that it cannot read the description (.version-pragma)
        page.locator(".opblock, .version-pragma").first.wait_for(timeout=30_000)
        shown = page.locator("#swagger-ui").inner_text()
        assert "Unable to render" not in shown, shown[:500]
        for path in ("/api/v1/tasks", "/api/v1/schedules/{name}/run-now", "/api/v1/origins/grab-next", "/health"):
            assert page.locator(f'.opblock-summary-path[data-path="{path}"]').count() >= 1, path
        assert page.locator(".opblock").count() >= 30
        assert "OAS 3.1" in shown, shown[:300]
        # the description reads as prose (a line that starts `1000)` would make it a numbered list)
        assert page.locator(".info .markdown ol").count() == 0
        assert not errors, errors
        assert not elsewhere, elsewhere
        keep_screenshot(page, tmp_path, "api-docs-1280")
    finally:
        context.close()
