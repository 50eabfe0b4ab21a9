"""Command line: ``python -m pygpukit info [--json]`` and ``python -m pygpukit demo``."""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    """Run the ``pygpukit`` command line; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m pygpukit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="driver, devices, kernels, NVRTC and backend in use")
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    demo = sub.add_parser("demo", help="a small computation checked against NumPy")
    demo.add_argument("--size", type=int, default=10_000_000, help="elements (default 10**7)")
    args = parser.parse_args(argv)

    if args.command == "info":
        from pygpukit._info import collect, format_text

        facts = collect()
        print(json.dumps(facts, indent=2) if args.json else format_text(facts))
        return 0
    from pygpukit._demo import run

    return 0 if run(args.size) else 1


if __name__ == "__main__":
    sys.exit(main())
