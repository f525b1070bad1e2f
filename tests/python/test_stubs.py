"""The type stubs python/vdev/_vdev.pyi name exactly what the extension defines
(scripts/check_python_stubs.py), and the check notices a stub that drifts."""

import importlib.util
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
STUB = REPO / "python" / "vdev" / "_vdev.pyi"


def load_checker():
    spec = importlib.util.spec_from_file_location("check_python_stubs", REPO / "scripts" / "check_python_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stubs_match_the_extension():
    assert load_checker().check(str(STUB), "vdev._vdev") == []


def test_the_check_reports_missing_extra_and_renamed_names(tmp_path):
    text = STUB.read_text()
    drifted = (text.replace("def to_dot(self) -> str: ...", "def to_svg(self) -> str: ...")
               .replace("def lower(plan: Plan, *, strategy", "def lower(plan: Plan, *, kind"))
    assert drifted != text
    path = tmp_path / "_vdev.pyi"
    path.write_text(drifted)
    problems = load_checker().check(str(path), "vdev._vdev")
    assert any("Plan.to_dot: in the module, not in the stubs" in p for p in problems)
    assert any("Plan.to_svg: in the stubs, not in the module" in p for p in problems)
    assert any(p.startswith("vdev._vdev.lower: parameters") for p in problems)
