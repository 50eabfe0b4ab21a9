"""Trace files: load, validate, and replay them through the scheduler."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from typing import Any

from pygpukit_sched._core import SimulationReport, run_simulation

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*$")
_TASK_KEYS = {
    "id",
    "name",
    "tenant",
    "arrival",
    "duration",
    "memory",
    "priority",
    "cancel_at",
    "fail",
}

TaskTuple = tuple[str, str, str, int, int, int, int, "int | None", bool]


class TraceError(ValueError):
    """A trace that does not follow the documented format."""


def parse_size(value: object, what: str = "size") -> int:
    """Return a byte count from an ``int`` or a string such as ``"4GiB"`` or ``"512 MB"``."""
    if isinstance(value, bool):
        raise TraceError(f"{what}: expected bytes, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise TraceError(f"{what}: negative size {value}")
        return value
    if isinstance(value, str):
        match = _SIZE.match(value)
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise TraceError(f"{what}: cannot parse size {value!r} (e.g. 4096, '512MiB', '4GiB')")
        return round(float(match.group(1)) * _UNITS[unit])
    raise TraceError(f"{what}: expected an int or a string such as '4GiB', got {value!r}")


def _seconds_to_ns(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TraceError(f"{what}: expected seconds (a number), got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise TraceError(f"{what}: expected a finite number of seconds >= 0, got {value!r}")
    return round(value * 1_000_000_000)


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceError(f"{what}: expected an int, got {value!r}")
    return value


def _task(index: int, raw: object) -> TaskTuple:
    where = f"tasks[{index}]"
    if not isinstance(raw, Mapping):
        raise TraceError(f"{where}: expected an object")
    unknown = set(raw) - _TASK_KEYS
    if unknown:
        raise TraceError(f"{where}: unknown keys {sorted(unknown)}")
    for key in ("id", "arrival", "duration", "memory"):
        if key not in raw:
            raise TraceError(f"{where}: missing {key!r}")
    task_id = raw["id"]
    if not isinstance(task_id, str) or not task_id:
        raise TraceError(f"{where}.id: expected a non-empty string")
    name = raw.get("name", task_id)
    tenant = raw.get("tenant", "")
    if not isinstance(name, str) or not isinstance(tenant, str):
        raise TraceError(f"{where}: name and tenant must be strings")
    cancel = raw.get("cancel_at")
    fail = raw.get("fail", False)
    if not isinstance(fail, bool):
        raise TraceError(f"{where}.fail: expected true or false")
    priority = _int(raw.get("priority", 0), f"{where}.priority")
    if not -(2**31) <= priority < 2**31:
        raise TraceError(f"{where}.priority: out of the 32-bit range")
    return (
        task_id,
        name,
        tenant,
        _seconds_to_ns(raw["arrival"], f"{where}.arrival"),
        _seconds_to_ns(raw["duration"], f"{where}.duration"),
        parse_size(raw["memory"], f"{where}.memory"),
        priority,
        None if cancel is None else _seconds_to_ns(cancel, f"{where}.cancel_at"),
        fail,
    )


def _quotas(raw: object) -> list[tuple[str, int | None, int | None]]:
    if not isinstance(raw, Mapping):
        raise TraceError("quotas: expected an object of tenant -> {memory, max_tasks}")
    out: list[tuple[str, int | None, int | None]] = []
    for tenant, quota in raw.items():
        if not isinstance(quota, Mapping) or set(quota) - {"memory", "max_tasks"}:
            raise TraceError(f"quotas[{tenant!r}]: expected {{'memory': ..., 'max_tasks': ...}}")
        memory = quota.get("memory")
        max_tasks = quota.get("max_tasks")
        out.append(
            (
                str(tenant),
                None if memory is None else parse_size(memory, f"quotas[{tenant!r}].memory"),
                None if max_tasks is None else _int(max_tasks, f"quotas[{tenant!r}].max_tasks"),
            )
        )
    return out


def load_trace(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a trace file (JSON) and return it as a ``dict`` (not yet validated)."""
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{os.fspath(path)}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TraceError(f"{os.fspath(path)}: the top level must be an object")
    return data


def simulate(trace: Mapping[str, Any] | str | os.PathLike[str]) -> SimulationReport:
    """Replay a trace (a ``dict``, or the path of a JSON file) through a :class:`Scheduler`.

    Raises :class:`TraceError` for a malformed trace. The replay is deterministic and runs
    with the GIL released.
    """
    if not isinstance(trace, Mapping):
        trace = load_trace(trace)
    unknown = set(trace) - {"capacity", "quotas", "tasks", "description"}
    if unknown:
        raise TraceError(f"unknown top-level keys {sorted(unknown)}")
    if "capacity" not in trace or "tasks" not in trace:
        raise TraceError("a trace needs 'capacity' and 'tasks'")
    tasks_raw = trace["tasks"]
    if not isinstance(tasks_raw, list):
        raise TraceError("tasks: expected a list")
    tasks = [_task(i, t) for i, t in enumerate(tasks_raw)]
    ids = [t[0] for t in tasks]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise TraceError(f"duplicate task ids: {dup}")
    capacity = parse_size(trace["capacity"], "capacity")
    return run_simulation(capacity, tasks, _quotas(trace.get("quotas", {})))
