"""Properties of vdev.plan over programs drawn by vdev.testing: how users property-test a pass.
The C++ suite checks the same properties with RapidCheck (tests/planner/plan_properties_test.cc)."""

import json

from hypothesis import assume, given, settings

import vdev
import vdev.testing as vt

some = settings(max_examples=300)


def plan_or_none(module, **options):
    try:
        return vdev.plan(module, **options)
    except vdev.PlanningError:
        return None


@some
@given(vt.modules())
def test_a_plan_has_no_annotations_left_and_replans_to_itself(module):
    plan = plan_or_none(module)
    assume(plan is not None)
    assert "on_device(" not in plan.text()
    again = vdev.plan(plan.module)
    assert again.text() == plan.text()
    assert again.warnings == []


@some
@given(vt.modules())
def test_strict_fails_exactly_when_the_lenient_plan_warns(module):
    lenient = plan_or_none(module)
    assume(lenient is not None)
    strict = plan_or_none(module, strict=True)
    assert (strict is None) == bool(lenient.warnings)


@some
@given(vt.modules())
def test_every_copy_moves_between_different_devices_and_is_reported(module):
    plan = plan_or_none(module)
    assume(plan is not None)
    report = json.loads(plan.to_json())
    listed = [(c["of"], c["src"], c["dst"]) for f in report["functions"].values() for c in f["copies"]]
    assert sorted(listed) == sorted((c.of, str(c.src), str(c.dst)) for c in plan.copies)
    assert all(c.src != c.dst for c in plan.copies)
