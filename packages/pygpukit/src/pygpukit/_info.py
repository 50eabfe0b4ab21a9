"""``python -m pygpukit info``: what PyGPUkit finds on this machine."""

from __future__ import annotations

import platform
import sys
from typing import Any

from pygpukit._versions import OPTIONAL, REQUIRED, installed_version


def _driver_info() -> dict[str, Any]:
    import pygpukit_driver as drv

    info: dict[str, Any] = {"available": drv.is_available(), "library": drv.library_path()}
    if not info["available"]:
        info["reason"] = drv.unavailable_reason()
        info["devices"] = []
        return info
    version = drv.driver_version()
    info["version"] = f"{version // 1000}.{version % 1000 // 10}"
    devices = []
    for ordinal in range(drv.device_count()):
        dev = drv.Device(ordinal)
        devices.append({
            "ordinal": ordinal,
            "name": dev.name,
            "compute_capability": list(dev.compute_capability),
            "total_memory": dev.total_memory,
            "multiprocessor_count": dev.multiprocessor_count,
        })
    info["devices"] = devices
    return info


def _kernels_info(devices: list[dict[str, Any]]) -> dict[str, Any]:
    import pygpukit_kernels as pk

    build = pk.build_info()
    for dev in devices:
        dev["kernels"] = pk.covers(*dev["compute_capability"])
    return {
        "library": str(pk.library_path()),
        "sass_archs": list(build.sass_archs),
        "ptx_archs": list(build.ptx_archs),
        "nvcc": build.nvcc,
    }


def _nvrtc_info() -> dict[str, Any]:
    try:
        import pygpukit_nvrtc as nvrtc
    except ImportError:
        return {
            "available": False,
            "reason": "pygpukit-nvrtc is not installed (pip install pygpukit[jit])",
        }
    if not nvrtc.is_available():
        return {"available": False, "reason": nvrtc.unavailable_reason()}
    major, minor = nvrtc.version()
    return {
        "available": True,
        "version": f"{major}.{minor}",
        "path": nvrtc.path(),
        "found_via": nvrtc.found_via(),
    }


def _nccl_info() -> dict[str, Any]:
    """NCCL for pygpukit.distributed (the nccl extra): loaded here, as NVRTC is above."""
    from pygpukit import _nccl_lib

    try:
        major, minor, patch = _nccl_lib.version()
    except _nccl_lib.NcclUnavailableError as exc:
        return {"available": False, "reason": str(exc)}
    except _nccl_lib.NcclError as exc:
        return {"available": False, "reason": f"loaded, but {exc}"}
    return {
        "available": True,
        "version": f"{major}.{minor}.{patch}",
        "path": _nccl_lib.path(),
        "found_via": _nccl_lib.found_via(),
    }


def collect() -> dict[str, Any]:
    """Gather the facts ``info`` prints, as a JSON-serializable dict."""
    import ml_dtypes
    import numpy as np

    from pygpukit import __version__
    from pygpukit._backend import get_backend

    driver = _driver_info()
    kernels = _kernels_info(driver["devices"])
    backend = get_backend()
    return {
        "pygpukit": __version__,
        "packages": {d: installed_version(d) for d in REQUIRED + OPTIONAL},
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": np.__version__,
        "ml_dtypes": ml_dtypes.__version__,
        "driver": driver,
        "kernels": kernels,
        "nvrtc": _nvrtc_info(),
        "nccl": _nccl_info(),
        "backend": {"name": backend.name, "description": backend.describe()},
    }


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.1f} GiB"


def format_text(info: dict[str, Any]) -> str:
    """Render :func:`collect`'s result for people."""
    pkgs = ", ".join(f"{d} {v or '(not installed)'}" for d, v in info["packages"].items())
    lines = [
        f"PyGPUkit {info['pygpukit']}  ({pkgs})",
        f"Python {info['python']} on {info['platform']}; numpy {info['numpy']}, "
        f"ml_dtypes {info['ml_dtypes']}",
    ]
    drv = info["driver"]
    if drv["available"]:
        lines.append(f"CUDA driver: {drv['version']}  ({drv['library']})")
    else:
        lines.append(f"CUDA driver: not available: {drv['reason']}")
    for dev in drv["devices"]:
        major, minor = dev["compute_capability"]
        covered = {"sass": "SASS shipped", "ptx": "runs shipped PTX (JIT by the driver)"}.get(
            dev["kernels"], "NOT covered by the shipped kernels"
        )
        lines.append(
            f"  device {dev['ordinal']}: {dev['name']}, compute capability {major}.{minor}, "
            f"{_gib(dev['total_memory'])}, {dev['multiprocessor_count']} SMs; kernels: {covered}"
        )
    k = info["kernels"]
    sass = " ".join(f"sm_{a}" for a in k["sass_archs"])
    ptx = " ".join(f"compute_{a}" for a in k["ptx_archs"])
    lines.append(f"Kernels: SASS {sass}; PTX {ptx}  (nvcc {k['nvcc']})")
    nv = info["nvrtc"]
    if nv["available"]:
        lines.append(f"NVRTC: {nv['version']}  ({nv['path']}, found via {nv['found_via']})")
    else:
        lines.append(f"NVRTC: not available: {nv['reason']}")
    nc = info["nccl"]
    if nc["available"]:
        lines.append(f"NCCL: {nc['version']}  ({nc['path']}, found via {nc['found_via']})")
    else:
        lines.append(f"NCCL: not available: {nc['reason']}")
    lines.append(f"Backend: {info['backend']['description']}")
    return "\n".join(lines)
