"""The schedulers of bench/face/face_month.py that go through swh's client, and what starts them.

:data:`SCHEDULERS` names every scheduler the benchmark runs. :class:`FaceScheduler`
speaks the simulator's scheduler protocol (``listing``, ``feed``, ``pick``, ``notes``,
``close``: that of ``ostinato.sim.store_driver.StoreScheduler``) to an RPC server,
Ostinato's face or swh-scheduler's own, through the peer-side client
(``bench/face/face_month_client.py``, swh's ``RemoteScheduler`` in the peer's interpreter)
in one JSON line per simulated step: the listings and journal statuses kept since
the last step, then the grab. Origins are named as the simulator's store names them
(``StoreScheduler.url``), so that grabbed URLs map back to sources; the visits'
snapshots are the simulator's (``store_driver.snapshot_id``), so eventful visits are
told apart the same way on every server.

Not run by itself: ``bench/face/face_month.py`` imports it.
"""

from __future__ import annotations

import collections
import math
import subprocess
from collections.abc import Mapping
from contextlib import ExitStack
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.common.peer import PeerProcess
from bench.common.processes import free_port
from bench.face.vs_swh_rpc import OSTINATO_CLI, start, wait_for
from ostinato.domain.visits import JournalStatus, VisitStatus
from ostinato.services.revisit_steering import ThresholdSteering
from ostinato.sim.archive_tracker import FAILED, NOT_FOUND, SUCCESS
from ostinato.sim.engine import START, SimulationConfig, simulation_settings
from ostinato.sim.store_driver import VISIT_TYPE, SourceNames, snapshot_id
from ostinato.store import open_store
from test_servers import swh_peer

CLIENT = Path(__file__).resolve().parent / "face_month_client.py"
REPO = Path(__file__).resolve().parents[2]
#: the random stream of the order a mix's grabbed batch is sent in (swh's runner shuffles it)
STREAM_SHUFFLE = 11
_JOURNAL = {SUCCESS: "full", FAILED: "failed", NOT_FOUND: "not_found"}
_STATUS = {SUCCESS: JournalStatus.FULL, FAILED: JournalStatus.FAILED, NOT_FOUND: JournalStatus.NOT_FOUND}
CRO = "change_rate_optimal"

#: name → how it runs: ``server`` (ostinato-orchestrator, face or swh), the grab (``policy`` alone, or swh's
#: ``mix``), the journal (``feed``: swh's journal client through the client, or ostinato's verb on the store);
#: ``optional`` ones run only when asked for (``--schedulers``)
SCHEDULERS: dict[str, dict[str, Any]] = {
    "ostinato": {"server": "ostinato-orchestrator",
                 "description": "Ostinato's orchestrator, change_rate_optimal, PostgreSQL store"},
    "ostinato+counts": {"server": "ostinato-orchestrator", "counts": True, "optional": True,
                        "description": "the same, its loader counting changes (what the journal cannot carry)"},
    "face+swh-journal": {"server": "face", "policy": CRO, "feed": "swh",
                         "description": "Ostinato's face, change_rate_optimal, fed by swh's journal client"},
    "face+ostinato-journal": {"server": "face", "policy": CRO, "feed": "ostinato",
                              "description": "Ostinato's face, change_rate_optimal, fed by record_visit_statuses"},
    "swh-default": {"server": "swh", "mix": "DEFAULT_POLICY", "feed": "swh",
                    "description": "swh's server, DEFAULT_POLICY (lag 40 / never visited 40 / without last_update 20)"},
    "swh-dvcs": {"server": "swh", "mix": "DEFAULT_DVCS_POLICY", "feed": "swh",
                 "description": "swh's server, DEFAULT_DVCS_POLICY (lag 49 / never visited 49 / without last_update 2)"},
    "swh-default+our-cooldowns": {"server": "swh", "mix": "DEFAULT_POLICY", "feed": "swh", "our_cooldowns": True,
                                  "optional": True, "description": "swh-default, its grabs given Ostinato's cooldowns"},
    "swh-dvcs+our-cooldowns": {"server": "swh", "mix": "DEFAULT_DVCS_POLICY", "feed": "swh", "our_cooldowns": True,
                               "optional": True, "description": "swh-dvcs, its grabs given Ostinato's cooldowns"},
    **{f"swh-{policy}": {"server": "swh", "policy": policy, "feed": "swh",
                         "description": f"swh's server, {policy} alone"}
       for policy in ("already_visited_order_by_lag", "never_visited_oldest_update_first",
                      "origins_without_last_update", "oldest_scheduled_first")},
    "face+swh-journal+steer": {"server": "face", "policy": CRO, "feed": "swh", "steer": True, "optional": True,
                               "description": "as face+swh-journal, with the orchestrator's threshold steering beside"},
    "face+ostinato-journal+steer": {"server": "face", "policy": CRO, "feed": "ostinato", "steer": True, "optional": True,
                                    "description": "as face+ostinato-journal, with the orchestrator's threshold steering "
                                                   "beside"},
}


