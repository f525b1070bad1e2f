"""Shared settings of the Python suite: Hypothesis without a database (CI starts clean), the vdev
command line and the spec directory the C++ tests also read."""

import os
import pathlib
import subprocess

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("vdev", database=None, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("vdev")

REPO = pathlib.Path(__file__).resolve().parents[2]


def _spec_dir() -> pathlib.Path:
    env = os.environ.get("VDEV_SPEC_DIR")
    if env:
        return pathlib.Path(env)
    return REPO / "docs" / "spec"


@pytest.fixture(scope="session")
def spec_dir() -> pathlib.Path:
    return _spec_dir()


@pytest.fixture(scope="session")
def cli():
    """Runs the `vdev` command line (VDEV_CLI, else build/tools/vdev) and returns the completed process."""
    path = os.environ.get("VDEV_CLI", str(REPO / "build" / "tools" / "vdev"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"the vdev command line is not at {path} (set VDEV_CLI)")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([path, *args], capture_output=True, text=True, check=False)

    return run
