"""Routes of task types, tasks and task runs (the generic scheduler).

Bodies use the shapes of the CLI's ``--json``: a task type under the task model's
field names (durations in seconds, or written ``1d``, ``12h``, ``P1DT2H``), a
task with ``type``, ``arguments`` (``{"args": [...], "kwargs": {...}}``),
``policy``, ``priority``, ``next_run`` (ISO 8601, ``now`` or ``+2h``) and
``current_interval``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from ..domain.durations import parse_duration, parse_time
from ..domain.errors import NotFoundError, ValidationError
from ..domain.tasks import (
    NewTask,
    TaskArguments,
    TaskType,
    parse_policy,
    parse_priority,
    parse_run_status,
    parse_status,
)
from .bodies import MAX_ID, TaskBody, TaskTypeBody, TaskTypePatchBody
from .request_handling import (
    ADMIN,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    READ,
    ApiContext,
    check_object,
    context,
    in_range,
    int_cursor,
    page,
)

router = APIRouter(prefix="/api/v1", tags=["tasks"])

_DURATIONS = ("default_interval", "min_interval", "max_interval", "retry_delay")
_TASK_TYPE_FIELDS = {"type", "description", "backend_name", "backoff_factor", "max_queue_length", "num_retries", *_DURATIONS}
_TASK_FIELDS = {"type", "arguments", "policy", "priority", "next_run", "current_interval"}


def task_type_from_dict(body: Any) -> TaskType:
    """A task type from a JSON object, checked; ValidationError names the field."""
    data = check_object(body, _TASK_TYPE_FIELDS, "a task type")
    for required in ("type", "backend_name"):
        if data.get(required) is None:
            raise ValidationError(required, "a value (the field is required)", None)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ValidationError("description", "text", description)
    durations = {name: None if data.get(name) is None else parse_duration(data[name], name) for name in _DURATIONS}
    backoff = data.get("backoff_factor")
    if isinstance(backoff, int) and not isinstance(backoff, bool):
        backoff = float(backoff)
    return TaskType(type=data["type"], description=description, backend_name=data["backend_name"],
                    backoff_factor=backoff, max_queue_length=data.get("max_queue_length"),
                    num_retries=data.get("num_retries"), **durations).validated()


@router.get("/task-types", dependencies=READ, summary="List task types, by name")
def list_task_types(limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT), after: str | None = Query(None),
                    ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    known = [t for t in ctx.store.list_task_types() if after is None or t.type > after]
    return page(known[:limit + 1], limit, lambda t: t.type, TaskType.to_dict)


@router.get("/task-types/{type_name}", dependencies=READ, summary="One task type")
def get_task_type(type_name: str, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    found = ctx.store.get_task_type(type_name)
    if found is None:
        raise NotFoundError("task type", type_name)
    return found.to_dict()


@router.post("/task-types", dependencies=ADMIN, status_code=201, summary="Declare a task type")
def create_task_type(request: Request, body: TaskTypeBody = Body(..., examples=[{
        "type": "load-git", "backend_name": "mypkg.loaders:load_git", "description": "Update a git origin",
        "default_interval": "1d", "min_interval": "12h", "max_interval": "64d", "backoff_factor": 2,
        "max_queue_length": 5000, "num_retries": 3, "retry_delay": "1h"}]),
        ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    added = ctx.store.add_task_type(task_type_from_dict(body.fields()), ctx.clock.now(),
                                    actor=request.state.token["name"])
    return added.to_dict()


@router.patch("/task-types/{type_name}", dependencies=ADMIN, summary="Change a task type's knobs: the fields given")
def update_task_type(type_name: str, request: Request, body: TaskTypePatchBody = Body(..., examples=[{
        "max_interval": "32d", "backoff_factor": None}]), ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    held = ctx.store.get_task_type(type_name)
    if held is None:
        raise NotFoundError("task type", type_name)
    given = body.fields()
    if "description" in given and given["description"] is None:
        raise ValidationError("description", "text (it cannot be cleared)", None)
    if "backend_name" in given and given["backend_name"] is None:
        raise ValidationError("backend_name", "the callable its workers run (it cannot be cleared)", None)
    merged = task_type_from_dict({**held.to_dict(), **given, "type": type_name})
    return ctx.store.update_task_type(merged, ctx.clock.now(), fields=sorted(given),
                                      actor=request.state.token["name"]).to_dict()


@router.delete("/task-types/{type_name}", dependencies=ADMIN, status_code=204,
               summary="Delete a task type no task and no schedule uses (409 naming its users otherwise)")
def delete_task_type(type_name: str, request: Request, ctx: ApiContext = Depends(context)) -> Response:
    ctx.store.delete_task_type(type_name, ctx.clock.now(), actor=request.state.token["name"])
    return Response(status_code=204)


@router.get("/tasks", dependencies=READ, summary="Search tasks, by id")
def list_tasks(type: str | None = Query(None, description="Only tasks of this type."),
               status: list[str] = Query([], description="Only these statuses."),
               policy: str | None = Query(None, description="oneshot or recurring."),
               priority: list[str] = Query([], description="Only these priorities (high, normal, low, none)."),
               before: str | None = Query(None, description="Only tasks whose next run is at or before this time."),
               limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT), after: str | None = Query(None),
               ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    if type is not None and ctx.store.get_task_type(type) is None:
        raise ValidationError("type", "a known task type", type)
    found = ctx.store.search_tasks(
        task_type=type, status=[parse_status(s) for s in status] or None,
        policy=parse_policy(policy) if policy is not None else None,
        priority=[parse_priority(p) for p in priority] or None,
        before=in_range(parse_time(before, ctx.clock.now(), "before"), "before") if before is not None else None,
        after_id=int_cursor(after), limit=limit + 1)
    return page(found, limit, lambda t: t.id, lambda t: t.to_dict())


@router.post("/tasks", dependencies=ADMIN, status_code=201, summary="Create a task (an equal pending one is returned)",
             responses={200: {"description": "An equal pending task existed: it is returned, created false"}})
def create_task(body: TaskBody = Body(..., examples=[{
        "type": "load-git", "arguments": {"args": [], "kwargs": {"url": "https://github.com/turtl/mobile"}},
        "policy": "oneshot", "priority": "high", "next_run": "now"}]),
        ctx: ApiContext = Depends(context)) -> Any:
    data = check_object(body.fields(), _TASK_FIELDS, "a task")
    if data.get("type") is None:
        raise ValidationError("type", "a value (the field is required)", None)
    if not isinstance(data["type"], str):
        raise ValidationError("type", "a task type name", data["type"])
    now = ctx.clock.now()
    next_run = in_range(parse_time(data.get("next_run") or "now", now, "next_run"), "next_run")
    interval = data.get("current_interval")
    new = NewTask(type=data["type"], next_run=next_run, arguments=TaskArguments.parse(data.get("arguments")),
                  policy=parse_policy(data.get("policy") or "recurring"), priority=parse_priority(data.get("priority")),
                  current_interval=None if interval is None else parse_duration(interval, "current_interval"))
    [stored] = ctx.store.create_tasks([new])
    # a new task carries the next_run asked for; an existing pending duplicate keeps its own
    created = stored.next_run == next_run
    return JSONResponse({**stored.to_dict(), "created": created}, status_code=201 if created else 200)


@router.get("/tasks/{task_id}", dependencies=READ, summary="One task")
def get_task(task_id: int = Path(..., ge=1, le=MAX_ID), ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    found = ctx.store.get_tasks([task_id])
    if not found:
        raise NotFoundError("task", task_id)
    return found[0].to_dict()


@router.get("/task-runs", dependencies=READ, summary="List task runs, by id")
def list_task_runs(task: int | None = Query(None, ge=1, le=MAX_ID, description="Only the runs of this task."),
                   status: list[str] = Query([], description="Only these statuses."),
                   limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT), after: str | None = Query(None),
                   ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    runs = ctx.store.list_task_runs(task_id=task, status=[parse_run_status(s) for s in status] or None,
                                    after_id=int_cursor(after), limit=limit + 1)
    return page(runs, limit, lambda r: r.id, lambda r: r.to_dict())
