import json
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import pygpukit_sched as s

GIB = 1 << 30
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "trace.json"


# ------------------------------------------------------------------ QoS ----


def test_qos_constructors_and_tiers() -> None:
    g = s.QosTaskMeta.guaranteed("g", "G", GIB, bandwidth=0.25, priority=3)
    assert (g.tier, g.memory_request, g.memory_limit, g.bandwidth_request, g.priority) == (
        s.QosTier.GUARANTEED,
        GIB,
        GIB,
        0.25,
        3,
    )
    b = s.QosTaskMeta.burstable("b", "B", GIB, 2 * GIB)
    assert b.tier == s.QosTier.BURSTABLE
    e = s.QosTaskMeta.best_effort("e", "E")
    assert e.tier == s.QosTier.BEST_EFFORT
    assert s.QosTaskMeta("x", "X", memory_request=5, memory_limit=5).tier == s.QosTier.GUARANTEED
    assert s.QosTaskMeta("x", "X").tier == s.QosTier.BEST_EFFORT
    with pytest.raises(ValueError, match="guaranteed"):
        s.QosTaskMeta.burstable("b", "B", GIB, GIB)
    with pytest.raises(ValueError):
        s.QosTaskMeta.guaranteed("g", "G", 0)
    with pytest.raises(ValueError):
        s.QosTaskMeta("x", "X", memory_request=6, memory_limit=5)
    with pytest.raises(ValueError):
        s.QosTaskMeta.guaranteed("g", "G", 1, bandwidth=-0.1)
    assert s.QosTier.parse("Best-Effort") == s.QosTier.BEST_EFFORT
    assert [t.stream_priority for t in (s.QosTier.GUARANTEED, s.QosTier.BEST_EFFORT)] == [-2, 0]
    assert str(s.QosTier.BURSTABLE) == "burstable"
    assert g == s.QosTaskMeta.guaranteed("g", "G", GIB, bandwidth=0.25, priority=3)
    assert "tier=guaranteed" in repr(g)


def test_qos_admission_and_kubelet_eviction_order() -> None:
    ev = s.QosPolicyEvaluator(total_memory=10 * GIB, total_bandwidth=1.0)
    for t in (
        s.QosTaskMeta.best_effort("be-low", "", priority=1),
        s.QosTaskMeta.best_effort("be-high", "", priority=5),
        s.QosTaskMeta.burstable("bu", "", GIB),
        s.QosTaskMeta.guaranteed("g0", "", GIB),
    ):
        assert ev.admit(t).admitted
    assert ev.charge("be-low", 2 * GIB) == []
    ev.charge("be-high", 2 * GIB)
    ev.charge("bu", 3 * GIB)  # 2 GiB over its request
    assert ev.eviction_order() == ["be-low", "be-high", "bu"]
    assert ev.eviction_order(s.QosTier.BURSTABLE) == ["be-low", "be-high"]
    assert ev.eviction_order(s.QosTier.BEST_EFFORT) == []
    # evaluate changes nothing.
    g = s.QosTaskMeta.guaranteed("g1", "", 7 * GIB)
    preview = ev.evaluate(g)
    assert preview.admitted and preview.evicted == ["be-low", "be-high", "bu"]
    assert ev.tasks() == ["be-high", "be-low", "bu", "g0"]
    res = ev.admit(g)
    assert res.evicted == preview.evicted and res.memory_reserved == 7 * GIB
    assert ev.take_evicted() == ["be-low", "be-high", "bu"]
    assert ev.take_evicted() == []
    # Nothing evicts a Guaranteed task, and equal tiers never evict each other.
    refused = ev.evaluate(s.QosTaskMeta.guaranteed("g2", "", 4 * GIB))
    assert not refused.admitted and refused.reason == "insufficient_reservable"
    st = ev.stats()
    assert st["evictions"] == 3 and st["reserved_memory"] == 8 * GIB
    assert st["held_memory"] <= st["total_memory"]
    with pytest.raises(s.ResourceExhaustedError):
        ev.charge("g0", GIB + 1)  # over its limit
    with pytest.raises(KeyError):
        ev.release("nope")
    assert ev.release("g1") == 7 * GIB


