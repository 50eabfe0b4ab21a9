"""Random numbers on the device: ``pygpukit.random.default_rng(seed)``.

NumPy's ``numpy.random.Generator`` method names and signatures (``random``, ``uniform``,
``standard_normal``, ``normal``, ``integers``, ``permutation``, ``choice``, ``spawn``) over a
counter-based Philox4x32-10 bit generator, whose streams are the same on the GPU and on the CPU
simulation for a given seed.  Seeds are hashed by NumPy's ``SeedSequence`` (``None``: OS
entropy).

Examples
--------
>>> import pygpukit as gp
>>> rng = gp.random.default_rng(0)
>>> x = rng.standard_normal(1 << 20)                 # float32 GPUArray
>>> i = rng.integers(0, 10, size=(4, 4))             # int64
>>> rng.bit_generator.state["state"]["counter"]      # Philox blocks used so far
262148
"""

from __future__ import annotations

from pygpukit._random import Generator, Philox4x32, SeedSequence, default_rng

__all__ = ["Generator", "Philox4x32", "SeedSequence", "default_rng"]
