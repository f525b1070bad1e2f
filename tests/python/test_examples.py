"""examples/python runs as documented: the planned placement is printed, the plots are written."""

import os
import pathlib
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def run_example(name, *args):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, str(REPO / "examples" / "python" / name), *args], capture_output=True,
                          text=True, env=env, check=False)


def test_plan_program_prints_where_each_value_lives():
    run = run_example("plan_program.py")
    assert run.returncode == 0, run.stderr
    lines = [line.split() for line in run.stdout.splitlines()]
    placement = {words[0]: words[1] for words in lines if len(words) == 2 and words[0].startswith("%")}
    assert placement["%h"] == "cpu:0" and placement["%x"] == "cpu:0"
    assert placement["%n"] == placement["%out"] == "cuda:0"
    assert "copy of %h: cpu:0 -> cuda:0 (into n)" in run.stdout
    # The example compares the whole placement with the one its docstring states.
    assert "placement as stated in EXPECTED_PLACEMENT" in run.stdout


def test_plot_placement_writes_the_graph_and_the_pool_chart(tmp_path):
    run = run_example("plot_placement.py", str(REPO / "examples/memory/tp_pp_transformer_10.vdev"), str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert "values on cpu:0, cuda:0, cuda:1" in run.stdout
    assert (tmp_path / "placement.dot").read_text().startswith("digraph")
    assert (tmp_path / "pools.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if shutil.which("dot"):
        assert "<svg" in (tmp_path / "placement.svg").read_text()
