"""NCCL communicators and collectives on GPUArrays (the implementation of pygpukit.distributed).

Every collective enqueues on the current stream of the array's device, after that stream's
before-launch hook, and records the stream's use of the arrays' memory like every other op
(:func:`pygpukit._transfer.touch`).  Nothing on the path of a collective synchronizes or
allocates outside the current stream's pool, so collectives can be captured in
``gp.graph()`` (NCCL's calls are stream-ordered).  Every NCCL result is checked: a failed call
raises :class:`NcclError` naming the call and the rank, and its communicator is aborted.
"""

from __future__ import annotations

import ctypes
import operator
import threading
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

from pygpukit import _context
from pygpukit._array import GPUArray
from pygpukit._backend import get_backend
from pygpukit._device import Device, runtime_for
from pygpukit._nccl_lib import (
    DATATYPES,
    OPS,
    UNIQUE_ID_BYTES,
    NcclError,
    NcclUnavailableError,
    NcclUniqueId,
    check,
    describe,
    library,
)
from pygpukit._stream import Stream, stream_for_runtime
from pygpukit._transfer import _overlaps, _packed, copy_into, empty_on, touch

_NCCL_DTYPES = ", ".join(sorted(DATATYPES))


class UniqueId:
    """The 128-byte ``ncclUniqueId`` that the ranks of one communicator share.

    Made by :func:`unique_id` on one process and handed to the others by any means (it pickles,
    so Dask, ``multiprocessing`` or a file will do; ``bytes(uid)`` and ``UniqueId(data)`` go
    through raw bytes).  It holds the network address of rank 0's bootstrap: share it only with
    the processes that join.

    Parameters
    ----------
    data
        Exactly 128 bytes, as made by :func:`unique_id`.
    """

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data: expected 128 bytes; got {type(data).__name__}")
        raw = bytes(data)
        if len(raw) != UNIQUE_ID_BYTES:
            raise ValueError(f"data: expected {UNIQUE_ID_BYTES} bytes; got {len(raw)}")
        self._data = raw

    def __bytes__(self) -> bytes:
        return self._data

    def __reduce__(self) -> tuple[type[UniqueId], tuple[bytes]]:
        return (UniqueId, (self._data,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UniqueId) and other._data == self._data

    def __hash__(self) -> int:
        return hash(("pygpukit.distributed.UniqueId", self._data))

    def __repr__(self) -> str:
        return f"<pygpukit.distributed.UniqueId {self._data[:8].hex()}...>"


def unique_id() -> UniqueId:
    """Make a new NCCL unique id (``ncclGetUniqueId``) for :class:`Communicator`.

    Call it on one process (rank 0 by convention) and give the result to every rank.

    Raises
    ------
    NcclUnavailableError
        If NCCL is not installed (``pip install pygpukit[nccl]``).
    NcclError
        If NCCL fails (its bootstrap could not open a socket, ...).
    """
    raw = NcclUniqueId()
    check("ncclGetUniqueId", library().ncclGetUniqueId(ctypes.byref(raw)))
    return UniqueId(raw.to_bytes())


def nccl_version() -> tuple[int, int, int]:
    """NCCL's ``(major, minor, patch)`` (loads NCCL; NcclUnavailableError without it)."""
    from pygpukit._nccl_lib import version

    return version()


def _require_cuda() -> None:
    """NCCL works on device memory: refuse the CPU simulation (its arrays are host memory)."""
    name = get_backend().name
    if name != "cuda":
        raise NcclUnavailableError(
            f"NCCL communicators need the CUDA backend; the backend in use is {name!r} "
            "(the CPU simulation has no NCCL)")


# -- group calls -----------------------------------------------------------------------------
class _GroupState(threading.local):
    """Per thread: how deep ``with group():`` is, and the communicators used inside it."""

    def __init__(self) -> None:
        self.depth = 0
        self.used: list[Communicator] = []
        self.failed: list[Communicator] = []
        # NCCL enqueues a group's work at its end: temporaries must live until then, and the
        # copies of results into non-contiguous outputs must be enqueued after it.
        self.keep: list[GPUArray] = []
        self.copies: list[tuple[Stream, GPUArray, GPUArray]] = []

    def clear(self) -> None:
        self.used, self.failed, self.keep, self.copies = [], [], [], []


_group_state = _GroupState()


class group:  # noqa: N801 (used as a function: ``with gp.distributed.group():``)
    """Fuse the NCCL calls made inside the block (``ncclGroupStart`` / ``ncclGroupEnd``).

    Needed when one thread drives several devices (the communicators of :func:`init_all`: a
    collective must be issued on every one of them before any can progress), and for
    :meth:`Communicator.send` / :meth:`Communicator.recv` pairs that would otherwise wait on
    each other.  Groups nest; the outermost one launches the work.  Errors of calls inside a
    group may only surface when it ends: every communicator used in it is then aborted and
    :class:`NcclError` names ``ncclGroupEnd`` and their ranks.

    Examples
    --------
    >>> comms = gp.distributed.init_all([0, 1])
    >>> with gp.distributed.group():
    ...     for comm, x in zip(comms, xs):
    ...         comm.all_reduce(x, out=x)
    """

    def __enter__(self) -> group:
        check("ncclGroupStart", library().ncclGroupStart())
        _group_state.depth += 1
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        state = _group_state
        state.depth -= 1
        code = library().ncclGroupEnd()
        if state.depth > 0:
            if code != 0:
                _fail_group(state, code)
            return
        if code != 0:
            _fail_group(state, code)
        failed, copies = state.failed, state.copies
        state.clear()
        for comm in failed:  # a call of theirs was refused inside the group
            comm._abort()
        for stream, result, out in copies:
            with stream:
                copy_into(result, out)


def _fail_group(state: _GroupState, code: int) -> None:
    """Abort every communicator used in the group and raise for ``ncclGroupEnd``."""
    comms = list(dict.fromkeys([*state.used, *state.failed]))
    state.clear()
    first = next((c._handle.ptr for c in comms if c._handle.ptr), None)
    ranks = ", ".join(f"{c._rank} (device {c._device})" for c in comms) or "none"
    message = describe("ncclGroupEnd", code, f" for the ranks {ranks}", first)
    for comm in comms:
        comm._abort()
    raise NcclError("ncclGroupEnd", code, f"{message}; their communicators were aborted",
                    comms[0]._rank if comms else None)


# -- communicators ---------------------------------------------------------------------------
class _Handle:
    """The ``ncclComm_t`` of a communicator, shared with its finalizer."""

    __slots__ = ("lock", "ptr")

    def __init__(self, ptr: int) -> None:
        self.ptr: int | None = ptr
        self.lock = threading.Lock()


def _finalize(handle: _Handle) -> None:
    """Destroy a communicator that was never closed (its owner is gone): abort if that fails."""
    with handle.lock:
        ptr, handle.ptr = handle.ptr, None
    if ptr:
        lib = library()
        if lib.ncclCommDestroy(ptr) != 0:
            lib.ncclCommAbort(ptr)


def _index(value: object, argument: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{argument}: expected an int; got {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{argument}: expected an int; got {value!r}") from None


def _datatype(array: GPUArray, call: str) -> int:
    code = DATATYPES.get(array.dtype.name)
    if code is None:
        raise TypeError(f"{call}: NCCL has no {array.dtype.name} type; the array's dtype must "
                        f"be one of {_NCCL_DTYPES}")
    return code


def _op(op: object, call: str) -> int:
    code = OPS.get(op) if isinstance(op, str) else None
    if code is None:
        raise ValueError(f"{call}: op must be one of {', '.join(map(repr, OPS))}; got {op!r}")
    return code


class Communicator:
    """An NCCL communicator: this process's rank in a group of ``nranks`` GPUs.

    One device per process: every process calls ``Communicator(nranks, rank, uid)`` with the
    same ``uid`` (from :func:`unique_id` on one of them) and its own ``rank``; the call returns
    when all ranks have joined.  For several devices driven by one process use
    :func:`init_all`.  Collectives enqueue on the current stream of the array's device and
    return at once; every rank must call the same collectives in the same order.

    Parameters
    ----------
    nranks
        Number of ranks (processes times devices) in the communicator.
    rank
        This process's rank, ``0 <= rank < nranks``.
    unique_id
        The :class:`UniqueId` (or its 128 bytes) shared by all ranks.
    device
        Device index or :class:`~pygpukit.Device` of this rank; the current device if omitted.

    Raises
    ------
    NcclUnavailableError
        If NCCL is not installed, or the backend is the CPU simulation.
    NcclError
        If ``ncclCommInitRank`` fails (the message names the rank).

    Examples
    --------
    >>> comm = gp.distributed.Communicator(world, rank, uid, device=0)
    >>> comm.all_reduce(grad, out=grad)       # in place, summed over all ranks
    >>> comm.close()
    """

    __slots__ = ("__weakref__", "_device", "_finalizer", "_handle", "_nranks", "_rank", "_rt")

    def __init__(self, nranks: int, rank: int, unique_id: UniqueId | bytes,
                 device: Any = None) -> None:
        nranks = _index(nranks, "nranks")
        rank = _index(rank, "rank")
        if nranks < 1:
            raise ValueError(f"nranks: expected at least 1; got {nranks}")
        if not 0 <= rank < nranks:
            raise ValueError(f"rank: expected 0 <= rank < nranks={nranks}; got {rank}")
        if not isinstance(unique_id, UniqueId):
            if not isinstance(unique_id, (bytes, bytearray, memoryview)):
                raise TypeError("unique_id: expected a pygpukit.distributed.UniqueId (from "
                                f"unique_id()) or its 128 bytes; got {type(unique_id).__name__}")
            unique_id = UniqueId(bytes(unique_id))
        _context.refuse_in_capture("distributed.Communicator()")
        runtime = runtime_for(device)
        lib = library()
        _require_cuda()
        raw = NcclUniqueId.from_bytes(bytes(unique_id))
        comm = ctypes.c_void_p()
        runtime.activate()  # ncclCommInitRank joins on the current device
        code = lib.ncclCommInitRank(ctypes.byref(comm), nranks, raw, rank)
        if code != 0:
            where = f" on rank {rank} of {nranks} (device {runtime.index})"
            raise NcclError("ncclCommInitRank", code,
                            describe("ncclCommInitRank", code, where, None), rank)
        self._setup(comm.value, runtime)

    @classmethod
    def _adopt(cls, ptr: int, runtime: Any) -> Communicator:
        comm = cls.__new__(cls)
        comm._setup(ptr, runtime)
        return comm

    def _setup(self, ptr: int | None, runtime: Any) -> None:
        if not ptr:
            raise NcclError("ncclCommInitRank", 3, "NCCL returned success and no communicator",
                            None)
        self._handle = _Handle(ptr)
        self._finalizer = weakref.finalize(self, _finalize, self._handle)
        self._finalizer.atexit = False  # the driver may be gone at exit; the OS cleans up
        self._rt = runtime
        self._rank, self._nranks, self._device = -1, -1, runtime.index
        lib = library()
        value = ctypes.c_int()
        self._call("ncclCommUserRank", lib.ncclCommUserRank(ptr, ctypes.byref(value)))
        self._rank = value.value
        self._call("ncclCommCount", lib.ncclCommCount(ptr, ctypes.byref(value)))
        self._nranks = value.value
        self._call("ncclCommCuDevice", lib.ncclCommCuDevice(ptr, ctypes.byref(value)))
        if value.value != runtime.index:
            self._abort()
            raise ValueError(f"NCCL put rank {self._rank} on device {value.value}, not on the "
                             f"device asked for ({runtime.index}); the communicator was aborted")

    # -- state -------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        """The rank of this communicator (``ncclCommUserRank``)."""
        return self._rank

    @property
    def nranks(self) -> int:
        """Number of ranks (``ncclCommCount``)."""
        return self._nranks

    @property
    def device(self) -> Device:
        """The :class:`~pygpukit.Device` of this rank (``ncclCommCuDevice``)."""
        return Device(self._device)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` (or an abort after an error) released the communicator."""
        return self._handle.ptr is None

    def _live(self, call: str) -> int:
        ptr = self._handle.ptr
        if ptr is None:
            raise RuntimeError(f"{call}: the communicator (rank {self._rank}) is closed")
        return ptr

    def _where(self) -> str:
        return f" on rank {self._rank} of {self._nranks} (device {self._device})"

    def _call(self, call: str, code: int) -> None:
        """Check a result of ``call`` on this communicator; abort it and raise on failure."""
        if code == 0:
            return
        message = describe(call, code, self._where(), self._handle.ptr)
        if _group_state.depth > 0:
            _group_state.failed.append(self)
            message += "; the communicator is aborted when the group ends"
        else:
            self._abort()
            message += "; the communicator was aborted"
        raise NcclError(call, code, message, self._rank)

    def _abort(self) -> None:
        """``ncclCommAbort``: stop pending work and free the communicator (idempotent)."""
        with self._handle.lock:
            ptr, self._handle.ptr = self._handle.ptr, None
        self._finalizer.detach()
        if ptr:
            library().ncclCommAbort(ptr)  # its result cannot change anything: it is gone

    def check_async_error(self) -> None:
        """Raise :class:`NcclError` (after aborting) if NCCL reported an asynchronous error.

        Work enqueued earlier can fail after its call returned (a peer died, a network
        error); ``ncclCommGetAsyncError`` reports it.  Nothing is raised while all is well.
        """
        ptr = self._live("check_async_error")
        result = ctypes.c_int()
        self._call("ncclCommGetAsyncError",
                   library().ncclCommGetAsyncError(ptr, ctypes.byref(result)))
        if result.value not in (0, 7):  # ncclInProgress: non-blocking work still running
            self._call("ncclCommGetAsyncError (asynchronous error)", result.value)

    def close(self) -> None:
        """Release the communicator (``ncclCommDestroy``; aborted if NCCL had an async error).

        ``ncclCommDestroy`` waits for the communicator's pending work; call it on every rank.
        Closing twice does nothing.

        Raises
        ------
        NcclError
            If NCCL reports an asynchronous error (the communicator is then aborted) or the
            destroy fails.
        """
        if self._handle.ptr is None:
            return
        _context.refuse_in_capture("Communicator.close()")
        self.check_async_error()
        with self._handle.lock:
            ptr, self._handle.ptr = self._handle.ptr, None
        self._finalizer.detach()
        if ptr:
            self._rt.activate()
            code = library().ncclCommDestroy(ptr)
            if code != 0:
                raise NcclError("ncclCommDestroy", code,
                                describe("ncclCommDestroy", code, self._where(), None),
                                self._rank)

    def abort(self) -> None:
        """Abort the communicator now (``ncclCommAbort``): pending work is dropped."""
        self._abort()

    def __enter__(self) -> Communicator:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self._abort()  # the other ranks may never reach their matching calls
        else:
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"device={self._device}"
        return f"<pygpukit.distributed.Communicator rank={self._rank}/{self._nranks} {state}>"

    # -- the collectives -----------------------------------------------------------------------
    def _check_array(self, array: object, argument: str, call: str) -> GPUArray:
        if not isinstance(array, GPUArray):
            raise TypeError(f"{call}: {argument} must be a pygpukit.GPUArray; "
                            f"got {type(array).__name__}")
        if array._rt.index != self._device:
            raise ValueError(f"{call}: {argument} is on device {array._rt.index} but the "
                             f"communicator (rank {self._rank}) is on device {self._device}")
        return array

    def _check_out(self, out: object, shape: tuple[int, ...], dtype: np.dtype[Any],
                   call: str) -> GPUArray:
        array = self._check_array(out, "out", call)
        if array.shape != shape or array.dtype != dtype:
            raise ValueError(f"{call}: out must have shape {shape} and dtype {dtype}; got "
                             f"shape {array.shape} and dtype {array.dtype}")
        return array

    def _root(self, value: object, argument: str, call: str) -> int:
        index = _index(value, argument)
        if not 0 <= index < self._nranks:
            raise ValueError(f"{call}: {argument} must be a rank, 0 <= {argument} < "
                             f"{self._nranks}; got {index}")
        return index

    def _run(self, call: str, src: GPUArray | None, out: GPUArray | None, in_place: bool,
             *args: Any) -> None:
        """Enqueue ``call(sendbuff, recvbuff, *args, comm, stream)`` for ``src`` -> ``out``.

        ``src`` is packed contiguous first; a non-contiguous ``out``, or one overlapping
        ``src`` other than exactly, receives through a contiguous temporary copied back after.
        ``src`` or ``out`` is ``None`` for send and recv (one buffer).
        """
        ptr = self._live(call)
        anchor = src if src is not None else out
        assert anchor is not None
        runtime = anchor._rt
        stream = stream_for_runtime(runtime)
        send = _packed(src) if src is not None else None
        recv: GPUArray | None = None
        if out is not None:
            if in_place and send is not None:
                recv = send
            elif out._contig and not (send is not None and _overlaps(send, out) and not (
                    send.data_ptr == out.data_ptr and send.nbytes == out.nbytes)):
                recv = out  # disjoint, or exactly the same bytes (NCCL's in-place form)
            else:
                recv = empty_on(runtime, out.shape, out.dtype, stream)
        touch(stream, *(a for a in (send,) if a is not None), written=recv)
        buffers = [a.data_ptr for a in (send, recv) if a is not None]
        runtime.activate()
        handle = stream.launch_handle()
        function = getattr(library(), call.split(" ")[0])
        self._call(call, function(*buffers, *args, ptr, handle or None))
        state = _group_state
        copy_back = out is not None and recv is not None and recv is not out
        if state.depth > 0:  # enqueued by ncclGroupEnd: keep the buffers, copy back after it
            state.used.append(self)
            state.keep.extend(a for a in (send, recv) if a is not None)
            if copy_back:
                assert out is not None and recv is not None
                state.copies.append((stream, recv, out))
        elif copy_back:
            assert out is not None and recv is not None
            copy_into(recv, out)  # stream-ordered after the collective

    def all_reduce(self, x: GPUArray, op: str = "sum", out: GPUArray | None = None) -> GPUArray:
        """Reduce ``x`` over all ranks; every rank gets the result (``ncclAllReduce``).

        Parameters
        ----------
        x
            This rank's contribution (any layout; packed contiguous first if it is not).
        op
            ``"sum"``, ``"prod"``, ``"min"``, ``"max"`` or ``"avg"``.
        out
            Where the result goes (same shape and dtype as ``x``): ``x`` itself for an
            in-place reduction; a new array if omitted.

        Returns
        -------
        GPUArray
            ``out``.
        """
        x = self._check_array(x, "x", "all_reduce")
        datatype, code = _datatype(x, "all_reduce"), _op(op, "all_reduce")
        in_place = out is x
        target = (self._check_out(out, x.shape, x.dtype, "all_reduce") if out is not None
                  else empty_on(x._rt, x.shape, x.dtype))
        self._run("ncclAllReduce", x, target, in_place, x.size, datatype, code)
        return target

    def broadcast(self, x: GPUArray, root: int) -> GPUArray:
        """Copy ``root``'s ``x`` into ``x`` on every rank, in place (``ncclBroadcast``).

        Returns
        -------
        GPUArray
            ``x``.
        """
        x = self._check_array(x, "x", "broadcast")
        datatype, root = _datatype(x, "broadcast"), self._root(root, "root", "broadcast")
        self._run("ncclBroadcast", x, x, True, x.size, datatype, root)
        return x

    def reduce(self, x: GPUArray, root: int, op: str = "sum",
               out: GPUArray | None = None) -> GPUArray:
        """Reduce ``x`` over all ranks into ``out`` on ``root`` only (``ncclReduce``).

        On the other ranks ``out`` is left as it was (a new, uninitialized array if omitted).

        Returns
        -------
        GPUArray
            ``out``.
        """
        x = self._check_array(x, "x", "reduce")
        datatype, code = _datatype(x, "reduce"), _op(op, "reduce")
        root = self._root(root, "root", "reduce")
        in_place = out is x
        target = (self._check_out(out, x.shape, x.dtype, "reduce") if out is not None
                  else empty_on(x._rt, x.shape, x.dtype))
        self._run("ncclReduce", x, target, in_place, x.size, datatype, code, root)
        return target

    def all_gather(self, x: GPUArray, out: GPUArray | None = None) -> GPUArray:
        """Gather every rank's ``x``: ``out[r]`` is rank ``r``'s (``ncclAllGather``).

        Returns
        -------
        GPUArray
            ``out``, of shape ``(nranks, *x.shape)``.
        """
        x = self._check_array(x, "x", "all_gather")
        datatype = _datatype(x, "all_gather")
        shape = (self._nranks, *x.shape)
        target = (self._check_out(out, shape, x.dtype, "all_gather") if out is not None
                  else empty_on(x._rt, shape, x.dtype))
        self._run("ncclAllGather", x, target, False, x.size, datatype)
        return target

    def reduce_scatter(self, x: GPUArray, op: str = "sum",
                       out: GPUArray | None = None) -> GPUArray:
        """Reduce ``x`` over all ranks; rank ``r`` gets block ``r`` of the leading axis.

        ``ncclReduceScatter``.

        Parameters
        ----------
        x
            At least one dimension; ``x.shape[0]`` divisible by ``nranks``.
        op
            ``"sum"``, ``"prod"``, ``"min"``, ``"max"`` or ``"avg"``.
        out
            Shape ``(x.shape[0] // nranks, *x.shape[1:])``; a new array if omitted.

        Returns
        -------
        GPUArray
            ``out``.
        """
        x = self._check_array(x, "x", "reduce_scatter")
        datatype, code = _datatype(x, "reduce_scatter"), _op(op, "reduce_scatter")
        if x.ndim == 0 or x.shape[0] % self._nranks:
            raise ValueError(f"reduce_scatter: x's leading dimension must be divisible by "
                             f"nranks={self._nranks}; got shape {x.shape}")
        shape = (x.shape[0] // self._nranks, *x.shape[1:])
        target = (self._check_out(out, shape, x.dtype, "reduce_scatter") if out is not None
                  else empty_on(x._rt, shape, x.dtype))
        count = int(np.prod(shape, dtype=np.int64))
        self._run("ncclReduceScatter", x, target, False, count, datatype, code)
        return target

    def send(self, x: GPUArray, peer: int) -> None:
        """Send ``x`` to rank ``peer``, which must :meth:`recv` as many elements (``ncclSend``).

        A send and the matching receive block each other unless they are in one
        :func:`group` (or run on different processes that both reach their call).
        """
        x = self._check_array(x, "x", "send")
        datatype, peer = _datatype(x, "send"), self._root(peer, "peer", "send")
        self._run("ncclSend", x, None, False, x.size, datatype, peer)

    def recv(self, x: GPUArray, peer: int) -> GPUArray:
        """Receive into ``x`` what rank ``peer`` sends (``ncclRecv``).

        Returns
        -------
        GPUArray
            ``x``.
        """
        x = self._check_array(x, "x", "recv")
        datatype, peer = _datatype(x, "recv"), self._root(peer, "peer", "recv")
        self._run("ncclRecv", None, x, False, x.size, datatype, peer)
        return x


def init_all(devices: Iterable[Any] | None = None) -> list[Communicator]:
    """One communicator per device, all driven by this process (``ncclCommInitAll``).

    Rank ``i`` is on ``devices[i]``.  Issue each collective on every communicator inside one
    ``with gp.distributed.group():`` block (one thread cannot wait on each device in turn).

    Parameters
    ----------
    devices
        Device indices or :class:`~pygpukit.Device` objects, each once; every device of the
        backend if omitted.

    Returns
    -------
    list of Communicator
        In the order of ``devices``.

    Raises
    ------
    NcclUnavailableError
        If NCCL is not installed, or the backend is the CPU simulation.
    NcclError
        If ``ncclCommInitAll`` fails.
    """
    if devices is None:
        devices = range(get_backend().device_count())
    elif isinstance(devices, (int, Device)):
        raise TypeError("devices: expected a sequence of devices, e.g. [0, 1]; got "
                        f"{devices!r}")
    runtimes = [runtime_for(d) for d in devices]
    ids = [rt.index for rt in runtimes]
    if not ids:
        raise ValueError("devices: expected at least one device; got none")
    if len(set(ids)) != len(ids):
        raise ValueError(f"devices: each device may appear once; got {ids}")
    _context.refuse_in_capture("distributed.init_all()")
    lib = library()
    _require_cuda()
    n = len(ids)
    comms = (ctypes.c_void_p * n)()
    check("ncclCommInitAll", lib.ncclCommInitAll(comms, n, (ctypes.c_int * n)(*ids)))
    made: list[Communicator] = []
    try:
        for ptr, runtime in zip(comms, runtimes, strict=True):
            made.append(Communicator._adopt(ptr, runtime))
    except BaseException:
        for comm in made:
            comm._abort()
        for ptr in list(comms)[len(made) + 1:]:
            if ptr:
                library().ncclCommAbort(ptr)
        raise
    return made
