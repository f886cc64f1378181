"""`ostinato demo`: the forge's bookkeeping (what is archived, since when a source is stale) and a
short run of the command itself, the real scheduler on a SQLite file in accelerated time."""

from __future__ import annotations

import math
import re
from datetime import timedelta

import numpy as np
import pytest
from click.testing import CliRunner

from ostinato.cli import cli
from ostinato.sim.demo_forge import START, AcceleratedClock, DemoForge
from ostinato.sim.world import World, WorldConfig


class FakeMonotonic:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_accelerated_clock_runs_days_per_second():
    tick = FakeMonotonic()
    clock = AcceleratedClock(2.0, monotonic=tick)
    assert clock.now() == START and clock.days() == 0
    tick.now += 1.5
    assert clock.days() == pytest.approx(3.0)
    assert clock.now() == START + timedelta(days=3)


def test_the_forge_knows_what_is_archived_and_since_when_a_source_is_stale():
    tick = FakeMonotonic()
    clock = AcceleratedClock(1.0, monotonic=tick)
    world = World(WorldConfig("git_mixture", 200, seed=3, horizon=100.0))
    forge = DemoForge(world, clock, visit_seconds=0.0)
    assert forge.figures().freshness == 0.0  # nothing archived: every source stale since its birth
    for i in range(200):
        result = forge.load(f"https://forge.example/{i}")
        assert result["status"] == "full" and result["changes"] is None  # a first visit counts nothing
    assert forge.figures().freshness == 1.0 and forge.figures().mean_age_days == 0.0
    tick.now += 30  # 30 days later
    figures = forge.figures()
    changed = world.version > 0
    assert figures.freshness == pytest.approx(1 - changed.mean())
    # a stale source's age runs from its first change since the visit
    first_changes = forge.stale_since[changed]
    assert np.all(first_changes <= world.last_change[changed]) and np.all(first_changes > 0)
    assert figures.mean_age_days == pytest.approx(np.sum(30.0 - first_changes) / 200)
    hot = int(np.argmax(world.version))
    again = forge.load(f"https://forge.example/{hot}")
    assert again["changes"] == world.version[hot]  # git_mixture's loader counts the changes since
    assert math.isnan(forge.stale_since[hot])


def test_ostinato_demo_runs_the_real_scheduler_and_sums_up(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["demo", "--sources", "300", "--seconds", "6", "--days-per-second", "5"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # the console wraps the summary at its width
    summary = re.search(r"([\d.]+)% of sources fresh, mean age ([\d.]+) days, ([\d,]+) visits", text)
    assert summary, result.output
    assert re.search(r"300 sources at the start and [\d,]+ live by the end", text), result.output
    fresh, visits = float(summary.group(1)), int(summary.group(3).replace(",", ""))
    assert visits > 100 and fresh > 20.0  # the scheduler kept visiting, and it shows on the forge
    assert (tmp_path / ".ostinato" / "demo.db").exists()
    # a second run replaces its own file, and the demo refuses to replace anything else
    assert CliRunner().invoke(cli, ["demo", "--sources", "100", "--seconds", "5"]).exit_code == 0
    (tmp_path / "mine.db").write_text("precious")
    refused = CliRunner().invoke(cli, ["demo", "--demo-db", "mine.db"])
    assert refused.exit_code == 2 and "replaces its file" in refused.output
    assert (tmp_path / "mine.db").read_text() == "precious"
