"""The README's first command as a newcomer meets it, and the package as a user installs it.

Each test copies the project as a fresh clone would hold it (the files git tracks, plus new ones
not ignored) and installs into virtualenvs of its own, from the package index, with only the
runtime dependencies: none of the test extras, so an import that only they provide fails here.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
#: modules that only the optional extras bring: none may be importable after `make run`
EXTRAS_ONLY = ("psycopg", "celery", "confluent_kafka", "fastapi", "uvicorn", "httpx", "matplotlib", "ephem", "pytest")
#: commands the CLI must have (a floor: every command it lists is checked, these must be among them)
COMMANDS = ("api", "calendar", "db", "demo", "example", "import", "journal-client", "lister", "listener", "metrics",
            "orchestrator", "origin", "politeness", "run", "runner", "schedule", "scheduler", "simulate", "swh-rpc",
            "task", "task-run", "task-type", "token", "trace", "visit-status", "worker")

#: run by the environment's own Python: every command and subcommand the CLI lists, asked for --help
#: in one process; prints the paths checked, and each failure with its output
HELP_WALK = """
import sys
import click
from click.testing import CliRunner
from ostinato.cli import cli as main

runner, failed, checked = CliRunner(), [], []

def walk(command, path):
    result = runner.invoke(main, [*path, "--help"])
    checked.append(" ".join(path))
    if result.exit_code != 0 or "Usage:" not in result.output:
        failed.append((" ".join(path), result.exit_code, result.output[-800:] + repr(result.exception)))
    if isinstance(command, click.Group):
        context = click.Context(command, info_name=path[-1] if path else "ostinato")
        for name in command.list_commands(context):
            walk(command.get_command(context, name), [*path, name])

walk(main, [])
print("\\n".join(checked))
for path, code, output in failed:
    print(f"FAILED {path!r} exit {code}: {output}", file=sys.stderr)
sys.exit(1 if failed else 0)
"""


def fresh_clone(target: Path) -> Path:
    """The project's files as a fresh clone of them would be, in ``target``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def run(args: list[str], cwd: Path, timeout: float = 900, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "OSTINATO_"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix))
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kwargs)


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"{result.args} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def importable(python: Path, module: str, cwd: Path) -> bool:
    return run([str(python), "-c", f"import {module}"], cwd).returncode == 0


@pytest.mark.long
def test_make_run_works_in_a_fresh_clone_even_after_an_interrupted_install(tmp_path):
    clone = fresh_clone(tmp_path / "ostinato")
    env_python = clone / ".venv" / "bin" / "python"
    # a newcomer's first `make run`, interrupted (Ctrl-C) while the virtualenv is being made
    first = subprocess.Popen(["make", "run", "DEMO_ARGS=--seconds 5"], cwd=clone, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: (clone / ".venv" / "bin" / "pip").exists() or first.poll() is not None, timeout=300,
               interval=0.05, what="make run to be making the virtualenv")
    os.killpg(first.pid, signal.SIGINT)
    first.wait(timeout=120)
    # … then run again: it must finish the install and run the demo
    result = ok(run(["make", "run", "DEMO_ARGS=--seconds 5 --sources 500"], clone))
    assert "Summary" in result.stdout, result.stdout[-2000:]
    assert "of sources fresh" in result.stdout
    assert (clone / ".ostinato" / "demo.db").exists()
    # only the runtime dependencies are there
    assert importable(env_python, "numpy", clone)
    assert [m for m in EXTRAS_ONLY if importable(env_python, m, clone)] == []
    ostinato = str(clone / ".venv" / "bin" / "ostinato")
    walked = ok(run([str(env_python), "-c", HELP_WALK], clone)).stdout.splitlines()
    assert set(COMMANDS) <= set(walked), sorted(set(COMMANDS) - set(walked))
    assert "politeness set" in walked and len(walked) > 2 * len(COMMANDS)  # the subcommands too
    # a command whose extra is missing says which one to install, in one line
    missing = run([ostinato, "api", "serve"], clone)
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        "error: ostinato api serve needs the 'api' extra (fastapi is not installed): pip install 'ostinato[api]'"]
    pg = run([ostinato, "--db", "postgresql://localhost/x", "task", "list"], clone)
    assert pg.returncode == 1 and "Traceback" not in pg.stderr
    assert "pip install 'ostinato[postgresql]'" in pg.stderr and len(pg.stderr.strip().splitlines()) == 1


