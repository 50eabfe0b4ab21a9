"""CUDA graphs for array code: capture a sequence of pygpukit work once, replay it cheaply.

``with gp.graph() as g:`` makes a stream of the graph's own the current stream and captures
everything enqueued on it — elementwise ops, reductions, norms, GEMMs, JIT launches — through
the same launch path as eager work (on the CPU simulation the runtime calls are recorded).
Nothing runs during the capture.  Arrays made inside the block come from a memory pool private
to the graph (temporaries are reused within it) and hold the graph's results after each
``g.replay()``; arrays from outside that the captured work uses are kept alive while the graph
lives.  A replay runs on the graph's stream, ordered after the work already enqueued on the
current stream (or the one given) and before what comes later on it.

What cannot be captured — reading results on the host (``to_numpy``, ``item``, ``print``), a
synchronization, an upload from host memory, a copy between devices — raises
:class:`~pygpukit.GraphCaptureError` at once; the capture is then abandoned.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from typing import Any

from pygpukit import _context, _spill
from pygpukit._device import runtime_for
from pygpukit._errors import GraphCaptureError
from pygpukit._stream import Event, Stream, stream_for_runtime


def _free_released(raw: Any, core: Any) -> None:
    """Give the device the blocks a dead graph pool still held (the pool's finalizer).

    Blocks freed after the graph was closed wait in the pool's release queue, which nothing
    drains once the pool is unreachable: they are taken off it here and freed.
    """
    for address, payload, *_ in core.take_released():
        raw.free(address, payload)


class Graph:
    """A captured sequence of GPU work; :meth:`replay` runs it again.

    Made by :func:`graph`; capture with ``with``::

        with gp.graph() as g:
            y = gp.softmax(x @ w + b)
        g.replay()            # recomputes y from the current contents of x, w, b
        print(y.to_numpy())

    Attributes
    ----------
    device
        Index of the device the graph runs on.
    fused_ops
        How many captured small-array ops replay fused: each line of them that waited for one
        another runs as one launch of one block, the same results bit for bit (0 on the CPU
        simulation, on drivers older than CUDA 12.4, or with ``PGK_TUNE_GRAPH_FUSE=0``).
    """

    def __init__(self, device: Any = None) -> None:
        self._rt = runtime_for(device)
        self.device: int = self._rt.index
        self._stream: Stream | None = None
        self.fused_ops: int = 0
        self._exec: Any = None
        self._keep: list[Any] = []
        self._events: tuple[Event, Event] | None = None
        self._state = "new"  # new -> capturing -> ready -> closed

    # -- capture -----------------------------------------------------------------------------
    def __enter__(self) -> Graph:
        if self._state != "new":
            raise RuntimeError(f"a Graph captures once; this one is {self._state}")
        if _context.state.capturing:
            raise GraphCaptureError("graphs cannot be captured inside another graph's capture")
        rt = self._rt
        stream = Stream._wrap(rt, rt.new_stream(0, True), 0)
        pool = rt.new_pool()
        # The pool's blocks that outlive the graph go back to the device when the last one dies.
        # Not at interpreter exit: the process's memory goes with it, and the driver may be
        # torn down before the finalizer would run.
        weakref.finalize(pool, _free_released, pool._raw, pool.core).atexit = False
        stream._pool = pool
        stream._keep = self._keep
        self._stream = stream
        rt.capture_begin(stream)
        stream.__enter__()
        _context.state.capturing += 1
        self._state = "capturing"
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        stream = self._stream
        assert stream is not None and self._state == "capturing"
        _context.state.capturing -= 1
        stream.__exit__()
        if exc_type is not None:
            stream._keep = None
            # The capture may be invalidated already; the exception that ended the block is
            # the one the user needs to see.
            with contextlib.suppress(Exception):
                self._rt.capture_abort(stream)
            self._release()
            return
        try:
            self._exec, self.fused_ops = self._rt.capture_end(stream)
        except BaseException:
            self._release()
            raise
        finally:
            stream._keep = None
        self._events = (Event(timing=False, device=self.device),
                        Event(timing=False, device=self.device))
        self._state = "ready"

    # -- replay ------------------------------------------------------------------------------
    def replay(self, stream: Stream | None = None) -> None:
        """Run the captured work again, after the work already enqueued on ``stream``.

        Parameters
        ----------
        stream
            The stream to order the replay on (the current stream of the graph's device if
            omitted): the replay starts after its earlier work, and its later work waits for
            the replay.  Returns without waiting for the GPU.

        Raises
        ------
        RuntimeError
            If the graph was not captured yet, is being captured, or was closed.
        ValueError
            If ``stream`` belongs to another device.
        """
        if self._state != "ready":
            raise RuntimeError(f"cannot replay a graph that is {self._state}")
        own = self._stream
        assert own is not None and self._events is not None
        target = stream if stream is not None else stream_for_runtime(self._rt)
        if target._runtime is not self._rt:
            raise ValueError(f"replay: the stream is on device {target._runtime.index}, the "
                             f"graph on device {self.device}")
        before, after = self._events
        before.record(target)
        own.wait_event(before)
        self._exec.launch(own.launch_handle())
        after.record(own)
        target.wait_event(after)

    # -- lifetime ----------------------------------------------------------------------------
    @property
    def captured(self) -> bool:
        """Whether the graph holds captured work ready to replay."""
        return self._state == "ready"

    def close(self) -> None:
        """Release the graph: its executable, its cached memory and the arrays it kept.

        Arrays made during the capture stay valid (their memory returns when they go).
        Idempotent.
        """
        if self._state == "capturing":
            raise RuntimeError("close() inside the graph's own capture")
        if self._exec is not None:
            self._exec.close()
            self._exec = None
        self._release()

    def _release(self) -> None:
        stream = self._stream
        if stream is not None and stream._pool is not None:
            stream._pool.empty_cache()
        _spill.unpin_kept(self._keep)  # what the capture pinned to the device (pygpukit._spill)
        self._keep.clear()
        self._events = None
        self._state = "closed"

    def __del__(self) -> None:
        # At interpreter exit the driver may be gone before this runs; the memory goes anyway.
        if self._state == "ready" and not sys.is_finalizing():
            self.close()

    def __repr__(self) -> str:
        return f"<pygpukit.Graph device={self.device} {self._state}>"


def graph(device: Any = None) -> Graph:
    """Return a :class:`Graph` to capture with ``with``: ``with gp.graph() as g: ...``.

    Parameters
    ----------
    device
        The device whose work is captured (the current device if omitted).
    """
    return Graph(device)
