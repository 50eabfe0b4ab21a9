"""Check the built wheels: their tags, that no native library in them links CUDA, that each
needs no glibc newer than its manylinux tag promises, nor newer than MAX_GLIBC, and that the
kernels' library exports its C ABI and nothing else.

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
# The oldest glibc the platform wheels must install on (manylinux_2_28: RHEL 8, Ubuntu 20.04+,
# Debian 11+); the builds link with zig against glibc 2.28 stubs to meet it (the kernels: g++
# compiles, zig links, see packages/pygpukit-kernels/cmake/OldGlibcLink.cmake).
MAX_GLIBC = (2, 28)
# The wheels held to it: every wheel with native code.
FLOORED = {"pygpukit_driver", "pygpukit_kernels", "pygpukit_sched"}
GLIBC_VERSION = re.compile(r"\bGLIBC_(\d+)\.(\d+)")
# What a library may export (its dynamic symbol table's defined, default-visibility symbols):
# the kernels' C ABI only; their static libstdc++ and cudart must stay local.
EXPORTS = {"pygpukit_kernels": re.compile(r"pgk_\w+")}


def glibc_needed(binary: Path) -> tuple[int, int]:
    """Return the newest GLIBC_x.y symbol version an ELF object needs (via objdump -T)."""
    out = subprocess.run(["objdump", "-T", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    return max(((int(a), int(b)) for a, b in GLIBC_VERSION.findall(out)), default=(0, 0))


def exported_symbols(binary: Path) -> list[str]:
    """Return the names an ELF shared object exports (defined global/weak dynamic symbols)."""
    out = subprocess.run(["readelf", "--dyn-syms", "--wide", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    names = []
    for line in out.splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name[@version]
        if (len(fields) == 8 and fields[0].endswith(":") and fields[4] in ("GLOBAL", "WEAK")
                and fields[5] in ("DEFAULT", "PROTECTED") and fields[6] != "UND"):
            names.append(fields[7].split("@")[0])
    return names


def tag_glibc(tag: str) -> tuple[int, int] | None:
    """Return the glibc version of a wheel's manylinux tag (the oldest of several), if any."""
    found = [(int(a), int(b)) for a, b in re.findall(r"manylinux_(\d+)_(\d+)_", tag)]
    found += [{"1": (2, 5), "2010": (2, 12), "2014": (2, 17)}[legacy]
              for legacy in re.findall(r"manylinux(1|2010|2014)_", tag)]
    return min(found) if found else None


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
    promised = tag_glibc(tag)
    if name in FLOORED and (promised is None or promised > MAX_GLIBC):
        problems.append(f"{wheel.name}: tag {tag} promises no glibc {MAX_GLIBC[0]}."
                        f"{MAX_GLIBC[1]} (was it built without zig?)")
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as zf:
        members = [m for m in zf.namelist() if re.search(r"\.so(\.|$)", m)]
        for member in members:
            path = Path(zf.extract(member, tmp))
            needed = needed_libraries(path)
            bad = [n for n in needed if FORBIDDEN_NEEDED.search(n)]
            glibc = glibc_needed(path)
            print(f"  {member}: NEEDED {', '.join(needed) or '(none)'}; "
                  f"newest GLIBC_{glibc[0]}.{glibc[1]}")
            if bad:
                problems.append(f"{wheel.name}: {member} links {bad} at load time")
            if promised is not None and glibc > promised:
                problems.append(f"{wheel.name}: {member} needs GLIBC_{glibc[0]}.{glibc[1]}, "
                                f"newer than its tag promises")
            elif name in FLOORED and glibc > MAX_GLIBC:
                problems.append(f"{wheel.name}: {member} needs GLIBC_{glibc[0]}.{glibc[1]}, "
                                f"newer than glibc {MAX_GLIBC[0]}.{MAX_GLIBC[1]}")
            allowed = EXPORTS.get(name)
            if allowed is not None:
                exported = exported_symbols(path)
                extra = sorted(s for s in exported if not allowed.fullmatch(s))
                if not exported:
                    problems.append(f"{wheel.name}: {member} exports nothing")
                elif extra:
                    problems.append(f"{wheel.name}: {member} exports {len(extra)} symbols "
                                    f"beyond {allowed.pattern}, e.g. {extra[:5]}")
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
