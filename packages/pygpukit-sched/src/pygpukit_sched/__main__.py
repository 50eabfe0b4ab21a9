"""Command line: ``python -m pygpukit_sched simulate TRACE.json [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from pygpukit_sched import __version__
from pygpukit_sched._trace import TraceError, load_trace, parse_size, simulate


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:.3f}s"


def _cmd_simulate(args: argparse.Namespace) -> int:
    try:
        trace = load_trace(args.trace)
        report = simulate(trace)
    except (OSError, TraceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stats = report.stats
    summary = {
        "makespan_ns": report.makespan_ns,
        "started": report.started,
        "mean_wait_ns": report.mean_wait_ns,
        "max_wait_ns": report.max_wait_ns,
        "utilization": report.utilization,
        "unscheduled": report.unscheduled,
    }
    if args.json:
        out = {
            "trace": str(args.trace),
            "version": __version__,
            "events": [
                {"time_ns": t, "time": t / 1e9, "event": kind, "task": task, "detail": detail}
                for t, kind, task, detail in report.events
            ],
            "stats": stats,
            **summary,
        }
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    capacity = parse_size(trace["capacity"], "capacity")
    print(
        f"pygpukit-sched {__version__} simulate {args.trace}: capacity {_size(capacity)}, "
        f"{len(trace['tasks'])} tasks"
    )
    print(f"{'time':>10}  {'event':<9} {'task':<16} detail")
    for t, kind, task, detail in report.events:
        print(f"{_seconds(t):>10}  {kind:<9} {task:<16} {detail}")
    print()
    print("stats: " + " ".join(f"{k}={v}" for k, v in stats.items()))
    print(
        f"makespan {_seconds(report.makespan_ns)}, started {report.started}, "
        f"mean wait {_seconds(report.mean_wait_ns)}, max wait {_seconds(report.max_wait_ns)}, "
        f"utilization {report.utilization:.1%}"
    )
    if report.unscheduled:
        print("never scheduled: " + ", ".join(report.unscheduled))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m pygpukit_sched",
        description="PyGPUkit's Rust scheduler, standalone (no GPU needed).",
    )
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="replay a JSON trace of task arrivals")
    sim.add_argument("trace", help="path of the trace (JSON; see the package README)")
    sim.add_argument("--json", action="store_true", help="print the result as JSON")
    sim.set_defaults(func=_cmd_simulate)
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
