"""Check what each install of the matrix brings, using the wheels in DIST.

- ``pip install pygpukit-sched`` alone: installs nothing else; imports without numpy.
- ``pip install pygpukit``: driver + kernels + numpy + ml_dtypes + opt_einsum, and not nvrtc.
- ``pip install pygpukit[jit]``: adds pygpukit-nvrtc and nvidia-cuda-nvrtc.

Usage: python ci/check_install_matrix.py DIST
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import venv
from pathlib import Path


def run(*args: str) -> str:
    """Run a command, return its stdout; fail loudly with its output."""
    result = subprocess.run(args, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(args)}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def sched_alone(dist: Path) -> None:
    """Install the sched wheel into an empty venv with no index: nothing else may come."""
    wheel = next(dist.glob("pygpukit_sched-*.whl"))
    with tempfile.TemporaryDirectory() as tmp:
        venv.create(tmp, with_pip=True)
        python = str(Path(tmp) / "bin" / "python")
        before = {p["name"] for p in json.loads(run(python, "-m", "pip", "list", "--format=json"))}
        run(python, "-m", "pip", "install", "--no-index", str(wheel))
        after = {p["name"] for p in json.loads(run(python, "-m", "pip", "list", "--format=json"))}
        added = after - before
        assert added == {"pygpukit-sched"}, f"sched alone also installed {added}"
        run(python, "-c", "import pygpukit_sched, sys; pygpukit_sched.MemoryPool(1 << 20, True); "
                          "assert 'numpy' not in sys.modules")
        probe = subprocess.run([python, "-c", "import numpy"], capture_output=True, check=False)
        assert probe.returncode != 0, "numpy is importable in the sched-only venv"
    print("pip install pygpukit-sched: installs only pygpukit-sched; imports without numpy")


def resolve(dist: Path, requirement: str) -> set[str]:
    """Names pip would install for ``requirement`` into an empty environment."""
    report = run(sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                 "--ignore-installed", "--find-links", str(dist), "--report", "-", requirement)
    # Canonical names (PEP 503): ml_dtypes and ml-dtypes are one project.
    return {re.sub(r"[-_.]+", "-", item["metadata"]["name"]).lower()
            for item in json.loads(report)["install"]}


def main(dist: Path) -> None:
    """Check the three installs of the matrix."""
    sched_alone(dist)
    version = next(dist.glob("pygpukit-*.whl")).name.split("-")[1]
    base = resolve(dist, f"pygpukit=={version}")
    expected = {"pygpukit", "pygpukit-driver", "pygpukit-kernels", "numpy", "ml-dtypes",
                "opt-einsum"}
    assert base == expected, f"pip install pygpukit brings {sorted(base)}"
    print(f"pip install pygpukit: {sorted(base)}")
    jit = resolve(dist, f"pygpukit[jit]=={version}")
    assert {"pygpukit-nvrtc", "nvidia-cuda-nvrtc"} <= jit - base, sorted(jit - base)
    assert "pygpukit-sched" not in jit
    print(f"pip install pygpukit[jit] adds: {sorted(jit - base)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
