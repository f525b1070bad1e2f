"""vdev.compile: the pipeline of include/vdev/compile/compile.h from Python, stage by stage, equal to what
vdev.parse / vdev.plan / vdev.lower and the command line give, and its errors located."""

import json

import numpy as np
import pytest

import vdev
from conftest import REPO
from test_plan import CONFLICT

TRANSFORMER = REPO / "examples" / "memory" / "tp_transformer_10.vdev"


def test_compile_equals_parse_plan_lower_and_the_cli(cli):
    text = TRANSFORMER.read_text()
    compiled = vdev.compile(text, file=str(TRANSFORMER))
    assert compiled.stage == "check" and compiled.diagnostics == []
    lowered = vdev.lower(vdev.plan(vdev.parse(text, file=str(TRANSFORMER))))
    assert compiled.lowered.to_json() == lowered.to_json() == cli("lower", str(TRANSFORMER), "--json").stdout
    assert compiled.text() == compiled.lowered.text() == lowered.text()
    assert compiled.module.text() == lowered.module.text()


def test_compile_takes_a_module_and_the_options_of_plan_and_lower(spec_dir):
    module = vdev.parse((spec_dir / "examples" / "left_add_on_cpu.vdev").read_text())
    compiled = vdev.compile(module, strategy="nccl", alignment=64, default="cuda:1")
    plan = vdev.plan(module, default="cuda:1")
    expected = vdev.lower(plan, strategy="nccl", alignment=64)
    assert compiled.lowered.to_json() == expected.to_json()
    assert compiled.plan.placement() == plan.placement() != vdev.plan(module).placement()
    assert vdev.VirtualDevice.parse("cuda:1") in plan.placement().values()


def test_each_stage_stops_where_asked(cli, tmp_path):
    path = tmp_path / "conflict.vdev"
    path.write_text(CONFLICT)
    parsed = vdev.compile(CONFLICT, stop_after="parse")
    assert parsed.plan is None and parsed.lowered is None and "on_device" in parsed.text()
    typed = vdev.compile(CONFLICT, file=str(path), stop_after="types")
    assert typed.lowered is None and typed.stage == "types"
    # `vdev plan` runs up to the types stage: same report, same warnings.
    run = cli("plan", str(path), "--json")
    assert json.loads(typed.plan.to_json()) == json.loads(run.stdout)
    assert [w.text for w in typed.diagnostics] == [w.text for w in typed.plan.warnings]
    assert len(typed.diagnostics) == 1 and typed.diagnostics[0].file == str(path)
    lowered = vdev.compile(CONFLICT, file=str(path), stop_after="lower")
    assert "memory.alloc_storage" in lowered.text() and lowered.lowered.pools


def test_a_compiled_program_runs():
    compiled = vdev.compile(CONFLICT)
    a = np.array([1.5, -2.0], np.float32)
    [out] = vdev.run(compiled.lowered, a)
    np.testing.assert_array_equal(out, -2 * a)


def test_compile_errors_are_the_stages_exceptions():
    with pytest.raises(vdev.ParseError) as info:
        vdev.compile("def @main(%x: f32[2]) {\n  return %y\n}\n", file="bad.vdev")
    assert (info.value.file, info.value.line) == ("bad.vdev", 2) and "bad.vdev:2:" in str(info.value)
    with pytest.raises(vdev.PlanningError) as info:
        vdev.compile(CONFLICT, file="c.vdev", strict=True)
    assert sorted(str(c.device) for c in info.value.conflicts) == ["cpu:0", "cuda:0"]
    with pytest.raises(vdev.LoweringError):
        vdev.compile("def @main(%x: f32[2] on cuda) {\n  %0 = negative(%x)\n  return %0\n}\n",
                     default="cuda")
    with pytest.raises(ValueError, match="unknown stage 'link'"):
        vdev.compile(CONFLICT, stop_after="link")
    with pytest.raises(ValueError, match="needs program text"):
        vdev.compile(vdev.parse(CONFLICT), stop_after="parse")
    with pytest.raises(TypeError, match="program text or a vdev.Module, found bytes"):
        vdev.compile(CONFLICT.encode())
    with pytest.raises(ValueError, match="unknown all-reduce strategy"):
        vdev.compile(CONFLICT, strategy="fastest")


def test_compile_optimizes_as_plan_does():
    from test_optimize import MACHINE, PROGRAM
    machine = vdev.Machine.from_json(MACHINE)
    compiled = vdev.compile(PROGRAM, optimize=True, machine=machine, stop_after="types")
    plan = vdev.plan(vdev.parse(PROGRAM), optimize=True, machine=machine)
    assert compiled.plan.optimal is True and compiled.plan.cost == plan.cost
    assert json.loads(compiled.plan.to_json()) == json.loads(plan.to_json())
    assert vdev.compile(PROGRAM, optimize=True, machine=machine).lowered.pools
    with pytest.raises(ValueError, match="machine= is what optimize=True plans for"):
        vdev.compile(PROGRAM, machine=machine)


def test_the_other_spelling_of_a_strategy_is_accepted_with_a_warning():
    text = TRANSFORMER.read_text()
    with pytest.warns(UserWarning, match="'one_shot' is spelled 'one-shot'"):
        underscored = vdev.compile(text, strategy="one_shot")
    assert underscored.lowered.to_json() == vdev.compile(text, strategy="one-shot").lowered.to_json()
    assert 'strategy="one-shot"' in underscored.text()
