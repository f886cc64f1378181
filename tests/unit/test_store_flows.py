"""The SQL store is every role's flow mixed into one class: no flow may define a name another
flow defines (a private helper of one role would silently replace another's)."""

from __future__ import annotations

from ostinato.store.interface import Store
from ostinato.store.sql_store import SQLStore


def test_no_two_flows_define_the_same_name():
    flows = [c for c in SQLStore.__mro__ if c.__module__.startswith("ostinato.store.") and c.__module__ != "ostinato.store.sql_store"
             and not issubclass(Store, c) and c is not object]
    assert len(flows) >= 7
    owners: dict[str, type] = {}
    clashes = []
    for flow in flows:
        for name in vars(flow):
            if name.startswith("__") or name in ("_abc_impl", "db"):
                continue
            owner = owners.setdefault(name, flow)
            related = issubclass(owner, flow) or issubclass(flow, owner)  # a flow and the part it builds on
            if not related:
                clashes.append(f"{name}: {owner.__qualname__} and {flow.__qualname__}")
    assert clashes == []
