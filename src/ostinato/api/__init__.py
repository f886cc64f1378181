"""The HTTP API (FastAPI): thin routes over the store's verbs and the domain's parsers,
bearer tokens with a read and an admin scope, and Prometheus metrics at ``/metrics``; and the web
console for people at ``/`` (:mod:`ostinato.api.console`, a package of its own).

:func:`create_app` builds an application for a store (or a factory of one), the
settings and a clock; ``ostinato api serve`` runs it with uvicorn. It needs the ``api`` extra;
``tokens`` (the secrets and their hashes) reads without it.
"""

from __future__ import annotations

from ..extras import lazy_exports

__getattr__ = lazy_exports(__name__, {"create_app": "app"}, "api", "the HTTP API")

__all__ = ["create_app"]
