"""DLPack and the CUDA Array Interface: zero-copy with torch and cupy on the GPU."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp


def test_dlpack_device_and_numpy_round_trip(backend: str) -> None:
    arr = gp.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    expected = (2, 0) if backend == "cuda" else (1, 0)
    assert arr.__dlpack_device__() == expected
    if backend == "cpu":
        back = np.from_dlpack(arr)
        np.testing.assert_array_equal(back, np.arange(12, dtype=np.float32).reshape(3, 4))
        view = np.from_dlpack(arr.T)
        np.testing.assert_array_equal(view, np.arange(12, dtype=np.float32).reshape(3, 4).T)
        assert gp.from_dlpack(np.arange(5)).tolist() == [0, 1, 2, 3, 4]


def test_dlpack_export_to_the_host_copies(backend: str) -> None:
    # The standard's dl_device=(kDLCPU, 0): a CUDA array is copied to the host (not with
    # copy=False); a CPU-simulation array is already there.
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    arr = gp.from_numpy(host)
    back = np.from_dlpack(arr, device="cpu")
    np.testing.assert_array_equal(back, host)
    np.testing.assert_array_equal(np.from_dlpack(arr.T, device="cpu"), host.T)
    if backend == "cuda":
        with pytest.raises(BufferError, match="copy=False"):
            arr.__dlpack__(dl_device=(1, 0), copy=False)
        with pytest.raises(BufferError, match="differs"):
            arr.__dlpack__(dl_device=(2, 5))
    else:
        with pytest.raises(BufferError, match="differs"):
            arr.__dlpack__(dl_device=(2, 0))


def test_capsules_release_their_array(backend: str) -> None:
    gc.collect()
    before = gp.memory_stats()["allocated_bytes"]
    arr = gp.ones((1000,))
    capsule = arr.__dlpack__(max_version=(1, 0))
    legacy = arr.__dlpack__()
    del arr
    gc.collect()
    assert gp.memory_stats()["allocated_bytes"] > before  # the capsules hold it
    del capsule, legacy
    gc.collect()
    assert gp.memory_stats()["allocated_bytes"] == before


def test_cuda_array_interface_absent_on_cpu(backend: str) -> None:
    arr = gp.ones(3)
    if backend == "cpu":
        assert not hasattr(arr, "__cuda_array_interface__")
    else:
        cai = arr.__cuda_array_interface__
        assert cai["version"] == 3 and cai["data"][0] == arr.data_ptr and cai["typestr"] == "<f4"
        assert cai["strides"] is None and cai["stream"] == gp.current_stream().handle
        assert arr[::2].__cuda_array_interface__["strides"] == (8,)
        assert not hasattr(gp.ones(2, gp.bfloat16), "__cuda_array_interface__")


@pytest.mark.gpu
@pytest.mark.interop
def test_torch_zero_copy_both_ways() -> None:
    torch = pytest.importorskip("torch", reason="torch is needed for the interop check")
    if not gp.is_cuda_available():
        pytest.skip("needs the CUDA backend")
    arr = gp.arange(10, dtype="float32")
    t = torch.from_dlpack(arr)
    assert t.data_ptr() == arr.data_ptr and t.device.type == "cuda"
    t.mul_(2)  # a write on the torch side ...
    torch.cuda.synchronize()
    assert arr.tolist() == [2.0 * i for i in range(10)]  # ... is seen here
    src = torch.arange(6, dtype=torch.bfloat16, device="cuda").reshape(2, 3).t()
    back = gp.from_dlpack(src)
    assert back.data_ptr == src.data_ptr() and back.strides == (2, 6)
    assert back.dtype == np.dtype(ml_dtypes.bfloat16)
    back[0, 0] = 42  # a write here ...
    gp.synchronize()
    assert float(src[0, 0]) == 42.0  # ... is seen by torch
    via_asarray = gp.asarray(torch.ones(4, device="cuda"))
    assert via_asarray.tolist() == [1.0] * 4


@pytest.mark.gpu
@pytest.mark.interop
def test_cupy_zero_copy_both_ways() -> None:
    cp = pytest.importorskip("cupy", reason="cupy is needed for the interop check")
    if not gp.is_cuda_available():
        pytest.skip("needs the CUDA backend")
    arr = gp.arange(8, dtype="int32")
    c = cp.asarray(arr)  # through __cuda_array_interface__
    assert c.data.ptr == arr.data_ptr
    c += 1
    cp.cuda.Device().synchronize()
    assert arr.tolist() == list(range(1, 9))
    d = cp.from_dlpack(arr)
    assert d.data.ptr == arr.data_ptr
    src = cp.arange(5, dtype=cp.float64)
    mine = gp.asarray(src)
    assert mine.data_ptr == src.data.ptr
    mine[...] = 7.0
    gp.synchronize()
    assert src.tolist() == [7.0] * 5
    mine2 = gp.from_dlpack(src)
    assert mine2.data_ptr == src.data.ptr
