"""The simulator's standard workloads: how fast sources change, by name.

Each workload draws a change rate (changes per day) per source from a seeded
numpy generator, and says whether its loader can count changes (a git fetch
counts new commits; a web crawl only sees "changed or not"):

- ``git_lognormal``: rate ~ LogNormal(median 1/60 per day, σ = 2), clipped to [1/36500, 50];
- ``web_cho2000``: Cho & Garcia-Molina (VLDB 2000): mean change interval ≤ 1 day 23 %,
  1 day–1 week 15 %, 1 week–1 month 16 %, 1–4 months 16 %, longer 30 %, log-uniform
  within each bin; the shortest interval is :data:`WEB_SHORTEST_INTERVAL` (the
  paper's daily crawl could not see below a day; we take the same 50 changes a day
  as git's ceiling), the longest 10 years;
- ``git_mixture``: 50 % dormant (one change per 1–10 years, log-uniform), 40 % active
  (log-normal, median one change a month, σ = 1.5, clipped as git_lognormal), 10 % hot
  (0.3–30 changes a day, log-uniform);
- ``git_bursty``: git_lognormal's rates, but changes come in bursts: a self-exciting (Hawkes)
  process in which each change brings on average :data:`BURST_BRANCHING` more, within about
  :data:`BURST_DAYS` day each (an exponential kernel), so that a source's mean rate is the
  drawn one and its bursts start at a fifth of it (1 − 0.8). With the same seed, the same
  rates as git_lognormal. It is not Poisson: the rate oracle, which knows each mean rate, is
  no longer the optimum (see ``world``).

A month is 30 days, a year 365.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy (the ``sim`` extra) is imported where a world is drawn: the catalogue reads without it
    import numpy as np

YEAR = 365.0
MONTH = 30.0
#: git_lognormal's (and git_mixture's active part's) clip, changes per day
RATE_MIN, RATE_MAX = 1 / 36500, 50.0
#: web_cho2000's bins of mean change interval (days) and their shares
WEB_SHORTEST_INTERVAL = 1 / 50
WEB_BINS: tuple[tuple[float, float, float], ...] = (
    (WEB_SHORTEST_INTERVAL, 1.0, 0.23),
    (1.0, 7.0, 0.15),
    (7.0, MONTH, 0.16),
    (MONTH, 4 * MONTH, 0.16),
    (4 * MONTH, 10 * YEAR, 0.30),
)
#: git_bursty's self-excitation: changes each change brings on average, and their mean delay (days)
BURST_BRANCHING, BURST_DAYS = 0.8, 1.0
#: git_mixture's components: (name, share)
MIXTURE_SHARES: tuple[tuple[str, float], ...] = (("dormant", 0.5), ("active", 0.4), ("hot", 0.1))


def _log_uniform(rng: np.random.Generator, low: float, high: float, size: int) -> np.ndarray:
    import numpy as np

    return np.exp(rng.uniform(np.log(low), np.log(high), size))


def _lognormal(rng: np.random.Generator, median: float, sigma: float, size: int) -> np.ndarray:
    import numpy as np

    return np.clip(median * np.exp(sigma * rng.standard_normal(size)), RATE_MIN, RATE_MAX)


def git_lognormal_rates(rng: np.random.Generator, size: int) -> np.ndarray:
    return _lognormal(rng, 1 / 60, 2.0, size)


def web_cho2000_components(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Rates and the index of each source's bin in :data:`WEB_BINS`."""
    import numpy as np

    shares = np.array([share for _, _, share in WEB_BINS])
    bins = rng.choice(len(WEB_BINS), size=size, p=shares / shares.sum())
    lows = np.array([low for low, _, _ in WEB_BINS])[bins]
    highs = np.array([high for _, high, _ in WEB_BINS])[bins]
    intervals = np.exp(rng.uniform(np.log(lows), np.log(highs)))
    return 1 / intervals, bins


def git_mixture_components(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Rates and each source's component, an index in :data:`MIXTURE_SHARES`."""
    import numpy as np

    shares = np.array([share for _, share in MIXTURE_SHARES])
    parts = rng.choice(len(MIXTURE_SHARES), size=size, p=shares)
    rates = np.empty(size)
    dormant, active, hot = (parts == i for i in range(3))
    rates[dormant] = 1 / _log_uniform(rng, YEAR, 10 * YEAR, int(dormant.sum()))
    rates[active] = _lognormal(rng, 1 / MONTH, 1.5, int(active.sum()))
    rates[hot] = _log_uniform(rng, 0.3, 30.0, int(hot.sum()))
    return rates, parts


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    #: the loader can count the changes since the last archived snapshot (a git fetch can)
    counts_changes: bool
    sample: Callable[[np.random.Generator, int], np.ndarray]
    #: changes are self-exciting: (branching ratio, mean delay of an excited change in days); None: Poisson
    burst: tuple[float, float] | None = None

    def rates(self, seed: int, size: int) -> np.ndarray:
        """``size`` change rates (per day), the same for the same seed."""
        import numpy as np

        return self.sample(np.random.default_rng([seed, 0]), size)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("git_lognormal", "rate ~ LogNormal(median 1/60 a day, σ 2), clipped to [1/36500, 50] a day", True,
                 git_lognormal_rates),
        Workload("web_cho2000", "Cho & Garcia-Molina 2000: change interval ≤1d 23%, ≤1w 15%, ≤1mo 16%, ≤4mo 16%, "
                 "longer 30% (to 10 years)", False, lambda rng, size: web_cho2000_components(rng, size)[0]),
        Workload("git_mixture", "50% dormant (1 change per 1–10 years), 40% active (log-normal, median monthly, σ 1.5), "
                 "10% hot (0.3–30 changes a day)", True, lambda rng, size: git_mixture_components(rng, size)[0]),
        Workload("git_bursty", f"git_lognormal's mean rates, in bursts: each change brings {BURST_BRANCHING:g} more on "
                 f"average within about {BURST_DAYS:g} day (a Hawkes process)", True, git_lognormal_rates,
                 (BURST_BRANCHING, BURST_DAYS)),
    )
}
