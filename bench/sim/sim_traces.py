"""The learned policy on real git histories, by what a visit sees: every figure of the bursty-change page.

For each variant of a trace directory (every commit, first parent), each capacity (a share of
the last year's changes a day), each replica count, each share of origins whose lister reports
``last_update``, and each seed, it runs ``ostinato simulate`` (a year measured after a year of
warm-up, step 1 h, origins kept to the end) three times, one per level of information a visit
has (bits, counts, times), with ``change_rate_optimal``; and once more for the direct baselines,
which see no statuses (uniform, the rate oracles, the model oracle) with the hindsight bound.
Each figure is the mean over the seeds, with two standard errors.

    PYTHONPATH=src .venv/bin/python bench/sim/sim_traces.py --traces ../shared/traces --seeds 5 \\
        --json-out bench/results/sim-traces-<date>.json

``--copies 20`` runs the ×20 replicas (capacity ×20 too); ``--jobs`` runs simulations at once.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

VARIANTS = {"every commit": "git-histories.jsonl", "first parent": "git-histories-first-parent.jsonl"}
CAPACITIES = {"1/7": 7, "1/3": 3}
LEVELS = ("bits", "counts", "times")
STORE = "change_rate_optimal"
DIRECT = ("uniform", "oracle_freshness", "oracle_freshness_floor", "oracle_age", "oracle_age_floor", "model_oracle")


def last_year_rate(path: Path) -> float:
    """Changes a day over the trace's last year (same-second changes once, as the simulator reads them)."""
    per_origin = []
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            per_origin.append({datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() for t in record["changes"]})
    end = max(max(times) for times in per_origin)
    return sum(sum(1 for t in times if t > end - 365 * 86_400) for times in per_origin) / 365


