"""The oracle: Cho & Garcia-Molina's optimal revisit frequencies for *known* change rates.

A source changing as a Poisson process of rate λ (changes per day) and visited at
fixed intervals 1/f (f visits per day) has, averaged over time,

- freshness ``F(λ, f) = (f/λ)(1 − e^{−λ/f})`` (the share of time its archived copy is current);
- age ``A(λ, f) = 1/(2f) − 1/λ + (f/λ²)(1 − e^{−λ/f})`` (time since its first unarchived
  change, 0 while fresh).

With ``x = λ/f``: ``F = (1 − e^{−x})/x`` and ``A = (1/f)(1/2 − 1/x + (1 − e^{−x})/x²)``.

**Freshness.** Maximise Σ F(λᵢ, fᵢ) subject to Σ fᵢ = C, fᵢ ≥ 0 (F is concave in f).
``∂F/∂f = (1/λ)(1 − e^{−x}) − e^{−x}/f = (1/λ)(1 − (1 + x)e^{−x})``, so the Lagrange
condition ``∂F/∂f = μ`` reads ``h(x) = 1 − (1 + x)e^{−x} = μλ``; h increases from 0 to 1,
so there is a solution only when μλ < 1; otherwise the marginal value at f = 0,
``1/λ``, is at most μ and the optimum is f = 0 (the source changes too fast to be
worth visiting).

**Age.** Minimise Σ A(λᵢ, fᵢ) subject to Σ fᵢ = C (A is convex in f).
``∂A/∂f = −1/(2f²) + (1/λ²)(1 − (1 + x)e^{−x})``; ``∂A/∂f = −μ`` times λ² gives
``g(x) = x²/2 − 1 + (1 + x)e^{−x} = μλ²``, with ``g(0) = 0`` and
``g'(x) = x(1 − e^{−x}) > 0``: one solution for every μ > 0, so every changing source is
visited.

**Floor.** With fᵢ ≥ f_min (a maximum gap 1/f_min between visits), each source's
optimum of the separable concave problem is the free stationary point clipped to
the floor: ``fᵢ = max(f_min, fᵢ(μ))``.

Both are solved for μ by a bracketed search on log μ (Σ f decreases as μ grows),
the inner equations by Newton's method kept inside a bracket, all vectorised with
numpy. :func:`expected_freshness` and :func:`expected_age` are the closed forms;
the tests check them against numeric integration and the solutions against their
KKT conditions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Allocation",
    "allocate",
    "expected_age",
    "expected_freshness",
    "freshness_marginal",
    "age_marginal",
    "solve_g",
    "solve_h",
]

_SERIES_BELOW = 1.0  # below this x, the closed forms lose digits to cancellation: use their power series
_TERMS = 24
_FACT = np.cumprod(np.concatenate(([1.0], np.arange(1.0, _TERMS + 1))))  # k! for k = 0…_TERMS
#: h(x) = Σ_{k≥2} (−1)^k (k−1) x^k / k!
_H_COEF = np.array([(-1) ** k * (k - 1) / _FACT[k] for k in range(2, _TERMS + 1)])
#: a(x) = Σ_{k≥3} (−1)^{k+1} x^{k−2} / k!
_A_COEF = np.array([(-1) ** (k + 1) / _FACT[k] for k in range(3, _TERMS + 1)])


def _series(coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Σ coef[j] x^j by Horner's rule."""
    out = np.zeros_like(x)
    for c in coef[::-1]:
        out = out * x + c
    return out


def _as_array(values) -> np.ndarray:
    return np.asarray(values, dtype=float)


def expected_freshness(rates, freqs) -> np.ndarray:
    """F(λ, f) per source: 1 for a source that never changes, 0 for a changing one never visited."""
    lam, f = np.broadcast_arrays(_as_array(rates), _as_array(freqs))
    out = np.zeros(lam.shape)
    still = lam <= 0
    out[still] = 1.0
    ok = ~still & (f > 0)
    x = lam[ok] / f[ok]
    out[ok] = -np.expm1(-x) / x
    return out


def _age_factor(x: np.ndarray) -> np.ndarray:
    """a(x) = 1/2 − 1/x + (1 − e^{−x})/x², so that A = a(λ/f)/f."""
    out = np.empty_like(x)
    small = x < _SERIES_BELOW
    out[small] = x[small] * _series(_A_COEF, x[small])
    xl = x[~small]
    out[~small] = 0.5 - 1 / xl - np.expm1(-xl) / xl**2
    return out


