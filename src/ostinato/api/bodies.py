"""The shapes of the API's request bodies and error answers, as strict pydantic models: they
describe the bodies in the OpenAPI description and turn away, before any route runs, what the
store could not hold (400 naming the field).

Every model forbids unknown fields; text is bounded and may not hold NUL (PostgreSQL refuses
it) nor unpaired surrogates; numbers are bounded; a URL has at most :data:`URL_MAX_BYTES` bytes
of UTF-8 (and fits the store's index, which the store checks); JSON arguments are bounded in size and depth. What the
domain checks further (a duration's syntax, a known policy, a cron expression) it checks on
the validated fields, naming the field as before.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from ..domain.limits import MAX_CHANGE_TIMES, MAX_URL_BYTES
from ..domain.visit_policies import VisitPolicy
from .request_handling import MAX_BULK

#: the largest id or counter a request may name (a signed 64-bit integer)
MAX_ID = 2**63 - 1
#: the longest URL (the store checks that it fits its index: see domain/limits.py)
URL_MAX_BYTES = MAX_URL_BYTES
#: the largest JSON document of task arguments or loader arguments, serialised
ARGUMENTS_MAX_BYTES = 64 * 1024
#: the longest duration given in seconds: about a hundred years
MAX_SECONDS = 100 * 366 * 86400
NO_NUL = r"^[^\x00]*$"


def _storable(value: str) -> str:
    if "\x00" in value:
        raise ValueError("text without NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("valid Unicode text (no unpaired surrogate)") from None
    return value


def _url_bytes(value: str) -> str:
    if len(value.encode("utf-8")) > URL_MAX_BYTES:
        raise ValueError(f"a URL of at most {URL_MAX_BYTES} bytes of UTF-8")
    return value


def _json_value(value: Any, depth: int = 0) -> None:
    if depth > 32:
        raise ValueError("JSON nested at most 32 deep")
    if isinstance(value, str):
        _storable(value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError("finite numbers")
    elif isinstance(value, dict):
        for key, item in value.items():
            _storable(key)
            _json_value(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _json_value(item, depth + 1)


def _storable_json(value: Any) -> Any:
    _json_value(value)
    if len(json.dumps(value, allow_nan=False)) > ARGUMENTS_MAX_BYTES:
        raise ValueError(f"JSON of at most {ARGUMENTS_MAX_BYTES} bytes")
    return value


def _text(max_length: int, min_length: int = 0) -> StringConstraints:
    """The bounds of a text field: at most ``max_length`` characters, at least ``min_length``,
    no NUL (the field's type adds :func:`_storable`, which also refuses unpaired surrogates)."""
    return StringConstraints(min_length=min_length, max_length=max_length, pattern=NO_NUL)


# Each text field's type is spelled out as ``Annotated[str, bounds, storable]`` (rather than made by
# a function) so that type checkers read it as the ``str`` it is.
Name = Annotated[str, _text(200, 1), AfterValidator(_storable)]
#: a short text of 1 to 64 characters (a visit type, a time, a time zone, a written duration)
ShortText = Annotated[str, _text(64, 1), AfterValidator(_storable)]
VisitType = ShortText
Url = Annotated[str, _text(URL_MAX_BYTES, 1), AfterValidator(_storable), AfterValidator(_url_bytes)]
#: a time: ISO 8601 with a zone, ``now`` or an offset such as ``+2h``
Time = ShortText
#: a duration: seconds, or written ``90s``, ``12h``, ``1d12h``, ``P1DT2H``
Duration = Annotated[float, Field(ge=0, le=MAX_SECONDS)] | ShortText
#: a task type's backend name, a host's name
LongName = Annotated[str, _text(255, 1), AfterValidator(_storable)]
Description = Annotated[str, _text(2000), AfterValidator(_storable)]
#: a time of day (a blackout period's start or end)
TimeOfDay = Annotated[str, _text(8, 1), AfterValidator(_storable)]
CronExpression = Annotated[str, _text(1000, 1), AfterValidator(_storable)]
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
JsonObject = Annotated[dict[str, Any], Field(max_length=1000), AfterValidator(_storable_json)]
JsonArray = Annotated[list[Any], Field(max_length=1000), AfterValidator(_storable_json)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    def fields(self) -> dict[str, Any]:
        """The fields the client sent, as plain JSON values, for the domain's parsers."""
        return self.model_dump(exclude_unset=True, mode="json")


class ArgumentsBody(Strict):
    args: JsonArray = []
    kwargs: JsonObject = {}


class TaskTypeKnobs(Strict):
    """A task type's scheduling knobs, each optional (``null``: none)."""

    default_interval: Duration | None = None
    min_interval: Duration | None = None
    max_interval: Duration | None = None
    retry_delay: Duration | None = None
    backoff_factor: Annotated[float, Field(gt=0, le=1000)] | None = None
    max_queue_length: Annotated[int, Field(ge=0, le=10**9)] | None = None
    num_retries: Annotated[int, Field(ge=0, le=1000)] | None = None


class TaskTypeBody(TaskTypeKnobs):
    type: Name
    backend_name: LongName
    description: Description = ""


class TaskTypePatchBody(TaskTypeKnobs):
    """A task type's knobs to change: those given are set (``null`` clears one), the others kept."""

    backend_name: LongName | None = None
    description: Description | None = None


class TaskBody(Strict):
    type: Name
    arguments: ArgumentsBody | None = None
    policy: Literal["oneshot", "recurring"] | None = None
    priority: Literal["high", "normal", "low", "none"] | None = None
    next_run: Time | None = None
    current_interval: Duration | None = None


class BlackoutBody(Strict):
    start: TimeOfDay
    end: TimeOfDay


class ScheduleBody(Strict):
    name: Name
    kind: Literal["periodic", "calendar"]
    task_type: Name
    arguments: ArgumentsBody | None = None
    mode: Literal["run", "submit", "send"] | None = None
    scheduling_period: Duration | None = None
    cooldown_duration: Duration | None = None
    cron_schedule: CronExpression | None = None
    cron_max_schedule_duration: Duration | None = None
    tz: ShortText | None = None
    enabled: bool = True
    max_expected_duration: Duration | None = None
    max_allowed_duration: Duration | None = None
    blackout_periods: Annotated[list[BlackoutBody], Field(max_length=100)] | None = None
    dont_run_on_nodes: Annotated[list[Name], Field(max_length=1000)] | None = None
    catch_up: Annotated[str, StringConstraints(max_length=20, pattern=r"^(latest|skip|all:[0-9]+)$")] | None = None
    retry_backoff: Annotated[list[Duration], Field(min_length=1, max_length=100)] | None = None
    options: JsonObject | None = None
    #: how long a run is expected to last, in place of the moving average (a positive duration)
    expected_duration: Duration | None = None
    #: the failed share of a good run's items above which it reads partial_failure
    partial_failure_threshold: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False, strict=True)] | None = None


