"""Imports point one way: the interfaces (cli, api, the swh face) → the services and the Celery and
Kafka integrations → execution, store → domain; the domain imports nothing of ours.

Every module of ``src/ostinato`` belongs to a layer named below (a package, a sub-package of
``integrations``, or a top-level module), and imports only the layers its entry allows.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ostinato

ROOT = Path(ostinato.__file__).parent
ALLOWED = {
    # the rules, and the modules every layer reads
    "domain": {"domain"},
    "extras": {"domain"},
    "config": {"domain"},
    "store": {"domain", "store", "extras"},
    # where dispatched work runs in this process
    "execution": {"domain", "execution"},
    "services": {"domain", "store", "execution", "services", "config", "extras"},
    # Celery and Kafka: executors, workers and listeners built on the services' parts (metrics, leases)
    "integrations.celery": {"domain", "store", "execution", "services", "config", "integrations.celery"},
    "integrations.kafka": {"domain", "store", "services", "integrations.kafka"},
    # the package itself (its docstring)
    "integrations": set(),
    "examples": {"domain", "execution", "store"},
    "remote": {"domain", "store", "remote"},
    "sim": {"domain", "store", "execution", "services", "config", "sim", "extras"},
    # the interfaces; the swh RPC face shares the API's token rules
    "api": {"domain", "store", "services", "execution", "config", "api", "remote", "extras"},
    "integrations.swh": {"domain", "store", "integrations.swh", "api"},
    "cli": {"domain", "store", "execution", "services", "integrations.celery", "integrations.kafka", "integrations.swh",
            "config", "extras", "api", "remote", "sim", "examples", "cli"},
    # `celery -A ostinato.celery`: a Celery worker's app, built from the settings like `ostinato worker`
    "celery": {"domain", "config", "integrations.celery", "cli"},
    # schedules declared in Python (``ostinato.Schedules``): applied to the store, run by the scheduler
    "declare": {"domain", "store", "execution", "services", "config"},
    "__init__": {"domain", "store", "declare"},
    "__main__": {"cli"},
}
#: what one module may import beyond its layer, only lazily (in a function, or for type checking):
#: the one-process scheduler starts the executor and the journal client the settings name, so that
#: Celery and Kafka are imported only when they are used
LAZY = {
    "services/embedded_scheduler.py": {"integrations.celery", "integrations.kafka"},
}


def layer_of(parts: tuple[str, ...]) -> str:
    """The layer of a module or import target, given its path parts under ``ostinato``."""
    if parts[0] == "integrations" and len(parts) > 1 and not parts[1].endswith(".py"):
        return f"integrations.{parts[1]}"
    return parts[0].removesuffix(".py")


def imports_of(path: Path, root: Path = ROOT) -> dict[str, bool]:
    """The layers a module imports, each with whether every import of it is lazy (in a function, or
    under ``if TYPE_CHECKING``)."""
    package = path.relative_to(root).parts[:-1]
    found: dict[str, bool] = {}

    def add(target: list[str], lazy: bool) -> None:
        if target:
            layer = layer_of(tuple(target))
            found[layer] = found.get(layer, True) and lazy

    def visit(node: ast.AST, lazy: bool) -> None:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                for name in [node.module] if node.module else [alias.name for alias in node.names]:
                    add(base + name.split("."), lazy)
            elif node.module and node.module.startswith("ostinato."):
                add(node.module.split(".")[1:], lazy)
            elif node.module == "ostinato":
                for alias in node.names:
                    add([alias.name], lazy)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ostinato."):
                    add(alias.name.split(".")[1:], lazy)
        lazy = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or (
            isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        for child in ast.iter_child_nodes(node):
            visit(child, lazy)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def modules() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_every_module_belongs_to_a_layer():
    layers = {layer_of(path.relative_to(ROOT).parts) for path in modules()}
    assert layers == set(ALLOWED)


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_what_it_may(layer):
    checked = 0
    for path in modules():
        relative = path.relative_to(ROOT)
        if layer_of(relative.parts) != layer:
            continue
        checked += 1
        lazily = LAZY.get(relative.as_posix(), set())
        for imported, lazy in imports_of(path).items():
            allowed = imported in ALLOWED[layer] or (lazy and imported in lazily)
            assert allowed, f"{relative} imports {imported}" + (" at its top" if imported in lazily else "")
    assert checked


def test_the_check_tells_lazy_imports_from_eager_ones(tmp_path):
    """The check itself: an import of Celery's code at the top of the one-process scheduler is not lazy."""
    module = tmp_path / "services" / "embedded_scheduler.py"
    module.parent.mkdir()
    module.write_text("from typing import TYPE_CHECKING\nfrom ..integrations.celery.app import make_celery_app\n"
                      "if TYPE_CHECKING:\n    from ..integrations.kafka.journal_client import JournalClient\n"
                      "def f():\n    from .. import extras\n    from . import runner\n"
                      "from ostinato.domain import clock\n")
    assert imports_of(module, tmp_path) == {"integrations.celery": False, "integrations.kafka": True, "extras": True,
                                            "services": True, "domain": False}


#: what an interface may not call itself: a schedule's condition is read through domain.schedules.assess,
#: with the configured timing, so that the command line, the API, the dashboard and the metrics agree
ASSESSED_ONLY = {"get_schedule_condition", "stored_start_times"}


@pytest.mark.parametrize("face", ["cli", "api"])
def test_interfaces_read_conditions_through_assess(face):
    for path in sorted((ROOT / face).rglob("*.py")):
        names = {alias.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.ImportFrom) for alias in node.names}
        assert not names & ASSESSED_ONLY, f"{path.relative_to(ROOT)} imports {sorted(names & ASSESSED_ONLY)}"
