"""vdev.plan(optimize=True, machine=...): the cost-optimal placement of `vdev plan --optimize`, from
Python, equal to the command line's report."""

import json

import pytest

import vdev

MACHINE = """{"devices": [
    {"device": "cpu:0", "memory_gb": 64, "bandwidth_gbs": 100, "default_tflops": 1},
    {"device": "cuda:0", "memory_gb": 80, "bandwidth_gbs": 3000, "default_tflops": 60}],
  "links": [{"between": ["cpu:0", "cuda:0"], "bandwidth_gbs": 50, "latency_us": 10}],
  "ops": {"topk": ["cpu"]}}"""

PROGRAM = """def @main(%x: f32[256,256]) -> f32[256,256] {
  %0 = matmul(%x, %x)
  %1 = on_device(%0, ?, constrain_body=false, constrain_result=false)
  %2 = topk(%1)
  return %2
}
"""


def test_optimize_places_an_op_where_it_is_supported_and_costs_the_plan():
    plan = vdev.plan(vdev.parse(PROGRAM), optimize=True, machine=vdev.Machine.from_json(MACHINE))
    assert plan.optimal is True
    assert plan.device_of("2") == vdev.VirtualDevice.parse("cpu:0")
    assert plan.cost.total > 0 and plan.cost.total == pytest.approx(plan.cost.compute + plan.cost.copy)
    assert plan.default_cost.unsupported_ops == 1  # topk on cuda:0 without optimize
    assert plan.cost.total <= plan.default_cost.total or plan.default_cost.unsupported_ops > 0


def test_optimized_report_equals_the_cli(cli, tmp_path):
    (tmp_path / "machine.json").write_text(MACHINE)
    (tmp_path / "p.vdev").write_text(PROGRAM)
    run = cli("plan", str(tmp_path / "p.vdev"), "--optimize", "--json", "--machine", str(tmp_path / "machine.json"))
    assert run.returncode == 0, run.stderr
    plan = vdev.plan(vdev.parse(PROGRAM), optimize=True, machine=vdev.Machine.from_json(MACHINE))
    assert json.loads(plan.to_json()) == json.loads(run.stdout)
    assert plan.to_json() == run.stdout


def test_default_machine_matches_the_cli_default(cli, tmp_path, spec_dir):
    path = spec_dir / "examples" / "left_add_on_cpu.vdev"
    run = cli("plan", str(path), "--optimize", "--json")
    assert run.returncode == 0, run.stderr
    plan = vdev.plan(vdev.parse(path.read_text()), optimize=True)
    assert plan.to_json() == run.stdout
    assert [str(d) for d in vdev.Machine.default(2).devices] == ["cpu:0", "cuda:0", "cuda:1"]
    assert vdev.Machine.default(2) == vdev.Machine.default(2) != vdev.Machine.default(1)


def test_an_unsatisfiable_annotation_is_a_located_planning_error():
    text = "def @main(%x: f32[4]) -> f32[4] {\n  %0 = topk(%x)\n  %1 = on_device(%0, cuda:0)\n  return %1\n}\n"
    with pytest.raises(vdev.PlanningError, match="topk at 2:8"):
        vdev.plan(vdev.parse(text, file="bad.vdev"), optimize=True, machine=vdev.Machine.from_json(MACHINE))


def test_plans_without_optimize_have_no_cost_and_bad_options_raise():
    plan = vdev.plan(vdev.parse(PROGRAM))
    assert plan.cost is None and plan.optimal is None and plan.default_cost is None
    with pytest.raises(ValueError, match="optimize=True"):
        vdev.plan(vdev.parse(PROGRAM), machine=vdev.Machine.default())
    with pytest.raises(ValueError):
        vdev.Machine.from_json('{"devices": []')
    with pytest.raises(ValueError):
        vdev.plan(vdev.parse(PROGRAM), optimize=True, time_limit=0)
