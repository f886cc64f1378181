"""Working through the HTTP API instead of on the database: :class:`RemoteStore` (the store
interface over ``POST /api/v1/store/<verb>``), the codec that carries domain values as JSON,
and the catalogue of verbs both sides share."""

from __future__ import annotations

from .codec import UnsupportedType, codec_for
from .store_client import RemoteAuthError, RemoteError, RemoteStore, RemoteUnavailable
from .verbs import NOT_EXPOSED, Verb, store_verbs

__all__ = ["NOT_EXPOSED", "RemoteAuthError", "RemoteError", "RemoteStore", "RemoteUnavailable", "UnsupportedType",
           "Verb", "codec_for", "store_verbs"]
