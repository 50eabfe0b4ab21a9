"""The override search on Linux and Windows folder layouts, with the OS calls faked."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

import pygpukit_nvrtc as nvrtc
from pygpukit_nvrtc import _loader


class FakeLibrary:
    """Stands in for ctypes.CDLL: records the path, offers the NVRTC symbols as no-ops."""

    opened: ClassVar[list[str]] = []

    def __init__(self, path: str) -> None:
        FakeLibrary.opened.append(path)

    def __getattr__(self, name: str) -> object:
        return ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 0)


@pytest.fixture
def fake_os(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    added: list[str] = []
    FakeLibrary.opened = []
    monkeypatch.setattr(_loader.ctypes, "CDLL", FakeLibrary)
    monkeypatch.setattr(os, "add_dll_directory", added.append, raising=False)
    _loader._reset_for_tests()
    yield added
    _loader._reset_for_tests()


def test_windows_folder_layout_adds_only_the_dll_folder(
    fake_os: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "site-packages" / "nvidia" / "cu13" / "bin" / "x86_64"
    bin_dir.mkdir(parents=True)
    (bin_dir / "nvrtc64_130_0.dll").write_bytes(b"MZ")
    (bin_dir / "nvrtc-builtins64_130.dll").write_bytes(b"MZ")
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv(_loader.ENV_OVERRIDE, str(bin_dir))
    assert nvrtc.found_via() == "PYGPUKIT_NVRTC_PATH"
    assert Path(nvrtc.path()) == (bin_dir / "nvrtc64_130_0.dll").resolve()
    # nvrtc-builtins resolves from the DLL's own folder; the current directory is never added.
    assert fake_os == [str(bin_dir.resolve())]
    assert os.getcwd() not in fake_os
    assert FakeLibrary.opened == [str(bin_dir / "nvrtc64_130_0.dll")]


def test_linux_folder_layout_needs_no_dll_directory(
    fake_os: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lib_dir = tmp_path / "site-packages" / "nvidia" / "cu13" / "lib"
    lib_dir.mkdir(parents=True)
    (lib_dir / "libnvrtc.so.13").write_bytes(b"\x7fELF")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv(_loader.ENV_OVERRIDE, str(lib_dir))
    assert Path(nvrtc.path()) == (lib_dir / "libnvrtc.so.13").resolve()
    assert fake_os == []


def test_windows_folder_without_the_dll(
    fake_os: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv(_loader.ENV_OVERRIDE, str(tmp_path))
    assert not nvrtc.is_available()
    reason = nvrtc.unavailable_reason() or ""
    assert "nvrtc64_130_0.dll" in reason and fake_os == []
