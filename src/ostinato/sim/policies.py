"""The policies under test, by name: mixes of the store's policies, and idealised baselines.

A :class:`StorePolicy` runs through Ostinato's real code: the store, the
orchestrator's grab by ratio and the feedback loop. It names the store policies
and their ratios (every other policy of the visit type gets 0), settings over
the simulation's (see ``engine.SIMULATION_SETTINGS``), and world overrides (seed
000's feedback needs forges that report no ``last_update``).

A :class:`Baseline` is simulated directly, with no store: uniform revisiting,
the multiplicative interval rule, and the oracle (``baselines.py``).

:func:`policies_under_test` lists them all; a store policy that exists in
:class:`~ostinato.domain.visit_policies.VisitPolicy` at run time and is in
:data:`OPTIONAL_STORE_POLICIES` (``change_rate_optimal``) is included by itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..domain.orchestration import BY_LAG, NEVER_VISITED, WITHOUT_LAST_UPDATE
from ..domain.visit_policies import POLICY_NAMES

OLDEST_SCHEDULED = "oldest_scheduled_first"


@dataclass(frozen=True)
class StorePolicy:
    name: str
    description: str
    #: store policy → ratio (the visit type's other policies get 0)
    ratios: Mapping[str, float]
    #: settings over the simulation's, for this policy only
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: world overrides (``share_last_update``)
    world: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "store"


@dataclass(frozen=True)
class Baseline:
    name: str
    description: str
    #: uniform, multiplicative, oracle or model_oracle
    rule: str
    #: the oracle's objective: freshness or age
    objective: str | None = None
    #: the oracle obeys the maximum-gap floor
    floor: bool = False
    world: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "baseline"


PolicyUnderTest = StorePolicy | Baseline

#: store policies that a newer Ostinato has, tried by name at run time: name → (description, settings)
OPTIONAL_STORE_POLICIES: Mapping[str, tuple[str, Mapping[str, Any]]] = {
    "change_rate_optimal": ("store: change_rate_optimal alone (Ostinato's learned policy)", {}),
}


def _seed_policies() -> list[PolicyUnderTest]:
    return [
        StorePolicy("seed003_vcs_mix", f"store: the orchestrator's default git mix, {BY_LAG} 49 / {NEVER_VISITED} 49 / "
                    f"{WITHOUT_LAST_UPDATE} 2", {BY_LAG: 49, NEVER_VISITED: 49, WITHOUT_LAST_UPDATE: 2}),
        StorePolicy("seed003_package_mix", f"store: the orchestrator's default package mix, {BY_LAG} 50 / {NEVER_VISITED} 50 "
                    "(no policy for forges without last_update)", {BY_LAG: 50, NEVER_VISITED: 50}),
        StorePolicy(OLDEST_SCHEDULED, f"store: {OLDEST_SCHEDULED} alone (uniform revisiting through the store)",
                    {OLDEST_SCHEDULED: 1}),
        StorePolicy("seed000_feedback", f"store: {WITHOUT_LAST_UPDATE} alone, no forge reports last_update "
                    "(the multiplicative feedback, ×2 / ÷2)", {WITHOUT_LAST_UPDATE: 1},
                    world={"share_last_update": 0.0}),
    ]


BASELINES: tuple[Baseline, ...] = (
    Baseline("uniform", "direct: every source in turn, C a day (round robin)", "uniform"),
    Baseline("multiplicative", "direct: interval ×2 uneventful, ÷2 eventful; the C earliest targets each step",
             "multiplicative"),
    Baseline("oracle_freshness", "direct: Cho & Garcia-Molina's freshness optimum for the true rates", "oracle",
             "freshness"),
    Baseline("oracle_freshness_floor", "direct: the freshness optimum with the maximum-gap floor", "oracle",
             "freshness", floor=True),
    Baseline("oracle_age", "direct: the age optimum for the true rates", "oracle", "age"),
    Baseline("oracle_age_floor", "direct: the age optimum with the maximum-gap floor", "oracle", "age", floor=True),
    Baseline("model_oracle", "direct: the best revisits for each origin's burst model, fitted on its recorded "
             "changes (a trace's only), not knowing the change times", "model_oracle"),
)

#: baselines that need a recorded history (left out of a run without one unless named)
TRACE_ONLY = frozenset({"model_oracle"})


def policies_under_test() -> dict[str, PolicyUnderTest]:
    """Every policy the simulator knows now, by name, in the order of the report."""
    found: list[PolicyUnderTest] = _seed_policies()
    for name, (description, settings) in OPTIONAL_STORE_POLICIES.items():
        if name in POLICY_NAMES:
            found.append(StorePolicy(name, description, {name: 1}, settings))
    found.extend(BASELINES)
    return {p.name: p for p in found}
