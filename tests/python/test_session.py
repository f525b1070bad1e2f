"""vdev.Session from Python: threaded and process workers, DRefs, copies, collectives, faults,
and nothing left behind (processes, shared memory)."""

import os

import numpy as np
import pytest

import vdev

BACKENDS = {"threaded": vdev.Session.threaded, "process": vdev.Session.process}


def shm_entries():
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 2, 4])
def test_each_worker_holds_its_own_value(backend, n):
    with BACKENDS[backend](n) as session:
        assert session.num_workers == n
        ids = session.call_packed(session.get_global_func("vdev.worker.id"))
        session.sync_all_workers()
        assert [ids.debug_get_from_remote(w) for w in range(n)] == list(range(n))
        assert session.debug_get_from_remote(ids.reg_id, n - 1) == n - 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_arrays_copy_to_worker0_and_back_bit_for_bit(backend):
    with BACKENDS[backend](2) as session:
        for array in [np.arange(12, dtype=np.float32).reshape(3, 4), np.array([1.5, -0.0, np.inf], np.float16),
                      np.array([[True, False]]), np.arange(5, dtype=np.int64)]:
            register = session.call_packed(session.get_global_func("vdev.tensor.empty"), array.shape,
                                           {np.float32: "f32", np.float16: "f16", np.bool_: "bool",
                                            np.int64: "i64"}[array.dtype.type])
            session.copy_to_worker0(np.asfortranarray(array), register)
            back = session.copy_from_worker0(register)
            assert back.dtype == array.dtype and back.tobytes() == array.tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
def test_host_all_reduce_sums_every_workers_tensor(backend):
    with BACKENDS[backend](4) as session:
        session.init_ccl("host")
        ids = session.call_packed(session.get_global_func("vdev.worker.id"))
        mine = session.call_packed(session.get_global_func("vdev.tensor.full"), (3,), "f32", ids)
        total = session.call_packed(session.get_global_func("vdev.ccl.allreduce"), mine)
        np.testing.assert_array_equal(session.copy_from_worker0(total), np.full(3, 0 + 1 + 2 + 3, np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failing_call_raises_and_the_session_refuses_later_calls(backend):
    with BACKENDS[backend](2) as session:
        with pytest.raises(vdev.SessionError, match='no worker function named "no.such.function"'):
            session.get_global_func("no.such.function")
            session.sync_all_workers()
        with pytest.raises(vdev.SessionError):
            session.sync_worker(0)


def test_arguments_of_unknown_kinds_are_type_errors():
    with vdev.Session.threaded(1) as session:
        with pytest.raises(TypeError, match="cannot pass a dict"):
            session.call_packed(session.get_global_func("vdev.worker.id"), {})
        with pytest.raises(TypeError, match="no tensors of dtype"):
            session.copy_to_worker0(np.zeros(2, np.complex64), session.call_packed(
                session.get_global_func("vdev.tensor.empty"), (2,), "f32"))


def test_process_workers_and_shared_memory_are_gone_after_the_session():
    with vdev.Session.process(2) as session:
        session.init_ccl("host")
        pids = session.worker_pids
        assert len(pids) == 2
        memory = session.call_packed(session.get_global_func("vdev.ipc.alloc"), 4096)
        session.sync_all_workers()
        session_id, rendezvous = session.ccl_session_id, session.ccl_rendezvous_dir
        assert session_id and rendezvous
        del memory
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    # Only this session's segments (named after its id): other tests may run beside this one.
    assert not [e for e in shm_entries() if e.startswith(f"vdev-{session_id}-")]
    assert not os.path.exists(rendezvous)
