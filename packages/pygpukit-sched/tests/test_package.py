import importlib.metadata
import subprocess
import sys

import pygpukit_sched as s
from pygpukit_sched import _core


def test_version_matches_metadata_and_native_module() -> None:
    # Cargo spells PEP 440's X.Y.Z.devN as the semver X.Y.Z-devN.
    assert _core.__version__.replace("-dev", ".dev") == s.__version__
    assert importlib.metadata.version("pygpukit-sched") == s.__version__


def test_no_runtime_dependencies() -> None:
    assert importlib.metadata.requires("pygpukit-sched") in (None, [])


def test_import_does_not_pull_numpy_or_gpu_packages() -> None:
    code = (
        "import sys, pygpukit_sched; "
        "bad = [m for m in ('numpy', 'pygpukit', 'pygpukit_driver') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_public_names() -> None:
    for name in s.__all__:
        assert hasattr(s, name), name
    assert set(_core.__all__) <= set(s.__all__)
    assert issubclass(s.QuotaExceededError, MemoryError)
    assert issubclass(s.InvalidBlockError, ValueError)
    assert s.MemoryPool.__module__ == "pygpukit_sched"


def test_size_class_constants() -> None:
    assert s.MIN_BLOCK_SIZE == 512
    assert s.SMALL_LIMIT == 1 << 20
    assert s.LARGE_GRANULE == 2 << 20


def test_native_module_is_abi3() -> None:
    assert ".abi3." in _core.__file__