class Peer(PeerProcess):
    """``bench/face/face_month_client.py`` in the peer's interpreter, for one server."""

    def __init__(self, python: Path) -> None:
        self.process = subprocess.Popen([str(python), str(CLIENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1, cwd=REPO, env=swh_peer.peer_env())

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.close()
        except Exception:
            self.process.kill()


def face_settings(config: SimulationConfig) -> dict[str, str]:
    """The simulator's settings for a store policy (``engine.simulation_settings``) that the face reads, as
    ``OSTINATO_*`` variables: the feedback's cooldowns and intervals, the grab's options, the revisit model."""
    settings = simulation_settings(config)
    names = ("absolute_cooldown", "minimum_interval", "in_flight_timeout", "failed_cooldown", "not_found_cooldown",
             "failure_delay", "adjust_factor", "max_failures", "revisit_objective", "revisit_prior_changes",
             "revisit_prior_days", "revisit_ceiling", "revisit_horizon")
    env = {}
    for name in names:
        value = getattr(settings, name)
        env[f"OSTINATO_{name.upper()}"] = f"{round(value.total_seconds())}s" if isinstance(value, timedelta) else str(value)
    return env


def start_face_server(dsn: str, config: SimulationConfig, work: Path, stack: ExitStack) -> str:
    """``ostinato swh-rpc serve`` on ``dsn`` (an initialised database with a token), with the simulator's
    settings; returns its URL."""
    port = free_port()
    log = work / "ostinato-server.log"
    env = {k: v for k, v in swh_peer.peer_env().items() if not k.startswith("OSTINATO_")} | face_settings(config)
    process = start([str(OSTINATO_CLI), "--db", dsn, "swh-rpc", "serve", "--host", "127.0.0.1", "--port", str(port)],
                    env, log, stack)
    url = f"http://127.0.0.1:{port}/"
    wait_for(url, process, log)
    return url


def exact_grain(weights: list[float]) -> int:
    """The least count that swh's ``grab_next_visits_policy_weights`` splits over ``weights`` without loss
    (it asks each policy for ``int(count × weight / total)``): 5 for 40/40/20, 100 for 49/49/2."""
    total = sum(weights)
    for count in range(1, 10_001):
        if sum(int(count * (w / total)) for w in weights) == count:
            return count
    return 10_000


class FaceScheduler:
    """The simulator's scheduler protocol, through swh's client to one server (see the module's docstring)."""

    def __init__(self, world: Any, config: SimulationConfig, peer: Peer, spec: Mapping[str, Any], dsn: str):
        self.peer, self.spec = peer, spec
        self.visit_type = VISIT_TYPE
        self.reports_last_update = world.reports_last_update
        self.names = SourceNames(world.reports_last_update, config.seed)  # as the simulator's store names them
        self._listings: list[list[Any]] = []
        self._messages: list[list[Any]] = []
        #: swh's mixes: what was grabbed and not yet sent to the loaders, oldest first
        self._queue: collections.deque[int] = collections.deque()
        #: a mix: the least count its shares split exactly (each policy gets int(count × share) in swh's function)
        self._mix_grain = 0
        if "mix" in spec:
            self.mix = peer("mix", name=spec["mix"])["entries"]
            self._mix_grain = exact_grain([entry["weight"] for entry in self.mix])
        self._rng = np.random.default_rng([config.seed, STREAM_SHUFFLE])
        settings = simulation_settings(config)
        self.feedback = settings.feedback_policy()
        self.store = open_store(dsn) if spec.get("feed") == "ostinato" or spec.get("steer") else None
        self.steering = (ThresholdSteering(self.store, settings.revisit_model(), capacity=settings.revisit_capacity,
                                           every=settings.revisit_steer_every) if spec.get("steer") else None)
        self.asked = self.grabbed = self.short_steps = self.fed = self.mix_grabs = 0
        #: the grab's cooldown arguments: swh's defaults, or those the face's runs have (``our_cooldowns``): an
        #: origin scheduled within ``absolute_cooldown``, in flight for ``in_flight_timeout``, or whose last
        #: visit failed within ``failed_cooldown`` or found nothing within ``not_found_cooldown`` waits
        self.cooldowns = ({"absolute_cooldown": settings.absolute_cooldown.total_seconds(),
                           "scheduled_cooldown": settings.in_flight_timeout.total_seconds(),
                           "failed_cooldown": settings.failed_cooldown.total_seconds(),
                           "not_found_cooldown": settings.not_found_cooldown.total_seconds()}
                          if spec.get("our_cooldowns") else None)
        self.feed_seconds = 0.0

    # -- names and time ----------------------------------------------------------------
    def when(self, t: float) -> datetime:
        return START + timedelta(days=float(t))

    def url(self, source: int) -> str:
        return self.names.url(source)

    source_of = staticmethod(SourceNames.source_of)

    # -- the scheduler protocol ----------------------------------------------------------
    def listing(self, t: float, sources: np.ndarray, last_change: np.ndarray) -> None:
        """The two listers' output, recorded with the next step's call: lister 0 reports ``last_update``."""
        for index, reports in enumerate((True, False)):
            mine = self.reports_last_update[sources] == reports
            origins = [[self.url(s), self.when(c).isoformat() if reports else None]
                       for s, c in zip(sources[mine].tolist(), last_change[mine].tolist(), strict=True)]
            if origins:
                self._listings.append([index, origins])

    def feed(self, t: float, visits: Mapping[str, np.ndarray]) -> None:
        """The ended visits' statuses: for swh's journal client, sent with the next step's call; for
        Ostinato's, given to the store behind the face now (after the listings kept so far)."""
        rows = list(zip(visits["source"].tolist(), visits["end"].tolist(), visits["outcome"].tolist(),
                        visits["version"].tolist(), visits["number"].tolist(), strict=True))
        self.fed += len(rows)
        if self.spec["feed"] == "swh":
            self._messages.extend(
                [self.url(s), number, _JOURNAL[outcome], self.when(end).isoformat(),
                 snapshot_id(s, version).hex() if outcome == SUCCESS else None]
                for s, end, outcome, version, number in rows)
            return
        if self._listings:
            self._call(None)
        assert self.store is not None
        statuses = [VisitStatus(self.url(s), number, self.visit_type, _STATUS[outcome], self.when(end),
                                snapshot_id(s, version) if outcome == SUCCESS else None)
                    for s, end, outcome, version, number in rows]
        began = datetime.now()
        # what ostinato journal-client does with a batch, its clock being the simulated one
        self.store.record_visit_statuses(statuses, self.feedback, now=self.when(t))
        self.feed_seconds += (datetime.now() - began).total_seconds()

    def pick(self, t: float, until: float, quota: int) -> tuple[np.ndarray, np.ndarray]:
        """The step's grab at the simulated time. A mix is grabbed as swh's runner grabs, again while the
        loaders' queue lacks room and grabs bring origins: each time what is missing, rounded up to the least
        count swh's shares split exactly, shuffled; the step sends ``quota`` of the queue, oldest first."""
        now = self.when(t)
        if self.steering is not None and quota:  # as the orchestrator does before its grab
            if self.steering.due(self.visit_type, now):
                self.steering.steer(self.visit_type, 1.0, now)
        if not self._mix_grain:
            sources = self._grab(now, quota, {"policy": self.spec["policy"]}) if quota else []
            if not quota and (self._listings or self._messages):
                self._call(None)
        else:
            first = True
            while len(self._queue) < quota:
                ask = self._mix_grain * math.ceil((quota - len(self._queue)) / self._mix_grain)
                got = self._grab(now, ask, {"mix": self.spec["mix"]})
                self._queue.extend(got[i] for i in self._rng.permutation(len(got)))
                self.mix_grabs += 1
                first = False
                if not got:
                    break
            if first and (self._listings or self._messages):
                self._call(None)
            sources = [self._queue.popleft() for _ in range(min(quota, len(self._queue)))]
        if self.steering is not None:
            self.steering.dispatched(self.visit_type, len(sources), now)
        self.short_steps += len(sources) < quota
        picked = np.asarray(sources, dtype=np.int64)
        return picked, np.full(picked.size, t)

    def _grab(self, now: datetime, count: int, how: dict[str, Any]) -> list[int]:
        if self.cooldowns is not None:
            how = {**how, "cooldowns": self.cooldowns}
        urls = self._call({"count": count, "timestamp": now.isoformat(), **how})
        self.asked += count
        self.grabbed += len(urls)
        return [self.source_of(u) for u in urls]

    def _call(self, grab: dict[str, Any] | None) -> list[str]:
        answer = self.peer("step", listings=self._listings, messages=self._messages, grab=grab)
        self._listings, self._messages = [], []
        return answer["urls"]

    def notes(self) -> dict[str, Any]:
        notes: dict[str, Any] = {"asked": self.asked, "grabbed": self.grabbed, "steps_short_of_quota": self.short_steps,
                                 "statuses_fed": self.fed, "client": self.peer("totals")}
        if self.cooldowns is not None:
            notes["cooldowns_seconds"] = self.cooldowns
        if self._mix_grain:
            notes.update(mix=self.mix, mix_grain=self._mix_grain, mix_grabs=self.mix_grabs, queued_at_end=len(self._queue))
        if self.store is not None:
            notes["record_visit_statuses_seconds"] = round(self.feed_seconds, 3)
            thresholds = self.store.get_revisit_thresholds()
            notes["threshold"] = thresholds[self.visit_type].threshold if self.visit_type in thresholds else None
        return notes

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
