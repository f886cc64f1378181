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
                  "disable_tasks", "respawn_tasks")
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
