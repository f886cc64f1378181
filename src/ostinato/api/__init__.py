"""The HTTP API (FastAPI): thin routes over the store's verbs and the domain's parsers,
bearer tokens with a read and an admin scope, and Prometheus metrics at ``/metrics``.

:func:`create_app` builds an application for a store (or a factory of one), the
settings and a clock; ``ostinato api serve`` runs it with uvicorn.
"""

from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]