class ListerBody(Strict):
    name: Name
    instance_name: Name | None = None


class ListedOriginBody(Strict):
    url: Url
    visit_type: VisitType
    extra_loader_arguments: JsonObject | None = None
    last_update: Time | None = None
    enabled: bool | None = None
    is_fork: bool | None = None
    forked_from_url: Url | None = None
    host: LongName | None = None


class VisitStatusBody(Strict):
    origin: Url
    visit: Annotated[int, Field(ge=0, le=MAX_ID)]
    type: VisitType
    status: Literal["created", "ongoing", "full", "partial", "not_found", "failed"]
    date: Time
    snapshot: Annotated[str, StringConstraints(max_length=128, pattern=r"^[0-9a-fA-F]*$")] | None = None
    changes: Annotated[int, Field(ge=0, le=MAX_ID)] | None = None
    #: what the visit saw of its changes (domain.visit_changes checks them, naming change_times[N])
    newest_change_at: Time | None = None
    change_times: Annotated[list[Time], Field(max_length=MAX_CHANGE_TIMES)] | None = None


#: a policy's name: one of VisitPolicy's values. The Literal is built from the enum when the module
#: runs; a type checker cannot build it, and reads the plain ``str`` it is.
if TYPE_CHECKING:
    PolicyName = str
else:
    PolicyName = Literal[tuple(policy.value for policy in VisitPolicy)]


