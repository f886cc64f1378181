"""swh-scheduler 3.6's RPC protocol over Ostinato's store (see docs/reference/swh-compat.md).

- :mod:`.wire`: the body encodings (msgpack and JSON, with the protocol's typed values);
- :mod:`.models`: the protocol's model objects, read strictly into plain values and written back;
- :mod:`.tasks` and :mod:`.origins`: each operation, mapped onto the store's verbs;
- :mod:`.app`: the HTTP application (routes, content negotiation, errors, tokens).
"""