def test_qos_bandwidth_and_pressure() -> None:
    ev = s.QosPolicyEvaluator(4096, total_bandwidth=1.0)
    assert ev.admit(s.QosTaskMeta.guaranteed("a", "", 4096, bandwidth=0.7)).admitted
    r = ev.evaluate(s.QosTaskMeta.burstable("b", "", 0, bandwidth_request=0.4))
    assert r.reason == "insufficient_bandwidth"
    r = ev.evaluate(s.QosTaskMeta.best_effort("c", ""))
    assert (r.admitted, r.reason) == (False, "memory_pressure")
    assert "memory pressure" in r.message


# ------------------------------------------------------------ admission ----


def test_admission_reasons_and_quota() -> None:
    ac = s.AdmissionController(100)
    ac.set_quota("t", memory=50, max_tasks=2)
    assert ac.admit("a", 30, tenant="t").admitted
    d = ac.admit("b", 30, tenant="t")
    assert (d.admitted, d.reason, d.task_id) == (False, "quota_exceeded", "b")
    assert ac.admit("c", 20, tenant="t").admitted
    assert ac.admit("d", 0, tenant="t").reason == "task_limit"
    assert ac.admit("e", 51, tenant="t").reason == "exceeds_quota"
    assert ac.admit("f", 101).reason == "exceeds_capacity"
    assert ac.admit("a", 1).reason == "duplicate_id"
    assert ac.admit("g", 50).admitted
    assert ac.evaluate("h", 1).reason == "insufficient_memory"
    assert (ac.reserved, ac.available) == (100, 0)
    assert ac.release("g") == 50
    with pytest.raises(KeyError):
        ac.release("g")
    st = ac.stats()
    assert (st["admitted"], st["rejected"], st["released"]) == (3, 5, 1)


def test_admission_queue_ties_and_replay() -> None:
    ac = s.AdmissionController(100)
    for tid, mem, prio in [("b", 40, 1), ("a", 40, 1), ("c", 40, 2), ("z", 500, 9)]:
        ac.submit(tid, mem, prio)
    with pytest.raises(ValueError):
        ac.submit("a", 1)
    assert ac.pending() == ["z", "c", "b", "a"]
    got = [(d.task_id, d.reason) for d in ac.process_pending()]
    assert got == [
        ("z", "exceeds_capacity"),
        ("c", "admitted"),
        ("b", "admitted"),
        ("a", "insufficient_memory"),
    ]
    assert ac.withdraw("a") and not ac.withdraw("a")
    batch = s.AdmissionController(10).admit_batch(
        [("x", 5, 0, ""), ("y", 5, 1, ""), ("w", 5, 0, "")]
    )
    assert [(d.task_id, d.admitted) for d in batch] == [("y", True), ("x", True), ("w", False)]

    rng = random.Random(7)
    log: list[tuple[object, ...]] = [("quota", "t", 300, None)]
    for i in range(2000):
        r = rng.random()
        if r < 0.4:
            log.append(
                ("submit", f"t{i}", rng.randint(0, 200), rng.randint(0, 3), rng.choice(["", "t"]))
            )
        elif r < 0.6:
            log.append(("admit", f"a{i}", rng.randint(0, 200)))
        elif r < 0.8:
            log.append(("process",))
        else:
            log.append(("release", f"t{rng.randint(0, i)}"))
    first = s.AdmissionController(1000).replay(log)
    second = s.AdmissionController(1000).replay(log)
    assert len(first) > 500
    assert first == second
    assert [d.message for d in first] == [d.message for d in second]
    with pytest.raises(ValueError, match="unknown event kind"):
        s.AdmissionController(1).replay([("bogus",)])


# ------------------------------------------------------------ scheduler ----


def test_scheduler_life_cycle() -> None:
    sch = s.Scheduler(100)
    assert sch.submit("a", 60, priority=1, name="A") == 0
    sch.submit("b", 60, priority=2)
    sch.submit("c", 30)
    with pytest.raises(s.TaskRejectedError) as info:
        sch.submit("huge", 1000)
    assert info.value.reason == "exceeds_capacity"
    assert sch.state("huge") == "rejected"
    with pytest.raises(ValueError):
        sch.submit("a", 1)
    assert sch.schedule() == ["b", "c"]
    task = sch.task("a")
    assert (
        task is not None and task["state"] == "pending" and task["reason"] == "insufficient_memory"
    )
    with pytest.raises(s.TaskStateError):
        sch.complete("b")
    sch.start("b")
    sch.complete("b")
    assert sch.schedule() == ["a"]
    assert sch.cancel("c") == "admitted"
    sch.start("a")
    sch.fail("a")
    with pytest.raises(KeyError):
        sch.start("nope")
    assert sch.state("nope") is None
    st = sch.stats()
    assert (st["completed"], st["failed"], st["cancelled"], st["rejected"], st["reserved"]) == (
        1,
        1,
        1,
        1,
        0,
    )
    assert st["peak_reserved"] == 90


