"""vdev.run / vdev.Executor / vdev.run_workers: lowered programs run on the CPU kernels, NumPy in
and out, checked against NumPy's own arithmetic."""

import gc
import os
import sys
import threading
import time
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vdev

LEFT_ADD = """config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }
def @main(%a: f32[5,7], %b: f32[5,7], %c: f32[5,7], %d: f32[5,7]) {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = add(%c, %d)
  %3 = subtract(%1, %2)
  return %3
}
"""

ALLREDUCE = """def @main(%x: f32[8] on cuda:0) -> f32[8] {
  %0 = negative(%x)
  %1 = allreduce(%0, op=sum)
  return %1
}
"""


def lowered(text):
    return vdev.lower(vdev.plan(vdev.parse(text, file="program.vdev")))


def arrays(n, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


def test_run_computes_what_numpy_computes():
    a, b, c, d = arrays(4, (5, 7))
    [out] = vdev.run(lowered(LEFT_ADD), a, b, c, d)
    assert out.dtype == np.float32 and out.shape == (5, 7)
    np.testing.assert_allclose(out, (a + b) - (c + d), rtol=1e-6)


def test_outputs_are_handed_over_without_a_copy():
    [out] = vdev.run(lowered(LEFT_ADD), *arrays(4, (5, 7)))
    assert not out.flags.owndata and out.base is not None
    out[0, 0] = 42.0  # writable, and owned by the array's base
    assert out[0, 0] == 42.0


def test_an_executor_runs_again_with_new_inputs():
    executor = vdev.Executor(lowered(LEFT_ADD))
    for seed in range(3):
        a, b, c, d = arrays(4, (5, 7), seed)
        [out] = executor.run(a, b, c, d)
        np.testing.assert_allclose(out, (a + b) - (c + d), rtol=1e-6)


def test_inputs_are_checked_against_the_parameters():
    executor = vdev.Executor(lowered(LEFT_ADD))
    a, b, c, d = arrays(4, (5, 7))
    with pytest.raises(TypeError, match="takes 4 inputs, got 3"):
        executor.run(a, b, c)
    with pytest.raises(TypeError, match=r"input 3 \(%d: f32\[5,7\]\): expected dtype float32, found float64"):
        executor.run(a, b, c, d.astype(np.float64))
    with pytest.raises(ValueError, match=r"expected shape \[5, 7\], found \[2, 7\]"):
        executor.run(a, b, c, d[:2])
    with pytest.raises(TypeError, match="expected a NumPy array or an object with __dlpack__"):
        executor.run(a, b, c, object())
    # A non-contiguous NumPy view is accepted (copied in order), and so is a read-only array.
    d.flags.writeable = False
    [out] = executor.run(a, b, c, np.asfortranarray(d))
    np.testing.assert_allclose(out, (a + b) - (c + d), rtol=1e-6)
    [again] = executor.run(a, b, c, d)
    np.testing.assert_array_equal(again, out)


def test_run_workers_all_reduces_across_workers():
    xs = [np.arange(8, dtype=np.float32) * (k + 1) for k in range(3)]
    outs = vdev.run_workers(lowered(ALLREDUCE), [[x] for x in xs])
    assert len(outs) == 3
    for [out] in outs:
        np.testing.assert_array_equal(out, -sum(xs))


def test_run_workers_names_the_failing_worker():
    with pytest.raises(TypeError, match="expected dtype float32"):
        vdev.run_workers(lowered(ALLREDUCE), [[np.zeros(8, np.float32)], [np.zeros(8, np.int32)]])
    with pytest.raises(ValueError):
        vdev.run_workers(lowered(ALLREDUCE), [])


TWO_WORKER_ALLREDUCE = """def @main(%x: f32[8]) -> f32[8] {
  %0 = allreduce(%x, op=sum, workers=2)
  return %0
}
"""


def built_allreduce(workers=None):
    """The all-reduce program built in Python: `op` is an attribute like any other."""
    attrs = {} if workers is None else {"workers": workers}
    with vdev.Builder() as b:
        t = b.tensor_type("f32", [8])
        with b.function("main", result=t):
            b.ret(b.op("allreduce", b.param("x", t), op="sum", **attrs))
    return b.module


def test_run_workers_refuses_a_count_the_program_is_not_written_for():
    program = lowered(TWO_WORKER_ALLREDUCE)
    xs = [np.full(8, k + 1, np.float32) for k in range(3)]
    with pytest.raises(ValueError, match=r"program.vdev:2:\d+: error: the all-reduce %0 is written for 2 workers "
                                         r"\(workers=2\); it cannot run on 3"):
        vdev.run_workers(program, [[x] for x in xs])
    for [out] in vdev.run_workers(program, [[x] for x in xs[:2]]):
        np.testing.assert_array_equal(out, xs[0] + xs[1])


@settings(max_examples=20, deadline=None)
@given(written_for=st.one_of(st.none(), st.integers(1, 4)), workers=st.integers(1, 4))
def test_a_worker_count_is_refused_exactly_when_the_program_states_another(written_for, workers):
    program = vdev.lower(vdev.plan(built_allreduce(written_for)))
    xs = [np.full(8, k + 1, np.float32) for k in range(workers)]
    if written_for is not None and written_for != workers:
        with pytest.raises(ValueError, match=f"written for {written_for} workers"):
            vdev.run_workers(program, [[x] for x in xs])
        return
    # Without `workers=`, the count is not knowable: the all-reduce sums however many run.
    for [out] in vdev.run_workers(program, [[x] for x in xs]):
        np.testing.assert_array_equal(out, np.full(8, workers * (workers + 1) / 2, np.float32))


def test_an_unknown_op_is_named_with_the_closest_known_one():
    program = lowered("def @main(%x: f32[8]) -> f32[8] {\n  %0 = negatve(%x)\n  return %0\n}\n")
    with pytest.raises(vdev.RunError, match=r"op 'negatve' has no kernel .*\(did you mean 'negative'\?\)"):
        vdev.run(program, np.zeros(8, np.float32))


def test_running_releases_the_gil():
    n = 512
    program = f"def @main(%a: f32[{n},{n}] on cpu:0) {{\n" + "".join(
        f"  %{i} = matmul({'%a' if i == 0 else f'%{i - 1}'}, %a)\n" for i in range(8)) + "  return %7\n}\n"
    executor = vdev.Executor(lowered(program))
    a = np.eye(n, dtype=np.float32)
    window, ticks = {}, []

    def work():
        window["start"] = time.perf_counter()
        window["out"] = executor.run(a)
        window["end"] = time.perf_counter()

    worker = threading.Thread(target=work)
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    np.testing.assert_array_equal(window["out"][0], a)
    assert sum(window["start"] < t < window["end"] for t in ticks) > 100


class Producer:
    """A DLPack producer that is not a NumPy array: exports `array` and records each export."""

    def __init__(self, array, device=(1, 0)):
        self.array, self.device, self.capsules = array, device, []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        capsule = self.array.__dlpack__()
        self.capsules.append(capsule)
        return capsule


def test_dlpack_producers_are_read_in_place():
    a, b, c, d = arrays(4, (5, 7))
    producers = [Producer(x) for x in (a, b, c, d)]
    executor = vdev.Executor(lowered(LEFT_ADD))
    [out] = executor.run(*producers)
    np.testing.assert_allclose(out, (a + b) - (c + d), rtol=1e-6)
    # Each capsule was consumed (renamed by the protocol), so its memory was read, not re-exported.
    for p in producers:
        assert len(p.capsules) == 1 and "used_dltensor" in repr(p.capsules[0])
    # The producers' memory is read at every run: a change between runs shows in the result.
    a += 1
    [out] = executor.run(*producers)
    np.testing.assert_allclose(out, (a + b) - (c + d), rtol=1e-6)


def test_dlpack_inputs_are_checked():
    executor = vdev.Executor(lowered(LEFT_ADD))
    a, b, c, d = arrays(4, (5, 7))
    wide = np.zeros((5, 14), np.float32)
    with pytest.raises(ValueError, match=r"input 3 \(%d: f32\[5,7\]\): the DLPack tensor is not C-contiguous "
                                         r"\(strides \[14, 2\] elements\); pass a contiguous copy"):
        executor.run(a, b, c, Producer(wide[:, ::2]))
    with pytest.raises(TypeError, match=r"input 0 \(%a: f32\[5,7\]\): expected dtype f32, found DLPack float64"):
        executor.run(Producer(a.astype(np.float64)), b, c, d)
    with pytest.raises(TypeError, match="expected dtype f32, found DLPack int32"):
        executor.run(Producer(a.astype(np.int32)), b, c, d)
    with pytest.raises(ValueError, match=r"expected shape \[5, 7\], found \[7, 5\]"):
        executor.run(a, Producer(np.ascontiguousarray(b.T)), c, d)
    gpu = Producer(a, device=(2, 0))
    with pytest.raises(ValueError, match="on device type 2 .*host memory"):
        executor.run(gpu, b, c, d)
    assert gpu.capsules == []  # refused before anything was exported


def test_outputs_export_through_dlpack_without_a_copy():
    [out] = vdev.run(lowered(LEFT_ADD), *arrays(4, (5, 7)))
    assert out.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(out)  # read-only: NumPy 1.24 marks every DLPack import so
    assert np.shares_memory(view, out)
    assert view.__array_interface__["data"][0] == out.__array_interface__["data"][0]
    out[1, 2] = 7.0
    assert view[1, 2] == 7.0


def test_outputs_outlive_the_executor():
    a, b, c, d = arrays(4, (5, 7))
    executor = vdev.Executor(lowered(LEFT_ADD))
    [out] = executor.run(a, b, c, d)
    exported = np.from_dlpack(out)
    owner = weakref.ref(executor)
    del executor
    gc.collect()
    assert owner() is None
    # The buffer belongs to the arrays (a capsule whose deleter frees it), not to the executor.
    np.testing.assert_allclose(exported, (a + b) - (c + d), rtol=1e-6)
    del out
    gc.collect()
    np.testing.assert_allclose(exported, (a + b) - (c + d), rtol=1e-6)


def has_gpu():
    return os.path.exists("/dev/nvidiactl")


@pytest.mark.skipif(has_gpu(), reason="checks the error a machine without a GPU gives")
def test_the_cuda_backend_without_a_gpu_is_a_clear_error():
    with pytest.raises(vdev.RunError, match="no CUDA device is visible|built without the CUDA runtime"):
        vdev.run(lowered(LEFT_ADD), *arrays(4, (5, 7)), backend="cuda")
    with pytest.raises(ValueError, match="unknown backend 'tpu' \\(expected host or cuda\\)"):
        vdev.Executor(lowered(LEFT_ADD), backend="tpu")


@pytest.mark.skipif(not has_gpu(), reason="needs a GPU")
def test_the_cuda_backend_computes_what_numpy_computes():
    a, b, c, d = arrays(4, (5, 7))
    executor = vdev.Executor(lowered(LEFT_ADD), backend="cuda")
    assert executor.backend == "cuda"
    [out] = executor.run(a, b, c, d)
    np.testing.assert_allclose(out, (a + b) - (c + d), rtol=1e-5)


def test_dlpack_inputs_are_released_and_outputs_freed():
    a, b, c, d = arrays(4, (5, 7))
    executor = vdev.Executor(lowered(LEFT_ADD))
    before = [sys.getrefcount(x) for x in (a, b, c, d)]
    for _ in range(10):
        executor.run(*(Producer(x) for x in (a, b, c, d)))
    # NumPy's DLPack deleter drops the reference its export took: every consumed capsule's ran.
    assert [sys.getrefcount(x) for x in (a, b, c, d)] == before

    n = 1024
    big = lowered(f"def @main(%a: f32[{n},{n}] on cpu:0) {{\n  %0 = negative(%a)\n  return %0\n}}\n")
    run = vdev.Executor(big)
    x = np.ones((n, n), np.float32)
    run.run(x)
    start = resident_bytes()
    for _ in range(100):  # 400 MB of outputs made and dropped
        [out] = run.run(Producer(x))
        del out
    assert resident_bytes() - start < 64 << 20


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
