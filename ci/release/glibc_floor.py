"""Install the release wheels into an old Linux (Debian 11 "bullseye", glibc 2.31) and use them.

Usage (as root): python ci/release/glibc_floor.py WHEEL_DIR [--cache DIR]

The manylinux_2_28 tags are a promise about the oldest glibc our binaries load on; this test keeps
it by running them on a glibc older than this machine's (Debian 12, 2.36), in a chroot:

1. ``debootstrap`` a minimal bullseye root file system into the cache (once, then reused).
2. A CPython >= 3.10 that runs there.  Bullseye's own python3 is 3.9 (we require 3.10), the
   pyenv interpreters of this machine link glibc 2.36 (they would not start there), and no
   relocatable interpreter can be fetched (only package registries are reachable, and PyPI
   hosts no CPython builds).  So CPython is compiled inside the chroot, with bullseye's gcc
   against its glibc 2.31, from the pristine upstream tarball of Debian's ``python3.11`` source
   package (``apt-get source``, a Debian package like any other): about five minutes on two
   cores, once; cached under /opt in the root file system.
3. numpy, ml_dtypes and opt_einsum wheels for that interpreter are downloaded here
   (``pip download``, cached), so the install inside the root needs no index: ``pip install
   --no-index --find-links`` with the release wheels, exactly as a user with a wheelhouse would.
4. A fresh venv in the root: ``pip install pygpukit[sched]==<version>`` (driver, kernels and
   scheduler: every wheel with native code), then import each and run the CPU backend and
   ``python -m pygpukit info``.

Needs root (debootstrap, chroot) and ``debootstrap`` (installed with apt-get when missing and
apt-get is there).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SUITE = "bullseye"
MIRROR = "http://deb.debian.org/debian"
# Where bullseye gets the CPython source from: the suite whose python3.11 package we build.
SOURCE_SUITE = "bookworm"
SOURCE_PACKAGE = "python3.11"
PREFIX = "/opt/python3.11"
# What building CPython needs inside the root (zlib for pip, ffi for ctypes, bz2/lzma for
# tarfile); ca-certificates and libssl so that pip itself imports cleanly.
BUILD_PACKAGES = ("build-essential", "dpkg-dev", "xz-utils", "zlib1g-dev", "libffi-dev",
                  "libbz2-dev", "liblzma-dev", "libssl-dev", "ca-certificates")
# The same smoke test `nox -s release` runs in a venv of each CPython here.
SMOKE = Path(__file__).with_name("smoke.py")


def log(message: str) -> None:
    """Print one progress line (flushed: nox interleaves our output with its own)."""
    print(f"[glibc-floor] {message}", flush=True)


def run(cmd: list[str], **kwargs: object) -> None:
    """Run a command, echoing it; raise on failure."""
    log("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


def in_root(root: Path, script: str, env: dict[str, str] | None = None) -> None:
    """Run a shell script inside the chroot with a clean environment."""
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/root",
            "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
    run(["chroot", str(root), "/usr/bin/env", "-i",
         *[f"{k}={v}" for k, v in {**base, **(env or {})}.items()],
         "/bin/sh", "-euxc", script])


def ensure_tools() -> None:
    """Check for root and debootstrap (installing it from Debian's packages when we can)."""
    if os.geteuid() != 0:
        sys.exit("glibc-floor test: needs root (debootstrap and chroot)")
    if shutil.which("debootstrap") is None:
        if shutil.which("apt-get") is None:
            sys.exit("glibc-floor test: needs debootstrap (a Debian/Ubuntu package)")
        log("debootstrap missing: installing it from Debian's packages")
        run(["apt-get", "update", "-qq"])
        run(["apt-get", "install", "-y", "-qq", "debootstrap"])


def ensure_root(cache: Path) -> Path:
    """Return the bullseye root file system, bootstrapping it the first time."""
    root = cache / f"{SUITE}-rootfs"
    if (root / "etc" / "debian_version").is_file():
        return root
    staging = cache / f"{SUITE}-rootfs.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    run(["debootstrap", "--variant=minbase", f"--include={','.join(BUILD_PACKAGES)}", SUITE,
         str(staging), MIRROR])
    staging.rename(root)  # only a complete root is ever reused
    return root