# --------------------------------------------------------------- pacing ----


def test_pacing_is_deterministic_token_bucket() -> None:
    p = s.KernelPacingEngine(burst_ns=0)
    p.register_stream(1, 0.5)
    p.register_stream(2, 0.25)
    with pytest.raises(s.ResourceExhaustedError):
        p.register_stream(3, 0.5)
    with pytest.raises(ValueError):
        p.register_stream(1, 0.1)
    with pytest.raises(KeyError):
        p.acquire(99, 1, 0)
    assert [p.acquire(1, 1000, 0) for _ in range(3)] == [0, 2000, 4000]
    assert p.acquire(2, 1000, 0) == 0
    assert p.peek_wait(2, 0) == 4000
    assert p.acquire(1, 1000, 10**9) == 0
    st = p.stream_stats(1)
    assert (st["acquisitions"], st["throttled"], st["total_wait_ns"], st["share"]) == (
        4,
        2,
        6000,
        0.5,
    )
    assert p.allocated_share == 0.75 and p.streams() == [1, 2]
    p.unregister_stream(2)
    assert p.allocated_share == 0.5
    # Over a long run a stream's admitted cost rate equals its share.
    q = s.KernelPacingEngine(burst_ns=0)
    q.register_stream(0, 0.25)
    now = 0
    for _ in range(1000):
        now += q.acquire(0, 1000, now)
    assert now == 999 * 4000


# ----------------------------------------------------------- partitions ----


def test_partitions_accounting() -> None:
    m = s.PartitionManager(s.PartitionConfig(total_memory=8 * GIB))
    lim = s.PartitionLimits().memory(4 * GIB).compute(0.5)
    assert (lim.memory_limit, lim.requested_memory, lim.compute_share) == (4 * GIB, 4 * GIB, 0.5)
    p = m.create_partition("inference", "Inference", lim)
    assert p.tier == s.QosTier.GUARANTEED and p.stream_priority == -2
    burst = s.PartitionLimits().memory(6 * GIB).memory_request(GIB).compute(0.25)
    assert burst.tier == s.QosTier.BURSTABLE
    m.create_partition("train", "Training", burst)
    with pytest.raises(ValueError):
        m.create_partition("train", "again", s.PartitionLimits())
    with pytest.raises(s.ResourceExhaustedError):
        m.create_partition("x", "", s.PartitionLimits().memory(4 * GIB))
    with pytest.raises(s.ResourceExhaustedError):
        m.create_partition("x", "", s.PartitionLimits().compute(0.3))
    assert m.charge("inference", 3 * GIB) == 3 * GIB
    with pytest.raises(s.ResourceExhaustedError, match="limit"):
        m.charge("inference", GIB + 1)
    assert m.charge("train", 4 * GIB) == 4 * GIB  # 3 GiB above its request, all free
    with pytest.raises(s.ResourceExhaustedError):
        m.charge("train", GIB)  # no free memory left on the device
    with pytest.raises(KeyError):
        m.charge("nope", 1)
    part = m.get_partition("train")
    assert part is not None and (part.usage, part.failed_charges, part.available) == (
        4 * GIB,
        1,
        2 * GIB,
    )
    assert m.get_partition("nope") is None
    with pytest.raises(ValueError):
        m.delete_partition("train")
    assert m.release("train", 4 * GIB) == 0
    with pytest.raises(ValueError):
        m.release("train", 1)
    assert m.delete_partition("train").name == "Training"
    assert len(m) == 1 and [q.id for q in m.partitions()] == ["inference"]
    st = m.stats()
    assert (st["reserved_memory"], st["used_memory"], st["allocated_compute"]) == (
        4 * GIB,
        3 * GIB,
        0.5,
    )


# ------------------------------------------------------------ transfers ----