class GrabBody(Strict):
    visit_type: VisitType
    count: Annotated[int, Field(ge=0, le=MAX_BULK)] = 10
    policies: Annotated[dict[PolicyName, Annotated[float, Field(ge=0, le=1e9)]], Field(min_length=1)] | None = None
    lister_id: Id | None = None
    dry_run: bool = False


#: a host's limit on visits in flight (null: none)
MaxConcurrent = Annotated[int, Field(ge=1, le=1_000_000)]


class PolitenessBody(Strict):
    max_concurrent_per_host: MaxConcurrent | None = None
    min_spacing_per_host: Duration | None = None


class HostPolitenessBody(Strict):
    max_concurrent: MaxConcurrent | None = None
    min_spacing: Duration | None = None


ListedOrigins = Annotated[list[ListedOriginBody], Field(max_length=MAX_BULK)]
VisitStatuses = Annotated[list[VisitStatusBody], Field(max_length=MAX_BULK)]


class ErrorDetail(BaseModel):
    field: str | None = Field(description="The field at fault (dotted for a nested one), or null.")
    expected: str | None = Field(description="What the field should hold.")
    got: Any = Field(description="What it held.")
    message: str
    index: int | None = Field(None, description="In a bulk request, the 0-based position of the item at fault.")


class ErrorBody(BaseModel):
    error: ErrorDetail


# -- errors of validation, and their description -------------------------------------------
def _field_of(location: tuple, body: Any, error_type: str) -> tuple[str, int | None]:
    """The dotted field a pydantic error's location points at in ``body``, and the item's index
    when the body is a bulk array. Parts of the location that are not in the body (the member
    of a union tried: ``float``, ``str``…) are left out."""
    parts = list(location[1:])
    index = None
    node, walked = body, []
    if parts and isinstance(node, list) and isinstance(parts[0], int):
        index = parts.pop(0)
        node = node[index] if 0 <= index < len(node) else None
    for position, part in enumerate(parts):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            if error_type == "missing" and position == len(parts) - 1:
                walked.append(str(part))
            break
        walked.append(str(part))
    return ".".join(walked), index


def request_error(errors: list[dict[str, Any]], body: Any) -> dict[str, Any]:
    """The JSON error body of a request FastAPI refused: the first error, naming its field."""
    # an unknown field first: it is the likelier cause (a typo) of a required one missing
    first = next((e for e in errors if e.get("type") == "extra_forbidden"), errors[0] if errors else {})
    location = tuple(first.get("loc", ()))
    where = str(location[0]) if location else "request"
    if where == "body":
        field, index = _field_of(location, body, first.get("type", ""))
        field = field or ("body" if index is None else "record")
    else:
        field, index = ".".join(str(part) for part in location[1:]) or where, None
    if first.get("type") == "json_invalid":
        field, index = "body", None
    expected = str(first.get("msg", "a valid value"))
    if expected.startswith("Value error, "):
        expected = expected[len("Value error, "):]
    message = f"{field}: {expected}" if index is None else f"item {index}: {field}: {expected}"
    error: dict[str, Any] = {"field": field, "expected": expected, "got": first.get("input"), "message": message}
    if index is not None:
        error["index"] = index
    return {"error": error}


_ERRORS = {
    "400": "Bad input: the field at fault, what was expected and what was got.",
    "401": "No valid token (none, unknown or revoked).",
    "403": "A token of too small a scope.",
    "404": "Not found.",
    "409": "A conflict (it exists already).",
    "503": "The database's schema is not the expected one.",
}


def document_errors(openapi: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI description with our error answers: every operation that takes a token or input
    may answer 400, 401, 403, 404, 409 and 503 with :class:`ErrorBody`, and none answers 422
    (FastAPI's default, which the API answers as 400)."""
    components = openapi.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorDetail"] = ErrorDetail.model_json_schema(ref_template="#/components/schemas/{model}")
    components["ErrorBody"] = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    components["ErrorBody"].pop("$defs", None)
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
    for path, item in openapi.get("paths", {}).items():
        for operation in item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            responses.pop("422", None)
            if path.startswith("/api/") or operation.get("security") or operation.get("parameters"):
                for status, description in _ERRORS.items():
                    responses.setdefault(status, {"description": description, **error})
            else:
                responses.setdefault("503", {"description": "Not ready: the database is unreachable or at another schema."})
    return openapi
