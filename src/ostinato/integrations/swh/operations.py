"""How an operation of the protocol is declared: its route, its parameters (each read strictly
from the request, the first fault a ValidationError naming the parameter), the token scope it
needs, and the function that maps it onto the store (see docs/reference/swh-compat.md); and the
:class:`Context` each such function gets: the roles of the store the face uses, and the clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from time import perf_counter
from typing import Any
from uuid import UUID

from ...domain.clock import Clock
from ...domain.errors import ConflictError, ValidationError
from ...domain.visit_policies import GrabOptions
from ...domain.visits import FeedbackPolicy
from ...store.interface import CompatStore, OriginStore, Store, TaskStore, TokenStore
from . import models

_REQUIRED = object()


class StaleData(ConflictError):
    """The protocol's name for a lister updated since it was read."""


class UnknownPolicy(ValidationError):
    """The protocol's name for a scheduling policy it does not know."""


@dataclass
class Context:
    """What an operation works with: the store's roles the face uses (one store behind them all),
    each operation naming the role of each verb it calls, the clock, and the settings of Ostinato's
    own policies served through the face (its feedback, for the upserts of a visit type that learns,
    and its grab's options)."""

    tasks: TaskStore
    origins: OriginStore
    compat: CompatStore
    tokens: TokenStore
    clock: Clock
    feedback: FeedbackPolicy = field(default_factory=FeedbackPolicy)
    grab_options: GrabOptions = field(default_factory=GrabOptions)

    @classmethod
    def over(cls, store: Store, clock: Clock, *, feedback: FeedbackPolicy | None = None,
             grab_options: GrabOptions | None = None) -> Context:
        """The context of a whole store: it plays every role the face uses."""
        return cls(tasks=store, origins=store, compat=store, tokens=store, clock=clock,
                   feedback=feedback or FeedbackPolicy(), grab_options=grab_options or GrabOptions())

    def timed(self, spent: list[float]) -> Context:
        """This context with every store verb's time added up in ``spent[0]`` (a call's "store" phase)."""
        # a _Timed answers every verb of the role it wraps (through __getattr__), which mypy cannot see
        return replace(self, tasks=_Timed(self.tasks, spent),  # type: ignore[arg-type]  # a role by its verbs
                       origins=_Timed(self.origins, spent),  # type: ignore[arg-type]  # a role by its verbs
                       compat=_Timed(self.compat, spent))  # type: ignore[arg-type]  # a role by its verbs


class _Timed:
    """A store role whose verbs add their time to ``spent[0]``."""

    __slots__ = ("_role", "_spent")

    def __init__(self, role: Any, spent: list[float]) -> None:
        self._role, self._spent = role, spent

    def __getattr__(self, name: str) -> Any:
        verb = getattr(self._role, name)
        spent = self._spent

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = perf_counter()
            try:
                return verb(*args, **kwargs)
            finally:
                spent[0] += perf_counter() - start

        return timed


@dataclass(frozen=True)
class Param:
    read: Callable[[Any, str], Any]
    default: Any = _REQUIRED


@dataclass(frozen=True)
class Operation:
    name: str
    route: str
    scope: str
    params: dict[str, Param]
    run: Callable[..., Any]

    def arguments(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ValidationError("body", "a map of the operation's arguments by name", type(body).__name__)
        unknown = sorted(str(k) for k in body if k not in self.params)
        if unknown:
            raise ValidationError(unknown[0], f"an argument of {self.name}: {', '.join(self.params) or 'none'}", None)
        arguments = {}
        for name, param in self.params.items():
            if name in body:
                arguments[name] = param.read(body[name], name)
            elif param.default is _REQUIRED:
                raise ValidationError(name, "a value (the argument is required)", None)
            else:
                arguments[name] = param.default
        return arguments


@dataclass
class Registry:
    operations: dict[str, Operation] = field(default_factory=dict)

    def add(self, route: str, scope: str = "admin", /,
            **params: Param) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            self.operations[route] = Operation(function.__name__, route, scope, params, function)
            return function
        return register


REGISTRY = Registry()
operation = REGISTRY.add


# -- parameter readers -----------------------------------------------------------------
def arg(kind: models.Kind, default: Any = _REQUIRED) -> Param:
    return Param(lambda value, name: kind(value, name), default)


def model_arg(model: str) -> Param:
    return Param(lambda value, name: models.read(value, model, name))


def models_arg(model: str) -> Param:
    return Param(lambda value, name: models.read_many(value, model, name))


def _whole_list(value: Any, name: str) -> list[int]:
    if isinstance(value, (list, tuple)):
        return [models.WHOLE(v, f"{name}[{i}]") for i, v in enumerate(value)]
    raise ValidationError(name, "a list of whole numbers", value)


def ids_arg(default: Any = _REQUIRED) -> Param:
    return Param(_whole_list, default)


def _text_or_texts(value: Any, name: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [models.TEXT(v, f"{name}[{i}]") for i, v in enumerate(value)]
    raise ValidationError(name, "text or a list of text", value)


def texts_arg() -> Param:
    """One value or a list of them (``task_type``, ``status``, ``priority`` of task/search)."""
    return Param(_text_or_texts, None)


def _uuid(value: Any, name: str) -> UUID | None:
    if value is None:
        return None
    if isinstance(value, UUID):
        return value
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            pass
    raise ValidationError(name, "a UUID or its text", value)


def uuid_arg() -> Param:
    return Param(_uuid, None)


def time_arg() -> Param:
    return arg(models.nullable(models.TIME), None)


def now_or(ctx: Context, value: datetime | None) -> datetime:
    return value if value is not None else ctx.clock.now()
