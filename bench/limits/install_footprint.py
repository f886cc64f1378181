"""What an install costs: the size of each install form's packages and the time of ``ostinato --help``.

Each form is installed from the working tree into a new virtualenv (not editable), from the
package index: the core (``pip install ostinato``), the README's first command (``make run``: the
core and ``sim``) and everything (``all``). With ``--before REF``, the commit REF is installed the
same way (its own dependencies, whatever they were) and measured in the same run, so the ratio
is taken on one machine at one time.

    .venv/bin/python bench/limits/install_footprint.py --before 47b5c35 --before-add httpx

Sizes are those of ``site-packages`` less a new virtualenv's own (pip), in MiB; times are the
median of ``--runs`` runs of ``ostinato --help`` (the whole process: interpreter, imports, click).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORMS = {"core": "", "make run (core + sim)": "[sim]", "all": "[all]"}


def site_size(venv: Path) -> int:
    site = next((venv / "lib").glob("python3*/site-packages"))
    return sum(f.stat().st_size for f in site.rglob("*") if f.is_file() and not f.is_symlink())


def install(source: str, venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    result = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", source], capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"pip install {source} failed:\n{result.stderr}")


def help_seconds(venv: Path, runs: int) -> float | None:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run([str(venv / "bin" / "ostinato"), "--help"], capture_output=True, cwd=venv)
        times.append(time.perf_counter() - started)
        if result.returncode:
            return None
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a commit to measure beside the working tree (installed with its own dependencies)")
    parser.add_argument("--before-add", nargs="*", default=[], metavar="PACKAGE",
                        help="packages the commit needed but did not declare (47b5c35: httpx), added after its size is taken")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ostinato-footprint-") as tmp:
        base = Path(tmp)
        empty = base / "empty"
        subprocess.run([sys.executable, "-m", "venv", str(empty)], check=True)
        floor = site_size(empty)
        rows = []
        if args.before:
            tree = base / "before-tree"
            tree.mkdir()
            archive = subprocess.run(["git", "archive", args.before], cwd=ROOT, check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            venv = base / "before"
            install(str(tree), venv)
            rows.append((f"{args.before} (before)", venv))
        for name, extra in FORMS.items():
            venv = base / name.split()[0]
            install(f"{ROOT}{extra}", venv)
            rows.append((name, venv))
        print(f"{'install':<28} {'MiB':>7} {'--help, s':>10}")
        figures = {}
        for name, venv in rows:
            size = (site_size(venv) - floor) / 2**20
            seconds = help_seconds(venv, args.runs)
            if name.endswith("(before)") and seconds is None and args.before_add:
                print(f"{name}: ostinato --help fails; timed with {', '.join(args.before_add)} added")
                subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *args.before_add], check=True,
                               capture_output=True)
                seconds = help_seconds(venv, args.runs)
            figures[name] = (size, seconds)
            shown = "fails" if seconds is None else f"{seconds:.3f}"
            print(f"{name:<28} {size:>7.1f} {shown:>10}")
        if args.before:
            before_size, before_time = figures[f"{args.before} (before)"]
            for name in FORMS:
                size, seconds = figures[name]
                ratio = f", --help {seconds / before_time:.2f}×" if seconds and before_time else ""
                print(f"{name}: {size / before_size:.2f}× the size of {args.before}{ratio}")


if __name__ == "__main__":
    os.environ.pop("VIRTUAL_ENV", None)
    main()