def simulate(trace: Path, capacity: float, copies: int, seed: int, share: float, policies: list[str],
             extra: list[str], cache: Path | None = None) -> dict:
    """One ``ostinato simulate`` report; with ``cache``, kept there under its command line's digest (and
    read from there when the same command ran before: a long matrix survives an interruption)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report.json"
        command = [sys.executable, "-m", "ostinato", "simulate", "--trace", str(trace), "--trace-copies", str(copies),
                   "--no-trace-deaths", "--days", "365", "--warmup", "365", "--step", "1h",
                   "--capacity", f"{capacity:.6g}", "--seed", str(seed), "--share-last-update", f"{share:g}",
                   "--out", str(out), *[arg for name in policies for arg in ("--policy", name)], *extra]
        kept = cache / (hashlib.sha256(json.dumps(command[1:]).encode()).hexdigest()[:24] + ".json") if cache else None
        if kept is not None and kept.exists():
            return json.loads(kept.read_text())
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if kept is not None:
            kept.write_text(out.read_text())
        return json.loads(out.read_text())


def mean_and_error(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, float("nan")
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, 2 * math.sqrt(var / len(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=Path, required=True, help="the folder of git-histories*.jsonl")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--shares", default="0,0.5", help="shares of origins whose lister reports last_update")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--capacities", default=",".join(CAPACITIES))
    parser.add_argument("--levels", default=",".join(LEVELS), help="what the store policy's visits see")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--cache", type=Path, help="keep each run's report here, and reuse those of the same command "
                        "(the code is not part of the key: empty it after a change)")
    parser.add_argument("--direct-from", type=Path,
                        help="take the direct baselines and the bound from this earlier --json-out of the same setup "
                             "(they see no statuses, so a change to the store policy leaves them as they were)")
    args = parser.parse_args()
    earlier = json.loads(args.direct_from.read_text()) if args.direct_from else None
    if earlier is not None and (earlier["copies"] != args.copies or earlier["seeds"] < args.seeds):
        parser.error(f"--direct-from: {args.direct_from} has copies {earlier['copies']} and seeds {earlier['seeds']}, "
                     f"this run {args.copies} and {args.seeds}")
    shares = [float(s) for s in args.shares.split(",")]
    jobs = []
    for variant in args.variants.split(","):
        trace = args.traces / VARIANTS[variant]
        rate = last_year_rate(trace)
        for label in args.capacities.split(","):
            capacity = rate / CAPACITIES[label] * args.copies
            for share in shares:
                for seed in range(args.seeds):
                    key = (variant, label, share)
                    for level in args.levels.split(","):
                        jobs.append((key, level, seed, trace, capacity, [STORE], ["--visit-information", level,
                                                                                  "--no-bound"]))
            if earlier is None:  # the direct baselines see no statuses, nor the share: once for every share
                for seed in range(args.seeds):
                    jobs.append(((variant, label, shares[0]), "direct", seed, trace, capacity, list(DIRECT), []))
    results: dict = {}

    def run(job):
        key, level, seed, trace, capacity, policies, extra = job
        report = simulate(trace, capacity, args.copies, seed, key[2], policies, extra, args.cache)
        return job, report

    with ThreadPoolExecutor(args.jobs) as pool:
        for (key, level, seed, _, capacity, _, _), report in pool.map(run, jobs):
            cell = results.setdefault(key, {"capacity": capacity, "runs": {}})
            for policy in report["policies"]:
                name = f"{policy['name']} ({level})" if level != "direct" else policy["name"]
                entry = cell["runs"].setdefault(name, {"freshness": [], "mean_age_days": []})
                entry["freshness"].append(policy["freshness"])
                entry["mean_age_days"].append(policy["mean_age_days"])
            if report.get("hindsight"):
                entry = cell["runs"].setdefault("hindsight bound", {"freshness": [], "mean_age_days": []})
                entry["freshness"].append(report["hindsight"]["freshness"])
                entry["mean_age_days"].append(report["hindsight"]["mean_age_days"])
            print(f"{key} {level} seed {seed} done", file=sys.stderr, flush=True)
    for (variant, label, _share), cell in list(results.items()):
        direct = {name: entry for name, entry in cell["runs"].items() if not name.startswith(STORE)}
        if earlier is not None:
            direct = {row["policy"]: by_seed(row, args.seeds)
                      for row in earlier["rows"] if (row["variant"], row["capacity"]) == (variant, label)
                      and row["share_last_update"] == earlier_share(earlier, variant, label)
                      and not row["policy"].startswith(STORE)}
            if not direct:
                raise SystemExit(f"--direct-from: {args.direct_from} has no direct rows for {variant}, {label}")
        for other in shares:
            results.setdefault((variant, label, other), {"capacity": cell["capacity"], "runs": {}})["runs"].update(direct)
    table = []
    for (variant, label, share), cell in results.items():
        print(f"\n{variant}, capacity {label} ({cell['capacity']:.4g} visits a day), ×{args.copies}, "
              f"last_update for {share:.0%}")
        for name, entry in cell["runs"].items():
            if entry.get("freshness") is None:  # an earlier run's row that kept no figure by seed
                row = entry["row"]
                f, fe, a, ae = 100 * row["freshness"], 100 * row["freshness_2se"], row["mean_age_days"], row["mean_age_2se"]
            else:
                f, fe = mean_and_error([100 * v for v in entry["freshness"]])
                a, ae = mean_and_error(entry["mean_age_days"])
            print(f"  {name:36s} {f:6.2f} % ± {fe:4.2f}   mean age {a:7.3f} d ± {ae:5.3f}")
            table.append({"variant": variant, "capacity": label, "visits_per_day": cell["capacity"],
                          "copies": args.copies, "share_last_update": share, "policy": name,
                          "freshness": f / 100, "freshness_2se": fe / 100, "mean_age_days": a, "mean_age_2se": ae,
                          "seeds": len(entry["freshness"]) if entry.get("freshness") else entry["row"]["seeds"],
                          "freshness_by_seed": entry.get("freshness"),
                          "mean_age_by_seed": entry.get("mean_age_days")})
    if args.json_out:
        args.json_out.write_text(json.dumps({"seeds": args.seeds, "copies": args.copies, "rows": table,
                                             "direct_from": str(args.direct_from) if args.direct_from else None},
                                            indent=1) + "\n")


def by_seed(row: dict, seeds: int) -> dict:
    """An earlier run's row as this run's entry: its first ``seeds`` figures, or (where it kept none by seed,
    and ran as many seeds) its mean and error as they are."""
    if row.get("freshness_by_seed"):
        return {"freshness": row["freshness_by_seed"][:seeds], "mean_age_days": row["mean_age_by_seed"][:seeds]}
    if row["seeds"] != seeds:
        raise SystemExit(f"--direct-from: {row['policy']} kept no figure by seed, over {row['seeds']} seeds, not {seeds}")
    return {"freshness": None, "mean_age_days": None, "row": row}


def earlier_share(earlier: dict, variant: str, label: str) -> float:
    """The first share of an earlier run's rows for (variant, capacity): its direct rows are the same for every share."""
    return min(row["share_last_update"] for row in earlier["rows"] if (row["variant"], row["capacity"]) == (variant, label))


if __name__ == "__main__":
    main()
