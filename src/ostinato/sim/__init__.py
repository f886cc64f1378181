"""The simulator (see docs/design/beyond.md): Ostinato's real store, orchestrator and feedback loop, driven by a
simulated clock over a world of sources that change as Poisson (or self-exciting) processes, or over a
recorded history of changes, compared with idealised baselines, Cho & Garcia-Molina's oracle and the
hindsight bound.

- ``workloads``: change-rate distributions by name;
- ``world``: sources, births, deaths and their changes (numpy);
- ``trace``: recorded histories, their file format read and checked; ``trace_world``: one as a world;
- ``debian``: a trace from the installed packages' Debian changelogs;
- ``hindsight``: the bounds with the change times known; ``burstiness``: how far changes are from Poisson;
- ``oracle``: the optimal revisit frequencies for known rates (freshness and age, free or floored);
- ``policies``: the policies under test by name (store mixes and baselines);
- ``store_driver``: a store policy through the real store and orchestrator;
- ``baselines``: uniform, multiplicative and oracle schedules without a store;
- ``archive_tracker``: what the archive holds, and the exact freshness and age integrals;
- ``engine``: the step loop; ``report``: tables, JSON and plots;
- ``demo_forge``: ``ostinato demo``'s forge, kept fresh by the real embedded scheduler in accelerated time.

It needs numpy (the ``sim`` extra) and, for plots, matplotlib (``plots``); the names below are
imported on first use, so that ``ostinato.sim.workloads`` (the catalogue) reads without them.
"""

from ..extras import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "PolicyRun": "engine", "SimulationConfig": "engine", "run_policy": "engine", "run_simulation": "engine",
    "Baseline": "policies", "StorePolicy": "policies", "policies_under_test": "policies"}, "sim", "the simulator")

__all__ = ["Baseline", "PolicyRun", "SimulationConfig", "StorePolicy", "policies_under_test", "run_policy", "run_simulation"]