@pytest.mark.long
def test_the_built_wheel_installs_and_runs_in_a_clean_virtualenv(tmp_path):
    clone = fresh_clone(tmp_path / "ostinato")
    dist = tmp_path / "dist"
    ok(run([sys.executable, "-m", "build", "--outdir", str(dist), str(clone)], clone))
    wheels = sorted(dist.glob("ostinato-*.whl"))
    assert len(wheels) == 1 and len(list(dist.glob("ostinato-*.tar.gz"))) == 1
    ok(run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())], clone))
    # the package's own code and data, and not the throwaway servers of the tests (test_servers/)
    files = zipfile.ZipFile(wheels[0]).namelist()
    assert "ostinato/integrations/celery/app.py" in files and "ostinato/py.typed" in files
    assert [f for f in files if f.startswith(("test_servers/", "ostinato/testing/", "tests/", "bench/"))] == []
    # every SQL file the store reads (named queries, canonical schemas, migrations) ships with it
    sql = sorted(str(p.relative_to(ROOT / "src")) for p in (ROOT / "src" / "ostinato").rglob("*.sql"))
    assert [f for f in sql if f not in files] == []

    venv = tmp_path / "venv"
    ok(run([sys.executable, "-m", "venv", str(venv)], tmp_path))
    pip, ostinato = str(venv / "bin" / "pip"), str(venv / "bin" / "ostinato")
    ok(run([pip, "install", "-q", str(wheels[0])], tmp_path))
    assert [m for m in (*EXTRAS_ONLY, "numpy") if importable(venv / "bin" / "python", m, tmp_path)] == []
    work = tmp_path / "work"
    work.mkdir()
    assert "Commands:" in ok(run([ostinato, "--help"], work)).stdout
    assert "version" in ok(run([ostinato, "--db", "sqlite:///first.db", "db", "init"], work)).stdout
    ok(run([ostinato, "--db", "sqlite:///first.db", "task-type", "list"], work))
    # the demo needs the simulator's extra: one line says so; with it, the demo runs
    without = run([ostinato, "demo", "--seconds", "5"], work)
    assert without.returncode == 1 and without.stderr.strip().splitlines() == [
        "error: ostinato demo needs the 'sim' extra (numpy is not installed): pip install 'ostinato[sim]'"]
    ok(run([pip, "install", "-q", f"{wheels[0]}[sim]"], tmp_path))
    demo = ok(run([ostinato, "demo", "--seconds", "5", "--sources", "500"], work))
    assert "Summary" in demo.stdout


def test_the_extras_of_the_package_are_the_ones_the_code_checks_for():
    """pyproject's extras and the modules ``ostinato.extras`` checks name the same things."""
    import tomllib

    from ostinato.extras import EXTRAS, installed

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS) == set(declared) - {"all", "test", "docs"}
    assert declared["all"] == [f"ostinato[{','.join(name for name in declared if name in EXTRAS)}]"]
    assert [name for name in EXTRAS if not installed(name)] == []  # the test install has them all


def test_an_extra_already_imported_counts_as_installed():
    """kombu, once imported, replaces its module by one whose ``__spec__`` is None."""
    import kombu  # noqa: F401 - the import is the point: kombu replaces its module once imported

    from ostinato.extras import installed

    assert installed("celery")


def test_a_missing_extra_is_one_line_naming_it(monkeypatch):
    from ostinato import extras
    from ostinato.domain.errors import MissingExtra

    monkeypatch.setitem(extras.EXTRAS, "gadgets", ("json", "ostinato_no_such_module"))
    with pytest.raises(MissingExtra) as caught:
        extras.require("gadgets", "ostinato gadget")
    assert str(caught.value) == ("ostinato gadget needs the 'gadgets' extra (ostinato_no_such_module is not installed): "
                                 "pip install 'ostinato[gadgets]'")
    assert isinstance(caught.value, ImportError)
