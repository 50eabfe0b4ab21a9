"""NVRTC discovery against the real nvidia-cuda-nvrtc wheel (NVRTC needs no GPU)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import pygpukit_nvrtc as nvrtc
from pygpukit_nvrtc import _loader


@pytest.fixture(autouse=True)
def fresh_loader(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(_loader.ENV_OVERRIDE, raising=False)
    _loader._reset_for_tests()
    yield
    _loader._reset_for_tests()


def test_found_in_the_nvidia_wheel() -> None:
    assert nvrtc.is_available(), nvrtc.unavailable_reason()
    assert nvrtc.unavailable_reason() is None
    path = Path(nvrtc.path())
    assert path.is_file()
    assert path.name.startswith("libnvrtc.so")
    assert "nvidia" in path.parts and "site-packages" in path.parts
    assert nvrtc.found_via() == "site-packages"


def test_version_and_archs_come_from_the_library() -> None:
    major, minor = nvrtc.version()
    assert major == 13 and 0 <= minor < 100
    archs = nvrtc.supported_archs()
    assert archs == tuple(sorted(archs))
    assert {80, 86, 89, 90, 100, 120} <= set(archs)


def test_override_with_the_library_file(monkeypatch: pytest.MonkeyPatch) -> None:
    real = nvrtc.path()
    _loader._reset_for_tests()
    monkeypatch.setenv(_loader.ENV_OVERRIDE, real)
    assert nvrtc.found_via() == "PYGPUKIT_NVRTC_PATH"
    assert nvrtc.path() == str(Path(real).resolve())
    assert nvrtc.version()[0] == 13


def test_override_with_a_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path(nvrtc.path())
    _loader._reset_for_tests()
    monkeypatch.setenv(_loader.ENV_OVERRIDE, str(real.parent))
    assert Path(nvrtc.path()).parent == real.parent.resolve()


def test_override_to_missing_path_is_explained(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "nope" / "libnvrtc.so.13"
    monkeypatch.setenv(_loader.ENV_OVERRIDE, str(missing))
    assert not nvrtc.is_available()
    reason = nvrtc.unavailable_reason()
    assert reason is not None and str(missing) in reason
    with pytest.raises(nvrtc.NvrtcUnavailableError, match="no such file"):
        nvrtc.version()


def test_override_to_folder_without_nvrtc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(_loader.ENV_OVERRIDE, str(tmp_path))
    with pytest.raises(nvrtc.NvrtcUnavailableError, match="folder without"):
        nvrtc.path()


def test_override_to_a_file_that_is_not_a_library(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bogus = tmp_path / "libnvrtc.so.13"
    bogus.write_bytes(b"not an ELF file")
    monkeypatch.setenv(_loader.ENV_OVERRIDE, str(bogus))
    with pytest.raises(nvrtc.NvrtcUnavailableError, match="could not be loaded"):
        nvrtc.path()


def test_error_codes_are_translated() -> None:
    with pytest.raises(nvrtc.NvrtcError) as info:
        _loader._check("nvrtcCompileProgram", 6)  # NVRTC_ERROR_COMPILATION
    assert info.value.code == 6
    assert info.value.api == "nvrtcCompileProgram"
    assert "COMPILATION" in str(info.value)


def test_import_is_lazy() -> None:
    code = (
        "import pygpukit_nvrtc, pathlib; "
        "maps = pathlib.Path('/proc/self/maps').read_text(); "
        "assert 'libnvrtc' not in maps, 'imported eagerly'; "
        "pygpukit_nvrtc.version(); "
        "assert 'libnvrtc' in pathlib.Path('/proc/self/maps').read_text()"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