def expected_age(rates, freqs) -> np.ndarray:
    """A(λ, f) per source, in days: 0 for a source that never changes, infinite for a changing one never visited."""
    lam, f = np.broadcast_arrays(_as_array(rates), _as_array(freqs))
    out = np.zeros(lam.shape)
    changing = lam > 0
    out[changing & (f <= 0)] = np.inf
    ok = changing & (f > 0)
    out[ok] = _age_factor(lam[ok] / f[ok]) / f[ok]
    return out


def _h(x: np.ndarray) -> np.ndarray:
    """h(x) = 1 − (1 + x)e^{−x}, increasing from 0 to 1."""
    out = np.empty_like(x)
    small = x < _SERIES_BELOW
    out[small] = x[small] ** 2 * _series(_H_COEF, x[small])
    xl = x[~small]
    out[~small] = -np.expm1(-xl) - xl * np.exp(-xl)
    return out


def _g(x: np.ndarray) -> np.ndarray:
    """g(x) = x²/2 − 1 + (1 + x)e^{−x} = x²/2 − h(x), increasing from 0."""
    out = np.empty_like(x)
    small = x < _SERIES_BELOW
    # x²/2 − h(x): the k = 2 term of h cancels x²/2
    out[small] = x[small] ** 3 * -_series(_H_COEF[1:], x[small])
    xl = x[~small]
    out[~small] = xl**2 / 2 - _h(xl)
    return out


def freshness_marginal(rates, freqs) -> np.ndarray:
    """∂F/∂f = (1/λ) h(λ/f); 1/λ at f = 0 (the value of the first visits)."""
    lam, f = np.broadcast_arrays(_as_array(rates), _as_array(freqs))
    out = np.zeros(lam.shape)
    changing = lam > 0
    zero = changing & (f <= 0)
    out[zero] = 1 / lam[zero]
    ok = changing & (f > 0)
    out[ok] = _h(lam[ok] / f[ok]) / lam[ok]
    return out


def age_marginal(rates, freqs) -> np.ndarray:
    """−∂A/∂f = g(λ/f)/λ² (how much age one more visit a day removes); infinite at f = 0."""
    lam, f = np.broadcast_arrays(_as_array(rates), _as_array(freqs))
    out = np.zeros(lam.shape)
    changing = lam > 0
    out[changing & (f <= 0)] = np.inf
    ok = changing & (f > 0)
    out[ok] = _g(lam[ok] / f[ok]) / lam[ok] ** 2
    return out


def _newton_bracketed(fun, deriv, y: np.ndarray, lo: np.ndarray, hi: np.ndarray, x0: np.ndarray | None = None,
                      iterations: int = 100) -> np.ndarray:
    """Solve fun(x) = y for increasing ``fun`` with lo ≤ x ≤ hi, element-wise: Newton steps,
    bisection whenever a step leaves the bracket."""
    lo, hi = lo.copy(), hi.copy()
    x = (lo + hi) / 2 if x0 is None else np.where(np.isnan(x0), (lo + hi) / 2, np.clip(x0, lo, hi))
    active = np.arange(x.size)
    for _ in range(iterations):
        xa, la, ha, ya = x[active], lo[active], hi[active], y[active]
        value = fun(xa) - ya
        below = value < 0
        la = np.where(below, xa, la)
        ha = np.where(below, ha, xa)
        slope = deriv(xa)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(slope > 0, xa - value / slope, np.nan)
        inside = (step >= la) & (step <= ha)
        new = np.where(inside, step, (la + ha) / 2)
        settled = (np.abs(new - xa) <= 1e-13 * np.abs(xa)) | (value == 0) | (ha - la <= 1e-13 * np.abs(xa))
        x[active], lo[active], hi[active] = new, la, ha
        active = active[~settled]
        if active.size == 0:
            break
    return x


def solve_h(y, x0: np.ndarray | None = None) -> np.ndarray:
    """x with h(x) = y, for 0 < y < 1 (element-wise); ``x0``: a first guess."""
    y = _as_array(y)
    lo = np.sqrt(2 * y)  # h(x) ≤ x²/2
    hi = 2 * -np.log1p(-y) + 4  # (1 + x)e^{−x} ≤ 1 − y there
    return _newton_bracketed(_h, lambda x: x * np.exp(-x), y, lo, hi, x0)


def solve_g(y, x0: np.ndarray | None = None) -> np.ndarray:
    """x with g(x) = y, for y > 0 (element-wise); ``x0``: a first guess."""
    y = _as_array(y)
    lo = np.cbrt(3 * y)  # g(x) ≤ x³/3
    hi = np.sqrt(2 * (y + 1))  # g(x) ≥ x²/2 − 1
    lo = np.minimum(lo, hi)
    return _newton_bracketed(_g, lambda x: -x * np.expm1(-x), y, lo, hi, x0)


