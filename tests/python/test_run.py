"""vdev.run / vdev.Executor / vdev.run_workers: lowered programs run on the CPU kernels, NumPy in
and out, checked against NumPy's own arithmetic."""

import threading
import time

import numpy as np
import pytest

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
    # A non-contiguous view is accepted (copied in order).
    [out] = executor.run(a, b, c, np.asfortranarray(d))
    np.testing.assert_allclose(out, (a + b) - (c + d), rtol=1e-6)


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
