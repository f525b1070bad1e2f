"""vdev.VirtualDevice and vdev.Target: construction, fields, predicates, errors, equality."""

import pickle

import pytest

import vdev


def test_keyword_construction_prints_the_canonical_literal():
    d = vdev.VirtualDevice(device_type="cuda", device_id=3, target="cuda -arch=sm_90", memory_scope="global")
    assert str(d) == "cuda:3[cuda -arch=sm_90]/global"
    assert (d.device_type, d.device_id, d.memory_scope) == ("cuda", 3, "global")
    assert d.target == vdev.Target("cuda -arch=sm_90")
    assert d.is_fully_constrained and not d.is_fully_unconstrained


def test_unset_fields_are_none_and_the_bottom_prints_as_question_mark():
    d = vdev.VirtualDevice()
    assert str(d) == "?"
    assert (d.device_type, d.device_id, d.target, d.memory_scope) == (None, None, None, None)
    assert d.is_fully_unconstrained
    assert not (d.has_device_type or d.has_device_id or d.has_target or d.has_memory_scope)


def test_a_target_implies_the_device_type():
    assert vdev.VirtualDevice(target="llvm").device_type == "cpu"


@pytest.mark.parametrize("kwargs", [
    {"device_type": "tpu"},
    {"device_id": -1},
    {"memory_scope": ""},
    {"device_type": "cpu", "target": "cuda"},
])
def test_invalid_fields_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        vdev.VirtualDevice(**kwargs)


def test_fields_are_keyword_only():
    with pytest.raises(TypeError):
        vdev.VirtualDevice("cuda")  # type: ignore[misc]


def test_join_and_default_accept_literals():
    assert vdev.join("cuda:3", "cuda[cuda]/global") == vdev.VirtualDevice.parse("cuda:3[cuda]/global")
    assert vdev.join("cuda:3", "cuda:4") is None
    assert vdev.default("cuda", "cpu:1") == vdev.VirtualDevice.parse("cuda:1")
    assert vdev.VirtualDevice.parse("cuda:3").join("cpu") is None


def test_parse_error_carries_the_column():
    with pytest.raises(vdev.ParseError) as info:
        vdev.VirtualDevice.parse("cuda:x")
    assert (info.value.line, info.value.col) == (1, 6)
    assert str(info.value).splitlines() == [
        "<device>:1:6: error: expected a non-negative device id after ':', found 'x'", "  cuda:x", "       ^"]
    assert isinstance(info.value, ValueError)


def test_equal_devices_hash_alike_and_pickle():
    a = vdev.VirtualDevice.parse("cuda:0[cuda]/global")
    b = vdev.VirtualDevice(device_type="cuda", device_id=0, target=vdev.Target("cuda"), memory_scope="global")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert pickle.loads(pickle.dumps(a)) == a
    assert a != "cuda:0[cuda]/global"


def test_target_fields_and_structural_equality():
    t = vdev.Target('cuda -arch=sm_90 -host="llvm -mcpu=znver4"')
    assert t.kind == "cuda" and t.device_type == "cuda"
    assert t.options == {"arch": "sm_90"}
    assert t.host == vdev.Target("llvm -mcpu=znver4")
    assert vdev.Target("cuda") == vdev.Target.parse("cuda") and hash(vdev.Target("cuda")) == hash(vdev.Target("cuda"))
    assert vdev.Target(str(t)) == t


def test_bad_target_text_raises_parse_error():
    with pytest.raises(vdev.ParseError) as info:
        vdev.Target("warp9")
    assert info.value.col == 1
