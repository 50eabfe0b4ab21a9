"""Check that the installed sibling packages are the exact versions this pygpukit was built with.

The five wheels are released together; a mix (say, a newer kernels wheel under an older
pygpukit) fails in confusing ways later, so importing pygpukit refuses it up front.
"""

from __future__ import annotations

import importlib.util
import os

#: Required siblings first, then the optional ones (extras ``jit`` and ``sched``).
REQUIRED = ("pygpukit-driver", "pygpukit-kernels")
OPTIONAL = ("pygpukit-nvrtc", "pygpukit-sched")


def installed_version(distribution: str) -> str | None:
    """Return the installed version of ``distribution``, or ``None`` if it is not installed.

    Reads the ``<name>-<version>.dist-info`` folder beside the package: importing
    ``importlib.metadata`` would cost more than the rest of ``import pygpukit``.
    """
    module = distribution.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        site = os.path.dirname(location)
        prefix = f"{module}-"
        for entry in os.listdir(site):
            if entry.startswith(prefix) and entry.endswith(".dist-info"):
                return entry[len(prefix):-len(".dist-info")]
    from importlib import metadata  # e.g. an egg-link or unusual layout: ask the slow way

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def find_clashes(expected: str) -> list[str]:
    """Describe every sibling whose installed version differs from ``expected``.

    A missing required sibling counts as a clash; a missing optional one does not.
    """
    problems = []
    for dist in REQUIRED + OPTIONAL:
        found = installed_version(dist)
        if found is None:
            if dist in REQUIRED:
                problems.append(f"{dist} is not installed (needs =={expected})")
        elif found != expected:
            problems.append(f"{dist} {found} is installed (needs =={expected})")
    return problems


def check_siblings(expected: str) -> None:
    """Raise ImportError naming every clash between pygpukit and its sibling packages."""
    problems = find_clashes(expected)
    if problems:
        listing = "; ".join(problems)
        raise ImportError(
            f"pygpukit {expected} cannot run with the installed sibling packages: {listing}. "
            f"Fix: pip install --force-reinstall 'pygpukit[all]=={expected}' "
            "(or without [all] if you do not use the jit/sched extras)"
        )