def test_transfer_queue_order() -> None:
    q = s.TransferQueue()
    a = q.enqueue(s.TransferKind.H2D, 10)
    b = q.enqueue("d2h", 20)
    c = q.enqueue("d2h", 30, priority=5)
    d = q.enqueue(s.TransferKind.H2D, 40, priority=5)
    with pytest.raises(ValueError):
        q.enqueue("sideways", 1)
    assert len(q) == 4 and q.len_of("h2d") == 2
    peek = q.peek()
    assert peek is not None and peek.id == c
    order = []
    while (t := q.next()) is not None:
        order.append((t.id, t.kind, t.nbytes))
    assert order == [
        (c, s.TransferKind.D2H, 30),
        (d, s.TransferKind.H2D, 40),
        (a, s.TransferKind.H2D, 10),
        (b, s.TransferKind.D2H, 20),
    ]
    e = q.enqueue("h2d", 1)
    cancelled = q.cancel(e)
    assert cancelled is not None and cancelled.id == e and q.cancel(e) is None
    assert q.stats()["dispatched_bytes"] == [50, 50]


# ------------------------------------------------------------ simulation ----


def test_simulate_example_trace_is_deterministic() -> None:
    r1 = s.simulate(EXAMPLE)
    r2 = s.simulate(s.load_trace(EXAMPLE))
    assert r1.events == r2.events
    assert r1.stats == r2.stats
    kinds = {kind for _, kind, _, _ in r1.events}
    assert kinds == {"submit", "admit", "start", "complete", "fail", "cancel", "reject"}
    assert r1.stats["peak_reserved"] <= r1.stats["capacity"]


def test_simulate_validates_traces() -> None:
    with pytest.raises(s.TraceError, match="missing 'memory'"):
        s.simulate({"capacity": 1, "tasks": [{"id": "a", "arrival": 0, "duration": 1}]})
    with pytest.raises(s.TraceError, match="duplicate"):
        task = {"id": "a", "arrival": 0, "duration": 1, "memory": 1}
        s.simulate({"capacity": 1, "tasks": [task, task]})
    with pytest.raises(s.TraceError, match="cannot parse size"):
        s.parse_size("4 parsecs")
    assert s.parse_size("1.5KiB") == 1536 and s.parse_size(7) == 7


@pytest.mark.parametrize("as_json", [False, True])
def test_cli_simulate(as_json: bool) -> None:
    cmd = [sys.executable, "-m", "pygpukit_sched", "simulate", str(EXAMPLE)]
    if as_json:
        cmd.append("--json")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    if as_json:
        out = json.loads(proc.stdout)
        assert out["stats"]["submitted"] == 9 and out["events"][0]["event"] == "submit"
    else:
        assert "makespan" in proc.stdout and "reject" in proc.stdout


def test_cli_bad_trace(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = subprocess.run(
        [sys.executable, "-m", "pygpukit_sched", "simulate", str(bad)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr


# --------------------------------------------------------------- threads ----


def test_admission_and_partitions_shared_between_threads() -> None:
    ac = s.AdmissionController(1000)
    m = s.PartitionManager(s.PartitionConfig(1000))
    m.create_partition("p", "", s.PartitionLimits().memory(600))
    errors: list[BaseException] = []
    peak = [0]

    def worker(t: int) -> None:
        rng = random.Random(t)
        try:
            for i in range(3000):
                tid = f"{t}-{i}"
                if ac.admit(tid, rng.randint(1, 200)).admitted:
                    peak[0] = max(peak[0], ac.reserved)
                    ac.release(tid)
                try:
                    m.charge("p", 50)
                    m.release("p", 50)
                except s.ResourceExhaustedError:
                    pass
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert ac.reserved == 0 and peak[0] <= 1000
    st = ac.stats()
    assert st["admitted"] == st["released"] and st["decisions"] == 8 * 3000
    part = m.get_partition("p")
    assert part is not None and part.usage == 0 and part.peak_usage <= 600


def test_spill_order_lowest_tier_then_least_recently_used() -> None:
    be, burst, g = s.QosTier.BEST_EFFORT, s.QosTier.BURSTABLE, s.QosTier.GUARANTEED
    candidates = [
        (1, "train", burst, 100, 5, False),
        (2, "batch", be, 100, 9, False),
        (3, "batch", be, 100, 2, False),
        (4, "batch", be, 100, 1, True),  # pinned: never
        (5, "serve", g, 100, 0, False),  # a higher tier than the requester: never
    ]
    assert s.spill_order(candidates, "train", burst, 250, False) == [3, 2, 1]
    assert s.spill_order(candidates, "train", burst, 1, True) == [1]  # its quota: its own only
    assert s.spill_order(candidates, "train", burst, 301, False) is None  # 300 bytes at most
    assert s.spill_order(candidates, "serve", g, 0, False) == []
    with pytest.raises(TypeError):
        s.spill_order([(1, "a", "best_effort", 1, 1, False)], "a", be, 1, True)