def _freqs_for(objective: str, lam: np.ndarray, mu: float, guess: dict | None = None) -> np.ndarray:
    """The free stationary frequencies for multiplier μ (λ > 0 only). ``guess`` carries the last
    solution's x = λ/f from call to call (the search moves μ a little at a time)."""
    guess = {} if guess is None else guess
    x0 = guess.get("x")
    if objective == "freshness":
        y = mu * lam
        f = np.zeros_like(lam)
        visit = y < 1
        x = np.full(lam.shape, np.inf)
        x[visit] = solve_h(y[visit], None if x0 is None else np.where(np.isfinite(x0[visit]), x0[visit], np.nan))
        f[visit] = lam[visit] / x[visit]
    else:
        x = solve_g(mu * lam**2, x0)
        f = lam / x
    guess["x"] = x
    return f


@dataclass(frozen=True)
class Allocation:
    """Optimal visits per day for each source, and the Lagrange multiplier that gives them."""

    objective: str
    freqs: np.ndarray
    multiplier: float
    floor: float

    def freqs_for(self, rates) -> np.ndarray:
        """The frequencies this multiplier gives other sources (new ones): the optimum is a local rule."""
        lam = _as_array(rates)
        f = np.full(lam.shape, float(self.floor))
        changing = lam > 0
        f[changing] = np.maximum(_freqs_for(self.objective, lam[changing], self.multiplier), self.floor)
        return f


def allocate(rates, capacity: float, *, objective: str = "freshness", floor: float = 0.0,
             rtol: float = 1e-10) -> Allocation:
    """Optimal visit frequencies (per day) for sources of known ``rates`` (changes per day) and
    ``capacity`` visits per day: maximise Σ F (``objective="freshness"``) or minimise Σ A
    (``"age"``), with every fᵢ ≥ ``floor`` (0: free).

    Sources with rate 0 get the floor only. Raises ValueError when the floor alone needs
    more than the capacity.
    """
    if objective not in ("freshness", "age"):
        raise ValueError(f"objective: expected freshness or age, got {objective!r}")
    lam = _as_array(rates)
    if lam.ndim != 1 or (lam < 0).any() or not np.isfinite(lam).all():
        raise ValueError("rates: expected a 1-d array of finite rates of 0 or more")
    if not capacity > 0:
        raise ValueError(f"capacity: expected a positive number, got {capacity!r}")
    if floor < 0:
        raise ValueError(f"floor: expected 0 or more, got {floor!r}")
    n = lam.size
    if floor * n > capacity * (1 + 1e-12):
        raise ValueError(f"floor: {n} sources at {floor:g} a day need {floor * n:g} visits a day, more than the capacity {capacity:g}")
    changing = lam > 0
    lam_c = lam[changing]

    guess: dict = {}

    def total(log_mu: float) -> float:
        f = np.maximum(_freqs_for(objective, lam_c, float(np.exp(log_mu)), guess), floor)
        return float(f.sum()) + floor * (n - lam_c.size)

    if lam_c.size == 0:
        return Allocation(objective, np.full(n, float(floor)), float("inf"), float(floor))
    if total(np.log(np.finfo(float).tiny) + 50) < capacity:
        raise ValueError("capacity: more than any finite allocation can use")
    # bracket log μ: Σ f(μ) is decreasing in μ
    start = -np.log(np.median(lam_c)) if objective == "freshness" else -2 * np.log(np.median(lam_c))
    lo = hi = start
    while total(lo) < capacity:
        lo -= 4.0
    while total(hi) > capacity:
        hi += 4.0
    # Illinois (modified regula falsi) on φ(u) = Σ f(e^u) − C, kept bracketed
    f_lo, f_hi = total(lo) - capacity, total(hi) - capacity
    side = 0
    u = hi
    for _ in range(200):
        if f_lo == f_hi:
            u = (lo + hi) / 2
        else:
            u = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            if not lo < u < hi:
                u = (lo + hi) / 2
        value = total(u) - capacity
        if abs(value) <= rtol * capacity or hi - lo < 1e-15:
            break
        if value > 0:
            lo, f_lo = u, value
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = u, value
            if side == 1:
                f_lo /= 2
            side = 1
    mu = float(np.exp(u))
    freqs = np.full(n, float(floor))
    freqs[changing] = np.maximum(_freqs_for(objective, lam_c, mu, guess), floor)
    # the last rounding goes to the sources above the floor, so that Σ f = C to the last digit
    above = freqs > floor
    if above.any():
        freqs[above] *= (capacity - floor * (~above).sum()) / freqs[above].sum()
    return Allocation(objective, freqs, mu, float(floor))
