"""Check the built wheels: their tags, and that no native library in them links CUDA.

Usage: python ci/check_wheels.py WHEEL... (prints a table; exits 1 on any problem)
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# Expected tags per distribution (regular expressions over "python-abi-platform").
EXPECTED_TAGS = {
    "pygpukit_driver": r"cp3\d+-cp3\d+-manylinux_\d+_\d+_x86_64(\.manylinux.*)?",
    "pygpukit_kernels": r"py3-none-manylinux_\d+_\d+_x86_64(\.manylinux.*)?",
    "pygpukit_sched": r"cp310-abi3-manylinux.*x86_64",
    "pygpukit_nvrtc": r"py3-none-any",
    "pygpukit": r"py3-none-any",
}
FORBIDDEN_NEEDED = re.compile(r"libcuda\.so|libcudart|libnvrtc")


def needed_libraries(binary: Path) -> list[str]:
    """Return the DT_NEEDED entries of an ELF shared object (via readelf)."""
    out = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def check(wheel: Path) -> list[str]:
    """Return the problems found in one wheel (empty when it is fine), printing its summary."""
    name, _version, tag = re.match(r"([^-]+)-([^-]+)-(.+)\.whl$", wheel.name).groups()  # type: ignore[union-attr]
    problems = []
    pattern = EXPECTED_TAGS.get(name)
    if pattern is None or not re.fullmatch(pattern, tag):
        problems.append(f"{wheel.name}: tag {tag} does not match {pattern}")
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as zf:
        members = [m for m in zf.namelist() if re.search(r"\.so(\.|$)", m)]
        for member in members:
            path = Path(zf.extract(member, tmp))
            needed = needed_libraries(path)
            bad = [n for n in needed if FORBIDDEN_NEEDED.search(n)]
            print(f"  {member}: NEEDED {', '.join(needed) or '(none)'}")
            if bad:
                problems.append(f"{wheel.name}: {member} links {bad} at load time")
    print(f"{wheel.name}: {wheel.stat().st_size / 1e6:.2f} MB, tag {tag}")
    return problems


def main(paths: list[str]) -> int:
    """Check every wheel given; return the exit status."""
    problems = [p for path in paths for p in check(Path(path))]
    for problem in problems:
        print(f"ERROR: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
