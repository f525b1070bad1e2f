"""The lattice laws of include/vdev/lattice/virtual_device.h, checked from Python with Hypothesis on
VDEV_HYPOTHESIS_EXAMPLES drawn examples each (1,000 by default: every pair of the 54-device domain is
2,916 cases, and the C++ suite checks the laws exhaustively on that domain and with RapidCheck)."""

import os

from hypothesis import given, settings
from hypothesis import strategies as st

import vdev
import vdev.testing as vt

devices = vt.virtual_devices()
BOTTOM = vdev.VirtualDevice()
many = settings(max_examples=int(os.environ.get("VDEV_HYPOTHESIS_EXAMPLES", "1000")))

FIELDS = ("device_type", "device_id", "target", "memory_scope")


def agrees(joined, d):
    """Every field `d` sets is set the same way in `joined`."""
    return all(getattr(d, f) is None or getattr(joined, f) == getattr(d, f) for f in FIELDS)


@many
@given(devices, devices)
def test_join_is_commutative(a, b):
    assert a.join(b) == b.join(a)


@many
@given(devices, devices, devices)
def test_join_is_associative(a, b, c):
    # Both groupings agree, None included: a conflict shows whichever pair is joined first.
    ab, bc = a.join(b), b.join(c)
    left = ab.join(c) if ab is not None else None
    right = a.join(bc) if bc is not None else None
    assert left == right


@many
@given(devices)
def test_join_is_idempotent_and_bottom_is_its_identity(a):
    assert a.join(a) == a
    assert a.join(BOTTOM) == a
    assert BOTTOM.join(a) == a


@many
@given(devices, devices)
def test_join_agrees_with_both_and_fails_exactly_on_a_differing_field(a, b):
    joined = a.join(b)
    differs = any(getattr(a, f) is not None and getattr(b, f) is not None and getattr(a, f) != getattr(b, f)
                  for f in FIELDS)
    implied_type_conflict = any(
        x.target is not None and y.device_type is not None and x.target.device_type != y.device_type
        for x, y in ((a, b), (b, a)))
    assert (joined is None) == (differs or implied_type_conflict)
    if joined is not None:
        assert agrees(joined, a) and agrees(joined, b)


@many
@given(devices, devices)
def test_default_keeps_every_field_the_first_sets(a, b):
    assert agrees(a.default(b), a)
    assert a.default(BOTTOM) == a
    assert BOTTOM.default(b) == b
    assert a.default(a) == a


@many
@given(devices, devices)
def test_default_is_idempotent_in_its_first_argument(a, b):
    assert a.default(b).default(b) == a.default(b)


@many
@given(devices, devices)
def test_default_equals_join_when_the_join_exists_and_targets_agree(a, b):
    joined = a.join(b)
    if joined is not None and (a.target is None or b.target is None or a.target == b.target):
        assert a.default(b) == joined


@many
@given(devices)
def test_literal_round_trips(a):
    assert vdev.VirtualDevice.parse(str(a)) == a
    assert hash(vdev.VirtualDevice.parse(str(a))) == hash(a)


@settings(max_examples=500)
@given(st.text(alphabet="cpuda:*?/[]0123456789 -=_gl", max_size=12))
def test_parse_raises_parse_error_or_round_trips(text):
    try:
        d = vdev.VirtualDevice.parse(text)
    except vdev.ParseError as e:
        assert e.line == 1 and 1 <= e.col <= len(text) + 1
        assert str(e).startswith(f"<device>:1:{e.col}: error: ")
    else:
        assert vdev.VirtualDevice.parse(str(d)) == d
