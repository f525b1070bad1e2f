"""vdev.channels: the channel language from Python. The one-shot all-reduce written here equals the
shipped C++ one, validates, round-trips through JSON and runs on the host executor for 2-4 ranks;
the validator's and the JSON loader's errors are exceptions."""

import numpy as np
import pytest

import vdev
from vdev import channels as ch


def barrier(chans, sync_first="before", sync_last="after"):
    """Signal every peer (one data sync before the first), then wait for every peer (one after the last)."""
    for i, c in enumerate(chans):
        c.signal(0, sync=sync_first if i == 0 else "none")
    for i, c in enumerate(chans):
        c.wait(0, sync=sync_last if i == len(chans) - 1 else "none")


def one_shot(n, exit_barrier=True):
    p = ch.Program("one_shot", "allreduce", n)
    chans = [[p.add_memory_channel(dst=q, src=r) for q in range(n) if q != r] for r in range(n)]
    for r in range(n):
        barrier(chans[r])
        p.reduce(0, p.output(r, 0), [p.input(q, 0) for q in range(n)])
        if exit_barrier:
            barrier(chans[r])
    return p.build()


@pytest.mark.parametrize("world", [2, 3, 4])
def test_one_shot_built_in_python_runs_on_the_host_executor(world):
    plan = one_shot(world)
    assert (plan.collective, plan.world_size, plan.thread_blocks) == ("allreduce", world, [1] * world)
    assert plan == ch.shipped("one_shot", world)  # the same program as channel_algorithms.cc writes
    ch.validate(plan)
    rng = np.random.default_rng(world)
    inputs = [rng.integers(-1000, 1000, 1001, dtype=np.int32) for _ in range(world)]
    outputs = ch.run(plan, inputs)
    assert len(outputs) == world
    for out in outputs:
        np.testing.assert_array_equal(out, sum(inputs))
    floats = [x.astype(np.float32) / 7 for x in inputs]
    for out in ch.run(plan, floats):
        np.testing.assert_allclose(out, sum(floats), rtol=1e-5)


def test_plans_round_trip_through_json():
    plan = one_shot(3)
    text = plan.to_json()
    assert '"format": "vdev.channels.plan/1"' in text
    again = ch.Plan.from_json(text, file="one_shot.json")
    assert again == plan and again.to_json() == text
    for name in ch.shipped_names():
        shipped = ch.shipped(name, 2)
        assert ch.Plan.from_json(shipped.to_json()) == shipped


def test_shipped_plans_run():
    inputs = [np.arange(12, dtype=np.float64) * (r + 1) for r in range(4)]
    for out in ch.run(ch.shipped("two_shot", 4), inputs):
        np.testing.assert_array_equal(out, sum(inputs))
    halves = [np.linspace(-1, 1, 9).astype(np.float16) * (r + 1) for r in range(2)]
    for out in ch.run(ch.shipped("one_shot", 2), halves):
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out, (halves[0].astype(np.float32) + halves[1]).astype(np.float16))
    bf16 = [np.array([0x3F80, 0x4000, 0xBF80], np.uint16)] * 2  # 1, 2, -1 as bfloat16 bits
    for out in ch.run(ch.shipped("one_shot", 2), bf16):
        np.testing.assert_array_equal(out, np.array([0x4000, 0x4080, 0xC000], np.uint16))  # 2, 4, -2
    gathered = ch.run(ch.shipped("all_gather", 3), [np.full(5, r, np.int32) for r in range(3)])
    for out in gathered:
        np.testing.assert_array_equal(out, np.repeat(np.arange(3, dtype=np.int32), 5))


def test_the_validators_errors_are_exceptions():
    # Without the exit barrier a rank may rewrite its input while a peer still reads it.
    with pytest.raises(ch.ChannelError, match=r"race in execution 1: rank \d tb 0 op \d \(reduce\) reads input"):
        one_shot(2, exit_barrier=False)
    # A wait that no signal satisfies: a deadlock, named by rank, thread block and op.
    p = ch.Program("deadlock", "allreduce", 2)
    for r in range(2):
        c = p.add_memory_channel(dst=1 - r, src=r)
        c.wait(0)
        p.reduce(0, p.output(r, 0), [p.input(0, 0), p.input(1, 0)])
    deadlock = r"rank 0 tb 0 op 0 \(wait\) .* a wait with no matching signal deadlocks"
    with pytest.raises(ch.ChannelError, match=deadlock) as info:
        p.build()
    assert isinstance(info.value, vdev.Error) and isinstance(info.value, ValueError)
    # Out of range: kept by the builder, reported by build().
    p = ch.Program("bad", "allreduce", 2)
    p.copy(0, p.output(0, 0), p.input(5, 0))
    with pytest.raises(ch.ChannelError, match=r"rank 0 tb 0 op 0 \(copy\): input chunk 0 of rank 5: ranks are 0..1"):
        p.build()
    with pytest.raises(ValueError, match="built already"):
        p.copy(0, p.output(0, 0), p.input(0, 0))
    with pytest.raises(ValueError, match="unknown collective 'allsum'"):
        ch.Program("x", "allsum", 2)
    with pytest.raises(ValueError, match="unknown sync 'later'"):
        ch.Program("x", "allreduce", 2).copy(0, ch.Chunk(0, "output", 0), ch.Chunk(0, "input", 0), sync="later")


def test_plan_files_errors_are_located():
    with pytest.raises(ch.ChannelError, match=r"plan.json:1:\d+"):
        ch.Plan.from_json('{"format": ', file="plan.json")
    text = one_shot(2).to_json().replace('"sync": "before"', '"sync": "sometimes"', 1)
    with pytest.raises(ch.ChannelError, match=r"p.json: ranks\[0\]\.thread_blocks\[0\]\.ops\[\d+\]\.sync"):
        ch.Plan.from_json(text, file="p.json")


def test_run_checks_its_inputs():
    plan = one_shot(2)
    with pytest.raises(ValueError, match="for 2 ranks; 3 inputs"):
        ch.run(plan, [np.zeros(4, np.float32)] * 3)
    with pytest.raises(TypeError, match="float32, float64, int32, float16 or bf16"):
        ch.run(plan, [np.zeros(4, np.int64)] * 2)
    with pytest.raises(ValueError, match="input of rank 1"):
        ch.run(plan, [np.zeros(4, np.float32), np.zeros(5, np.float32)])
