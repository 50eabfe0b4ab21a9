"""The seed README's "Rust Scheduler" block, unchanged, plus checks of what it returns."""

import importlib.util
import subprocess
import sys

import pygpukit_sched


def test_seed_block_runs_unchanged() -> None:
    code = """
import _pygpukit_rust as rust

# Memory Pool with LRU eviction
pool = rust.MemoryPool(quota=100 * 1024 * 1024, enable_eviction=True)
block = pool.allocate(4096)

# QoS-aware task scheduling
evaluator = rust.QosPolicyEvaluator(total_memory=8*1024**3, total_bandwidth=1.0)
task = rust.QosTaskMeta.guaranteed("task-1", "Critical Task", 256*1024*1024)
result = evaluator.evaluate(task)

# GPU Partitioning
manager = rust.PartitionManager(rust.PartitionConfig(total_memory=8*1024**3))
manager.create_partition("inference", "Inference",
    rust.PartitionLimits().memory(4*1024**3).compute(0.5))
"""
    scope: dict[str, object] = {}
    exec(compile(code, "<seed README>", "exec"), scope)
    result = scope["result"]
    assert isinstance(result, pygpukit_sched.QosEvaluation)
    assert result.admitted and result.reason == "admitted"
    assert result.tier == pygpukit_sched.QosTier.GUARANTEED
    manager = scope["manager"]
    assert isinstance(manager, pygpukit_sched.PartitionManager)
    part = manager.get_partition("inference")
    assert part is not None
    assert (part.memory_limit, part.compute, part.tier.label) == (4 << 30, 0.5, "guaranteed")
    # The same block as a script in a fresh interpreter (nothing imported before).
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_alias_module_is_the_same_api() -> None:
    import _pygpukit_rust as rust

    assert rust.MemoryPool is pygpukit_sched.MemoryPool
    assert set(rust.__all__) == set(pygpukit_sched.__all__)
    spec = importlib.util.find_spec("_pygpukit_rust")
    assert spec is not None and spec.origin is not None
    # Imported from the installed wheel, never from the source tree.
    assert "pygpukit-sched/src" not in spec.origin.replace("\\", "/")
