"""How far a history of changes is from Poisson: two measures of burstiness, each 1 for a Poisson process.

Both compare each origin with itself, so that a mixture of slow and fast origins
(itself far from Poisson when pooled) reads as Poisson when each one is:

- **the spread of the gaps**: each origin's gaps between consecutive changes,
  divided by that origin's mean gap, pooled over the origins with at least
  :data:`MIN_GAPS` gaps; their coefficient of variation (standard deviation over
  mean) is 1 for exponential gaps, more when changes bunch up and quiet spells
  stretch;
- **changes soon after a change**: how much more often a change is followed by
  another within ``d`` than a moment taken at random in that origin's history
  is: Σ (gaps ≤ d) / Σ (gaps × pᵢ), where pᵢ, the share of origin i's time
  (from its first change to its last) that has a change within the next ``d``,
  is Σ min(d, gap) / Σ gap. It is reported for d = 1 day, and for d = a tenth of
  each origin's own mean gap (which weighs slow and fast origins alike).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

#: origins with fewer gaps than this are left out of the spread (their mean gap is too rough)
MIN_GAPS = 10


@dataclass(frozen=True)
class Burstiness:
    origins: int
    changes: int
    #: the coefficient of variation of gaps over each origin's mean gap (1: Poisson), over the origins it counts
    gap_cv: float | None
    gap_cv_origins: int
    #: how much more likely a change is within a day of a change than within a day of a random moment
    soon_after_1d: float | None
    #: the same within a tenth of each origin's mean gap
    soon_after_tenth: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def _soon_ratio(lengths: np.ndarray, owner: np.ndarray, within: np.ndarray) -> float | None:
    """Σ (gaps ≤ d) / Σ nᵢ pᵢ, ``within`` the d of each gap's origin."""
    count = owner.max() + 1 if owner.size else 0
    span = np.bincount(owner, weights=lengths, minlength=count)
    covered = np.bincount(owner, weights=np.minimum(within, lengths), minlength=count)
    number = np.bincount(owner, minlength=count)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = float(np.nansum(number * covered / span))
    return float((lengths <= within).sum()) / expected if expected > 0 else None


def measure(sources: np.ndarray, times: np.ndarray) -> Burstiness:
    """The burstiness of changes (``sources``: any labels, ``times`` in days)."""
    order = np.lexsort((times, sources))
    sources, times = sources[order], times[order]
    same = sources[1:] == sources[:-1]
    lengths = np.diff(times)[same]
    _, owner = np.unique(sources[1:][same], return_inverse=True)
    keep = lengths > 0  # the same instant twice is one change
    lengths, owner = lengths[keep], owner[keep]
    origins = int(np.unique(sources).size)
    if lengths.size == 0:
        return Burstiness(origins, int(times.size), None, 0, None, None)
    count = owner.max() + 1
    number = np.bincount(owner, minlength=count)
    mean_gap = np.bincount(owner, weights=lengths, minlength=count) / np.maximum(number, 1)
    enough = number[owner] >= MIN_GAPS
    scaled = (lengths / mean_gap[owner])[enough]
    cv = float(scaled.std() / scaled.mean()) if scaled.size else None
    return Burstiness(
        origins, int(times.size), cv, int((number >= MIN_GAPS).sum()),
        _soon_ratio(lengths, owner, np.ones_like(lengths)),
        _soon_ratio(lengths, owner, mean_gap[owner] / 10),
    )