def ensure_python(root: Path) -> str:
    """Return the path (inside the root) of a CPython >= 3.10 built there, building it once."""
    python = f"{PREFIX}/bin/python3"
    if (root / python.lstrip("/")).is_file():
        return python
    shutil.copy2("/etc/resolv.conf", root / "etc" / "resolv.conf")  # apt needs DNS in the root
    (root / "etc/apt/sources.list.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/apt/sources.list.d/cpython-source.list").write_text(
        f"deb-src {MIRROR} {SOURCE_SUITE} main\n")
    # The upstream tarball only (Debian's patches target Debian's /usr layout), configured
    # without PGO: a test interpreter, built in minutes.
    in_root(root, f"""
        apt-get update -qq
        rm -rf /usr/src/cpython && mkdir -p /usr/src/cpython && cd /usr/src/cpython
        apt-get source --download-only -qq {SOURCE_PACKAGE}
        tar -xf {SOURCE_PACKAGE}_*.orig.tar.* --strip-components=1
        ./configure --prefix={PREFIX} --without-ensurepip > configure.log
        make -j$(nproc) > make.log 2>&1
        make install > install.log 2>&1
        {PREFIX}/bin/python3 -m ensurepip --default-pip
        cd / && rm -rf /usr/src/cpython
    """)
    return python


def python_version(root: Path, python: str) -> str:
    """Return 'X.Y' of the interpreter inside the root."""
    out = subprocess.run(["chroot", str(root), python, "-c",
                          "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout
    return out.strip()


def ensure_wheelhouse(cache: Path, version: str) -> Path:
    """Download numpy, ml_dtypes and opt_einsum wheels for that interpreter and glibc (cached)."""
    house = cache / f"wheelhouse-cp{version.replace('.', '')}-glibc2.31"
    if not all(any(house.glob(f"{name}-*.whl")) for name in ("numpy", "ml_dtypes",
                                                             "opt_einsum")):
        run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
             "--python-version", version,
             # pip matches these tags literally (no "and older"): every one glibc 2.31 runs.
             *[f"--platform={tag}_x86_64" for tag in ("manylinux2014", "manylinux_2_17",
                                                     "manylinux_2_27", "manylinux_2_28")],
             "-d", str(house), "numpy>=1.24", "ml_dtypes>=0.4", "opt_einsum>=3.3"])
    return house


def main() -> int:
    """Set the old root up (cached) and smoke-test the wheels in WHEEL_DIR inside it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", type=Path, help="folder with the release wheels")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get(
        "PYGPUKIT_BUILD_CACHE", Path.home() / ".cache" / "pygpukit-build")))
    args = parser.parse_args()
    ensure_tools()
    root = ensure_root(args.cache)
    python = ensure_python(root)
    version = python_version(root, python)
    glibc = subprocess.run(["chroot", str(root), "/usr/bin/ldd", "--version"],
                           capture_output=True, text=True, check=True).stdout.splitlines()[0]
    log(f"root {root}: {glibc}; CPython {version} at {python}")
    house = ensure_wheelhouse(args.cache, version)
    meta = sorted(args.wheels.glob("pygpukit-*-py3-none-any.whl"))
    if len(meta) != 1:
        sys.exit(f"glibc-floor test: expected one pygpukit wheel in {args.wheels}, found {meta}")
    pin = re.match(r"pygpukit-([^-]+)-", meta[0].name).group(1)  # type: ignore[union-attr]
    # Fresh copies every run: the wheels under test, then a venv made from nothing.
    work = root / "tmp" / "pgk-floor"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(args.wheels, work / "wheels",
                    ignore=shutil.ignore_patterns("*.tar.gz", "*.zip"))
    shutil.copytree(house, work / "house")
    shutil.copy2(SMOKE, work / "smoke.py")
    # The driver binding and the scheduler alone first (they need nothing else), so a failure
    # of the whole install below still tells which wheels do load there.
    in_root(root, f"""
        {python} -m venv /tmp/pgk-floor/venv
        cd /tmp/pgk-floor
        venv/bin/python -m pip install -q --no-index --find-links wheels \\
            "pygpukit-driver=={pin}" "pygpukit-sched=={pin}"
        venv/bin/python -c "import pygpukit_driver._driver, pygpukit_sched._core"
        venv/bin/python -m pip install -q --no-index --find-links wheels --find-links house \\
            "pygpukit[sched]=={pin}"
        venv/bin/python smoke.py
        venv/bin/python -m pygpukit info
    """, env={"PYGPUKIT_BACKEND": "cpu"})
    shutil.rmtree(work, ignore_errors=True)
    log(f"OK: the wheels install and run on {glibc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
