"""All five packages share one version: pyprojects, Cargo crates, __version__, sibling pins."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    """Print every version found; exit 1 if they disagree."""
    found: dict[str, str] = {}
    for pyproject in sorted(ROOT.glob("packages/*/pyproject.toml")):
        data = tomllib.loads(pyproject.read_text())
        found[str(pyproject.relative_to(ROOT))] = data["project"]["version"]
        for dep in data["project"].get("dependencies", []) + [
            d for ds in data["project"].get("optional-dependencies", {}).values() for d in ds
        ]:
            if dep.startswith("pygpukit-"):
                found[f"{pyproject.relative_to(ROOT)} pin {dep}"] = dep.split("==", 1)[-1]
    for init in sorted(ROOT.glob("packages/*/src/*/__init__.py")):
        match = re.search(r'^__version__ = "([^"]+)"', init.read_text(), re.M)
        if match:
            found[str(init.relative_to(ROOT))] = match.group(1)
    for cargo in sorted(ROOT.glob("packages/*/crates/*/Cargo.toml")):
        version = tomllib.loads(cargo.read_text())["package"]["version"]
        # Cargo spells PEP 440's 0.3.0.dev0 as the semver 0.3.0-dev0.
        found[str(cargo.relative_to(ROOT))] = version.replace("-dev", ".dev")
    versions = set(found.values())
    for where, version in found.items():
        print(f"{version:12} {where}")
    if len(versions) != 1:
        print(f"ERROR: versions disagree: {sorted(versions)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
