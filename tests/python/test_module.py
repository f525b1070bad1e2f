"""vdev.parse / vdev.Module / vdev.Builder: text round trips, located errors, programs built in Python."""

import pathlib

import pytest
from hypothesis import given, settings

import vdev
import vdev.testing as vt

REPO = pathlib.Path(__file__).resolve().parents[2]


def example_texts(spec_dir):
    paths = sorted(spec_dir.glob("examples/*.vdev")) + sorted((REPO / "examples").glob("*/*.vdev"))
    assert paths, "no example programs found"
    return [(p.name, p.read_text()) for p in paths]


def test_text_module_text_is_a_fixed_point(spec_dir, cli):
    for name, text in example_texts(spec_dir):
        printed = vdev.parse(text, file=name).text()
        assert vdev.parse(printed).text() == printed, name


def test_canonical_text_equals_vdev_fmt(spec_dir, cli):
    for path in sorted(spec_dir.glob("examples/*.vdev")):
        fmt = cli("fmt", str(path))
        assert fmt.returncode == 0, fmt.stderr
        assert str(vdev.parse(path.read_text())) == fmt.stdout


@settings(max_examples=300)
@given(vt.programs())
def test_generated_programs_round_trip(text):
    printed = vdev.parse(text).text()
    assert vdev.parse(printed).text() == printed


def test_inferred_types_are_written_on_request():
    m = vdev.parse("def @main(%a: f32[2]) {\n  %0 = add(%a, %a)\n  return %0\n}\n")
    assert "%0: f32[2] = add" in m.text(inferred_types=True)
    assert "%0: f32[2]" not in m.text()
    assert m.functions == ["main"]


def test_parse_error_is_located_like_the_command_line(cli, tmp_path):
    text = "def @main(%a: f32[2]) {\n  %0 = add(%a, %zz)\n  return %0\n}\n"
    with pytest.raises(vdev.ParseError) as info:
        vdev.parse(text, file="bad.vdev")
    e = info.value
    assert (e.file, e.line, e.col) == ("bad.vdev", 2, 16)
    assert "undefined name '%zz'" in e.message
    path = tmp_path / "bad.vdev"
    path.write_text(text)
    fmt = cli("fmt", str(path))
    assert fmt.returncode == 2
    assert str(e) + "\n" == fmt.stderr.replace(str(path), "bad.vdev")


def test_builder_builds_the_text_format_program():
    with vdev.Builder() as b:
        b.config(targets=["llvm", "cuda"], default="cuda:0", host="cpu:0")
        t = b.tensor_type("f32", [5, 7])
        with b.function("main"):
            x, y = b.param("x", t), b.param("y", t, device="cpu:0")
            s = b.op("add", x, y, name="sum")
            c = b.on_device(s, "cpu:0", constrain_result=True)
            b.ret(b.op("negative", c))
    assert str(b.module) == (
        "config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n"
        "def @main(%x: f32[5,7], %y: f32[5,7] on cpu:0) {\n"
        "  %sum = add(%x, %y)\n"
        "  %0 = on_device(%sum, cpu:0, constrain_result=true)\n"
        "  %1 = negative(%0)\n"
        "  return %1\n"
        "}\n")
    assert vdev.parse(str(b.module)).text() == b.module.text()


def test_builder_if_fn_kernel_tuple_and_global_calls():
    with vdev.Builder() as b:
        t = b.tensor_type("f32", [4])
        cond_t = b.tensor_type("bool", [])
        with b.kernel("k", result=t, result_device="/global"):
            b.param("a", t, device="/shared")
        with b.function("main", result=t):
            x, c = b.param("x", t), b.param("c", cond_t)
            with b.if_(c, name="r") as arm:
                b.ret(b.op("negative", x))
                arm.orelse()
                b.ret(x)
            with b.fn(result=t, name="f") as f:
                a = b.param("a", t)
                b.ret(b.op("add", a, a))
            pair = b.tuple([b.call(f.value, arm.value), b.call("k", x)])
            b.ret(b.project(pair, 1))
    text = b.module.text()
    assert "kernel @k(%a: f32[4] on /shared) -> f32[4] on /global" in text
    assert "%r = if %c {" in text and "%f = fn(%a: f32[4]) -> f32[4] {" in text and "@k(%x)" in text
    plan = vdev.plan(b.module)
    assert plan.device_of("r") == plan.device_of("x")


def test_builder_misuse_raises_build_error():
    b = vdev.Builder()
    t = b.tensor_type("f32", [2])
    b.begin_function("main")
    b.param("x", t)
    with pytest.raises(vdev.BuildError):
        b.finish()
    with pytest.raises(RuntimeError):
        b.param("y", t)


def test_builder_refuses_a_type_over_2_to_the_63_bytes():
    # 2^62 + 1 elements of 4 bytes: the count fits in 64 bits, the bytes do not.
    b = vdev.Builder()
    t = b.tensor_type("f32", [4611686018427387905, 4])
    b.begin_function("main")
    x = b.param("x", t)
    b.ret(x)
    b.end_function()
    with pytest.raises(vdev.BuildError, match=r"parameter '%x' has type .* larger than 2\^63-1 bytes"):
        b.finish()


def test_builder_module_is_made_when_the_block_ends():
    b = vdev.Builder()
    with pytest.raises(vdev.BuildError):
        _ = b.module
    with pytest.raises(TypeError):
        with b:
            t = b.tensor_type("f32", [2])
            with b.function("main"):
                b.ret(b.op("add", object()))
    with pytest.raises(vdev.BuildError):
        _ = b.module


def test_operand_kinds_print_as_written():
    with vdev.Builder() as b:
        t = b.tensor_type("f32", [2])
        with b.function("main"):
            x = b.param("x", t)
            s = b.op("my.op", x, 2, 2.5, [1, 2], vdev.VirtualDevice.parse("cuda:1"), vdev.Global("main"),
                     flag=True, mode="NCHW", n=-3)
            b.ret(s)
    assert "my.op(%x, 2, 2.5, [1, 2], cuda:1, @main, flag=true, mode=NCHW, n=-3)" in b.module.text()
