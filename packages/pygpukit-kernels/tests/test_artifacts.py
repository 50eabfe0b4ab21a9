"""What the kernels wheel ships, checked without a GPU."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import pygpukit_kernels as pk

EXPECTED_SASS = (80, 86, 89, 90, 100, 120)


def test_build_covers_every_supported_arch() -> None:
    info = pk.build_info()
    assert info.abi == pk.ABI_VERSION == 5
    assert info.sass_archs == EXPECTED_SASS
    assert info.ptx_archs == (120,)  # PTX for the newest arch, JIT-able by future drivers
    assert info.nvcc.startswith("13.0.")


@pytest.mark.parametrize(
    ("cc", "expected"),
    [((8, 0), "sass"), ((8, 6), "sass"), ((8, 7), "sass"), ((8, 9), "sass"), ((9, 0), "sass"),
     ((10, 0), "sass"), ((10, 3), "sass"), ((12, 0), "sass"), ((12, 1), "sass"),
     ((13, 0), "ptx"), ((7, 5), None), ((7, 0), None)],
)
def test_coverage_rules(cc: tuple[int, int], expected: str | None) -> None:
    assert pk.covers(*cc) == expected


def _needed_libraries(path: str) -> list[str]:
    tool = shutil.which("readelf") or shutil.which("objdump")
    if tool is None:
        pytest.fail("readelf/objdump (binutils) is needed to inspect the library")
    flag = "-d" if tool.endswith("readelf") else "-p"
    dump = subprocess.run([tool, flag, path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"NEEDED\)?\s+(?:Shared library: \[)?([^\]\s]+)", dump)


def test_library_needs_neither_libcuda_nor_libcudart() -> None:
    needed = _needed_libraries(str(pk.library_path()))
    assert needed, "no NEEDED entries parsed: the check would be vacuous"
    assert not [n for n in needed if "cuda" in n], needed
    # cudart and libstdc++ are linked statically: only the C library remains, and libgcc_s
    # (the unwinder, on every glibc system; cmake/OldGlibcLink.cmake says why not static).
    assert set(needed) <= {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0",
                           "librt.so.1", "ld-linux-x86-64.so.2", "libgcc_s.so.1"}, needed


def test_library_loads_without_a_gpu_and_exports_the_abi() -> None:
    lib = pk.load()
    assert lib.pgk_abi_version() == 5
    for symbol in ("pgk_add_f32", "pgk_build_info", "pgk_error_name", "pgk_error_string",
                   "pgk_copy", "pgk_fill", "pgk_arange", "pgk_linspace", "pgk_binary", "pgk_unary",
                   "pgk_where"):
        assert hasattr(lib, symbol), symbol
    assert lib.pgk_error_name(0) == b"cudaSuccess"
    assert lib.pgk_error_name(209) == b"cudaErrorNoKernelImageForDevice"


def test_launcher_rejects_negative_size_before_touching_the_device() -> None:
    lib = pk.load()
    fn = lib.pgk_add_f32
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_void_p]
    assert fn(None, None, None, -1, None) == 1  # cudaErrorInvalidValue
    assert fn(None, None, None, 0, None) == 0  # empty: nothing launched


def test_header_declares_every_exported_launcher() -> None:
    header = pk.header_path().read_text()
    assert "#define PGK_ABI_VERSION 5" in header
    assert f"#define PGK_MAX_DIMS {pk.MAX_DIMS}" in header
    for symbol in ("pgk_abi_version", "pgk_build_info", "pgk_add_f32", "pgk_copy", "pgk_fill",
                   "pgk_arange", "pgk_linspace", "pgk_binary", "pgk_unary", "pgk_where",
                   "pgk_reduce", "pgk_gemm", "pgk_gemm_workspace_size", "pgk_gemm_last_kernel",
                   "pgk_random", "pgk_random_integers", "pgk_random_choice",
                   "pgk_index_gather", "pgk_index_check", "pgk_index_scatter", "pgk_index_add",
                   "pgk_index_add_atomic",
                   "pgk_index_add_workspace_size", "pgk_select_flagged",
                   "pgk_select_flagged_workspace_size", "pgk_select_flagged_count",
                   "pgk_select_flagged_compact", "pgk_unravel_index",
                   "pgk_count_flags", "pgk_fp8_cast", "pgk_gemm_fp8",
                   "pgk_gemm_fp8_force_config"):
        assert f"{symbol}(" in header
    assert f"#define PGK_INDEX_MAX {pk.INDEX_MAX}" in header
    assert f"enum {{ PGK_ERROR_SLOT_PRESET = {pk.INDEX_ERROR_PRESET} }};" in header


def test_header_dtype_codes_match_python() -> None:
    header = pk.header_path().read_text()
    found = {m[0].lower(): int(m[1]) for m in re.findall(r"PGK_([A-Z0-9]+) = (\d+)", header)}
    # The FP8 storage dtypes (their own enum block: names with an underscore).
    found.update({m[0].lower(): int(m[1])
                  for m in re.findall(r"PGK_(FLOAT8_[A-Z0-9]+) = (\d+)", header)})
    assert found == pk.DTYPE_CODES
    assert pk.DTYPE_CODES == {"bool": 0, "int8": 1, "uint8": 2, "int16": 3, "int32": 4,
                              "int64": 5, "float16": 6, "bfloat16": 7, "float32": 8,
                              "float64": 9, "float8_e4m3fn": 10, "float8_e5m2": 11}
    assert pk.DType.BFLOAT16 == 7


# enum prefix in the header -> the Python enum that must mirror it.
_ENUMS = {"PGK_OP_": pk.BinaryOp, "PGK_UOP_": pk.UnaryOp, "PGK_RED_": pk.ReduceOp,
          "PGK_NORM_": pk.NormOp, "PGK_ACT_": pk.Activation, "PGK_PRECISION_": pk.Precision,
          "PGK_SORT_": pk.SortFlag, "PGK_SCAN_": pk.ScanOp,
          "PGK_RAND_": pk.RandomDist, "PGK_INDEX_": pk.IndexMode}


@pytest.mark.parametrize("prefix", sorted(_ENUMS))
def test_header_op_codes_match_python(prefix: str) -> None:
    header = pk.header_path().read_text()
    found = {m[0]: int(m[1]) for m in re.findall(rf"{prefix}([A-Z0-9_]+) = (\d+)", header)
             if not m[0].startswith("NUM_")}
    assert found, f"no {prefix}* codes in the header"
    assert found == {e.name: int(e) for e in _ENUMS[prefix]}
    total = re.search(rf"{prefix}NUM_[A-Z_]+ = (\d+)", header)
    if total is not None:  # PGK_NUM_*_OPS spelled inside the enum
        assert int(total[1]) == len(found)


def test_small_step_kinds_match_python() -> None:
    source = (Path(__file__).resolve().parents[1] / "cuda" / "small_ops.cu").read_text()
    found = {m[0]: int(m[1]) for m in re.findall(r"PGK_STEP_([A-Z0-9_]+) = (\d+)", source)}
    assert found == {e.name: int(e) for e in pk.SmallStep}
    # Each kind is a kernel of the table: its name without pgk_small_, upper-cased.
    assert {f"pgk_small_{e.name.lower()}" for e in pk.SmallStep} <= set(pk.SMALL_KERNELS)


_C_TYPE_CODES = {"int": "i", "long long": "q", "float": "f", "double": "d"}


def test_small_kernel_signatures_match_the_table() -> None:
    source = (Path(__file__).resolve().parents[1] / "cuda" / "small_ops.cu").read_text()
    source = source.replace("\\\n", " ")  # join the macros' continuation lines
    found: dict[str, str] = {}
    # Entry points written by a macro NAME(...) of a compute type C, then instantiated.
    for macro, params in re.findall(r"#define (PGK_SMALL_\w+)\(NAME, C\).*?NAME\(([^)]*)\)",
                                    source):
        for name, c_type in re.findall(rf"^{macro}\((\w+), ([\w ]+)\)", source, re.M):
            found[name] = _codes(params, c_type)
    # Entry points written out.
    for name, params in re.findall(r'extern "C" __global__ void'
                                   r"(?: __launch_bounds__\([^)]*\))?\s+(pgk_small_\w+)"
                                   r"\(([^)]*)\)",
                                   source):
        found[name] = _codes(params, "")
    assert found == pk.SMALL_KERNELS


def _codes(params: str, c_type: str) -> str:
    codes = []
    for param in (p.strip() for p in params.split(",")):
        declared = param.rsplit(" ", 1)[0].replace("const ", "").strip()
        if "*" in declared:
            codes.append("P")
        else:
            codes.append(_C_TYPE_CODES[c_type if declared == "C" else declared])
    return "".join(codes)


@pytest.mark.parametrize("name", ["elementwise", "small_ops"])
def test_fatbin_has_the_fatbin_magic(name: str) -> None:
    data = pk.fatbin_path(name).read_bytes()
    assert int.from_bytes(data[:4], "little") == 0xBA55ED50  # fatbin magic


@pytest.mark.parametrize("name", ["elementwise", "small_ops"])
def test_fatbin_holds_sass_for_every_arch(name: str, required_tool: Callable[..., str]) -> None:
    # Only cuobjdump can list a fatbin's members: without it this test would prove nothing,
    # so it skips locally and fails in CI (nvidia-cuda-cuobjdump wheel, or a CUDA Toolkit).
    cuobjdump = required_tool("cuobjdump", why="it lists the archs inside the fatbins")
    listing = subprocess.run([cuobjdump, "--list-elf", "--list-ptx", str(pk.fatbin_path(name))],
                             capture_output=True, text=True, check=True).stdout
    for arch in EXPECTED_SASS:
        assert f"sm_{arch}" in listing, (arch, listing)


def test_unknown_fatbin_lists_the_available_ones() -> None:
    with pytest.raises(FileNotFoundError, match=r"available: \['elementwise', 'small_ops'\]"):
        pk.fatbin_path("nope")
