"""The example systemd units under deploy/systemd run commands that exist, with options that exist."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from ostinato.cli import cli

UNITS = sorted((Path(__file__).parents[2] / "deploy" / "systemd").glob("*.service"))


def test_every_component_has_a_unit():
    names = {u.name for u in UNITS}
    assert names >= {"ostinato-runner.service", "ostinato-priority-runner.service", "ostinato-orchestrator.service",
                     "ostinato-scheduler.service", "ostinato-listener.service", "ostinato-journal-client.service",
                     "ostinato-worker@.service", "ostinato-run.service"}


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_a_units_command_is_an_ostinato_command(unit):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read(unit)
    service = parser["Service"]
    assert service["EnvironmentFile"] == "/etc/ostinato/ostinato.env"
    assert service["KillSignal"] == "SIGTERM" and service["Restart"] == "always"
    program, *args = shlex.split(service["ExecStart"].replace("%i", "load-git").replace("%H", "node-1"))
    assert program.endswith("/ostinato")
    result = CliRunner().invoke(cli, [*args, "--help"])
    assert result.exit_code == 0, result.output
    # every option the unit passes is one the command takes
    for option in (a for a in args if a.startswith("--")):
        assert option in result.output, f"{unit.name}: {option} is not an option of `ostinato {args[0]}`"
