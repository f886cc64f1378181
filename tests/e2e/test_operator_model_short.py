"""The operator model's short form (bench/sim/operator_model.py, whose long form runs 100,000 operations a
store): four threads, each its own connection, random verbs with a random yield before every statement,
checked against the model at every round's barrier, on SQLite and PostgreSQL. The pause and resume of
before (read, then save the whole row, the event apart) fail the same checks: the model can see what it
guards against."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.sim.operator_model import WEIGHTS, opener, run_store
from bench.sim.operator_model_world import LEGACY, VERBS
from ostinato.store.sqlite import SQLiteStore

#: the audited actions, each of which must have been done (not only refused) in a short run
AUDITED = ("schedule.pause", "schedule.resume", "schedule.update", "schedule.run-now", "task.disable",
           "task.enable", "task.retry")


def sqlite_opener(tmp_path: Path):
    path = tmp_path / "model.db"
    SQLiteStore(path).init_schema()
    return opener("sqlite", str(path))


def assert_kept(figures: dict) -> None:
    assert figures["violations"] == 0, "\n".join(figures["first_violations"])
    assert set(figures["by_verb"]) == set(WEIGHTS)  # every verb was drawn
    assert all(figures["audited"].get(action, 0) > 0 for action in AUDITED), figures  # and each action done


@pytest.mark.parametrize("seed", [1, 2])
def test_sqlite_keeps_every_run_end_one_copy_and_every_event(tmp_path, seed):
    figures = run_store(sqlite_opener(tmp_path), operations=1600, threads=4, per_round=400, seed=seed, verbs=VERBS)
    assert_kept(figures)


def test_postgresql_keeps_every_run_end_one_copy_and_every_event(pg_dsn):
    figures = run_store(opener("postgresql", pg_dsn), operations=2400, threads=4, per_round=400, seed=3,
                        verbs=VERBS)
    assert_kept(figures)


def test_the_read_then_save_pause_and_resume_of_before_are_caught(tmp_path):
    legacy = dataclasses.replace(VERBS, pause=LEGACY.pause, resume=LEGACY.resume)
    figures = run_store(sqlite_opener(tmp_path), operations=16_000, threads=4, per_round=400, seed=4,
                        verbs=legacy, stop_at_first=True)
    assert figures["violations"] > 0, figures


def test_the_enable_that_ignored_runs_in_flight_is_caught(pg_dsn):
    legacy = dataclasses.replace(VERBS, enable=LEGACY.enable)
    figures = run_store(opener("postgresql", pg_dsn), operations=16_000, threads=4, per_round=400, seed=5,
                        verbs=legacy, stop_at_first=True)
    assert any("two running copies" in v or "two runs in flight" in v for v in figures["first_violations"]), figures
