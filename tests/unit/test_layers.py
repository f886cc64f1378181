"""Imports point one way: cli → services → execution, store → domain; the domain imports nothing of ours."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ostinato

ROOT = Path(ostinato.__file__).parent
ALLOWED = {
    "domain": {"domain"},
    "store": {"domain", "store", "extras"},
    "execution": {"domain", "execution"},
    "services": {"domain", "store", "execution", "services", "config", "extras"},
    "testing": {"testing"},
    "extras": {"domain"},
    "api": {"domain", "store", "services", "execution", "config", "api", "remote", "extras"},
    "remote": {"domain", "store", "remote"},
    "sim": {"domain", "store", "execution", "services", "config", "sim", "extras"},
    # faces towards other schedulers: the swh RPC face shares the API's token rules and app helpers
    "integrations": {"domain", "store", "integrations", "api"},
}


def internal_imports(path: Path) -> set[str]:
    """Top-level ostinato packages imported by a module."""
    package = path.relative_to(ROOT).parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level]
                target = list(base) + (node.module.split(".") if node.module else [])
                if target:
                    found.add(target[0])
            elif node.module and node.module.startswith("ostinato."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("ostinato."))
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_what_it_may(layer):
    module = ROOT / f"{layer}.py"
    for path in [module] if module.exists() else (ROOT / layer).rglob("*.py"):
        imported = internal_imports(path)
        assert imported <= ALLOWED[layer], f"{path.relative_to(ROOT)} imports {sorted(imported - ALLOWED[layer])}"


#: what an interface may not call itself: a schedule's condition is read through domain.schedules.assess,
#: with the configured timing, so that the command line, the API, the dashboard and the metrics agree
ASSESSED_ONLY = {"get_schedule_condition", "stored_start_times"}


@pytest.mark.parametrize("face", ["cli", "api"])
def test_interfaces_read_conditions_through_assess(face):
    for path in sorted((ROOT / face).rglob("*.py")):
        names = {alias.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.ImportFrom) for alias in node.names}
        assert not names & ASSESSED_ONLY, f"{path.relative_to(ROOT)} imports {sorted(names & ASSESSED_ONLY)}"
