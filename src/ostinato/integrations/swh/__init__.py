"""swh-scheduler 3.6, the Software Heritage archive's scheduler: its RPC protocol over Ostinato's
store (docs/reference/swh-compat.md) and the import of its database (docs/reference/swh-import.md).

- :mod:`.wire`: the body encodings (msgpack and JSON, with the protocol's typed values);
- :mod:`.models`: the protocol's model objects, read strictly into plain values and written back;
- :mod:`.tasks` and :mod:`.origins`: each operation, mapped onto the store's verbs;
- :mod:`.app`: the HTTP application (routes, content negotiation, errors, tokens);
- :mod:`.db_source`, :mod:`.db_mapping`, :mod:`.db_import`, :mod:`.db_verify`: the database import.
"""
