"""What keeps the operator's actions safe, held by the code's shape: each is a store verb that names
its actor (so it writes its own audit event), and no code outside the stores saves a whole schedule
row it read earlier (the lost run end) except the import, whose rows come from a file."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from ostinato.store.interface import Store

SRC = Path(__file__).resolve().parents[2] / "src" / "ostinato"
#: the operator's actions and the verbs that make them, each with its audit event
OPERATOR_VERBS = ("pause_schedule", "resume_schedule", "update_schedule", "request_schedule_run", "delete_schedule",
                  "disable_tasks", "respawn_tasks", "retry_task_run", "add_task_type", "update_task_type", "claim_run_now",
                  "delete_task_type", "create_api_token", "revoke_api_token")
#: the verbs that change the same things for programs, unaudited, and the only places that call them: the swh
#: protocol's face (its clients are programs), the declarations of code, the simulators
PROGRAM_VERBS = {
    "set_task_status": {"integrations/swh/tasks.py"},
    "create_task_type": {"integrations/swh/tasks.py", "declare.py", "sim/demo_forge.py", "sim/store_driver.py",
                         "sim/fleet_engine.py"},
}
#: where a whole schedule row is saved as given: the import (``schedule import --replace``) restores rows
SAVES_ALLOWED = {"cli/schedules.py"}


def test_every_operator_verb_names_its_actor_by_keyword():
    for name in OPERATOR_VERBS:
        parameter = inspect.signature(getattr(Store, name)).parameters.get("actor")
        assert parameter is not None and parameter.kind is inspect.Parameter.KEYWORD_ONLY, name
        assert parameter.default is inspect.Parameter.empty, f"{name}: the actor has no default"


def test_no_whole_schedule_row_is_saved_back_outside_the_import():
    callers = set()
    for path in SRC.rglob("*.py"):
        if path.is_relative_to(SRC / "store"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "save_schedule":
                callers.add(str(path.relative_to(SRC)))
            if isinstance(node, ast.Attribute) and node.attr == "save_schedule" and not isinstance(node.ctx, ast.Store):
                callers.add(str(path.relative_to(SRC)))
    assert callers == SAVES_ALLOWED


def calls_of(verb: str) -> set[str]:
    """The files outside the stores that call ``verb`` on something."""
    callers = set()
    for path in SRC.rglob("*.py"):
        if path.is_relative_to(SRC / "store"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == verb:
                callers.add(str(path.relative_to(SRC)))
    return callers


def test_operator_paths_change_tasks_and_types_only_through_audited_verbs():
    for verb, allowed in PROGRAM_VERBS.items():
        assert calls_of(verb) <= allowed, verb


def test_every_update_of_a_schedule_row_compares_its_owner():
    """Each statement that rewrites a schedule row checks, in its own WHERE, the owner its writer saw (a
    compare-and-set on the run's tag), so that no run's start or end committed meanwhile is overwritten."""
    statements = 0
    for path in (SRC / "store").rglob("*.sql"):
        for query in path.read_text().split("-- name: ")[1:]:
            name, body = query.split("\n", 1)
            for update in body.split("UPDATE schedule ")[1:]:
                where = update.split("WHERE", 1)[1].split(";", 1)[0] if "WHERE" in update.split(";", 1)[0] else ""
                assert "owner_tag" in where, f"{path.name}: {name} rewrites a schedule row without comparing its owner"
                statements += 1
    assert statements >= 10  # the five statements, in both dialects
