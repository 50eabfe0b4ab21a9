"""The v0.2.5 name of PyGPUkit's Rust scheduler: an alias of :mod:`pygpukit_sched`.

``import _pygpukit_rust as rust`` gives the same classes as ``import pygpukit_sched``
(``rust.MemoryPool is pygpukit_sched.MemoryPool``), so code written for the seed README
runs unchanged.
"""

from pygpukit_sched import *  # noqa: F403
from pygpukit_sched import __all__ as __all__
