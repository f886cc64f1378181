"""The orchestrator's maths (see docs/design/orchestrator.md): split a queue's free room between scheduling
policies by ratio, and give the room one policy cannot use to the others.

The policies themselves (which origins each one picks) live in the stores; this
module only decides how many each is asked for.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

from .errors import ValidationError

NEVER_VISITED = "never_visited_oldest_update_first"
BY_LAG = "already_visited_order_by_lag"
WITHOUT_LAST_UPDATE = "origins_without_last_update"

#: The default table. Package loaders (archive, cran, debian, npm, nixguix, pypi, …)
#: split 50 / 50; git, svn and hg keep 2 for forges that give no last_update.
VCS_RATIOS: Mapping[str, float] = {BY_LAG: 49, NEVER_VISITED: 49, WITHOUT_LAST_UPDATE: 2}
PACKAGE_RATIOS: Mapping[str, float] = {BY_LAG: 50, NEVER_VISITED: 50}
VCS_VISIT_TYPES = frozenset({"git", "svn", "hg"})


def default_ratios(visit_type: str) -> dict[str, float]:
    return dict(VCS_RATIOS if visit_type in VCS_VISIT_TYPES else PACKAGE_RATIOS)


def validate_ratios(ratios: Mapping[str, float], known_policies: frozenset[str] | set[str], *, field: str = "ratios") -> dict[str, float]:
    """Ratios must name known policies, be zero or more, and not all be zero."""
    if not isinstance(ratios, Mapping) or not ratios:
        raise ValidationError(field, "a non-empty mapping of policy name to ratio", ratios)
    checked: dict[str, float] = {}
    for policy, weight in ratios.items():
        if policy not in known_policies:
            raise ValidationError(f"{field}.{policy}", f"a known policy ({', '.join(sorted(known_policies))})", policy)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0 or weight != weight:
            raise ValidationError(f"{field}.{policy}", "a number of 0 or more", weight)
        checked[policy] = float(weight)
    if not any(checked.values()):
        raise ValidationError(field, "at least one ratio above 0", ratios)
    return checked


def split_room(room: int, ratios: Mapping[str, float]) -> dict[str, int]:
    """Whole shares of ``room`` proportional to the ratios (largest remainders), summing to ``room``."""
    total = sum(w for w in ratios.values() if w > 0)
    if room <= 0 or total <= 0:
        return {policy: 0 for policy in ratios}
    exact = {policy: room * w / total if w > 0 else 0.0 for policy, w in ratios.items()}
    shares = {policy: int(value) for policy, value in exact.items()}
    leftover = room - sum(shares.values())
    for policy in sorted(exact, key=lambda p: (exact[p] - shares[p], ratios[p]), reverse=True)[:leftover]:
        shares[policy] += 1
    return shares


def fill_room(
    room: int,
    ratios: Mapping[str, float],
    grab: Callable[[str, int], int],
    *,
    rng: random.Random | None = None,
) -> dict[str, int]:
    """Fill ``room`` by asking each policy for its share; what one cannot use goes to the others.

    ``grab(policy, n)`` takes up to ``n`` origins and returns how many it took.
    A policy that returns fewer than asked is out of origins for this round.
    The order of the policies is random when ``rng`` is given, as in the orchestrator note
    ("for each randomly picked policy"); else the largest ratio goes first.
    Returns how many each policy took.
    """
    taken = {policy: 0 for policy in ratios}
    active = [policy for policy, weight in ratios.items() if weight > 0]
    while room > 0 and active:
        shares = split_room(room, {policy: ratios[policy] for policy in active})
        order = sorted(active, key=lambda p: -ratios[p])
        if rng is not None:
            rng.shuffle(order)
        progress = exhausted = False
        for policy in order:
            wanted = min(shares[policy], room)
            if wanted <= 0:
                continue
            got = grab(policy, wanted)
            taken[policy] += got
            room -= got
            progress = progress or got > 0
            if got < wanted:
                active.remove(policy)
                exhausted = True
        # a round where nobody took anything but somebody ran out gives the room to the
        # rest next round (a share that rounded to nothing is asked then)
        if not progress and not exhausted:
            break
    return taken


def plan_grab_requests(room: int, ratios: Mapping[str, float]) -> list[tuple[str, int]]:
    """One grab's requests that fill ``room`` by ratio in a single transaction.

    Each policy first asks for its share (:func:`split_room`); then each, largest
    ratio first, asks for the whole room again, so that a grab capped at
    ``room`` gives the share one policy could not use to the others. Policies
    with ratio 0 take part in neither.
    """
    shares = split_room(room, ratios)
    order = sorted((p for p, w in ratios.items() if w > 0), key=lambda p: -ratios[p])
    return [(p, shares[p]) for p in order if shares[p] > 0] + [(p, room) for p in order]
