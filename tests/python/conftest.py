"""Shared fixtures of the Python package's tests: a fixed seed, and the MXNet 1.9.1 environment
for the comparisons that need it (tests using it skip where .venv-mxnet is missing)."""
import os
import subprocess

import pytest

# Under ASan the sanitizer runtime is preloaded into this process only: the processes the tests
# start (the kiln command line, MXNet's Python) bring their own or none.
if os.environ.get("KILN_ASAN_PRELOAD") and os.environ.get("LD_PRELOAD") == os.environ["KILN_ASAN_PRELOAD"]:
    del os.environ["LD_PRELOAD"]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MXNET_PYTHON = os.path.join(ROOT, ".venv-mxnet", "bin", "python")


@pytest.fixture(autouse=True)
def _seed():
    import kiln as mx
    mx.random.seed(0)


@pytest.fixture
def run_mxnet():
    """Runs a Python script under MXNet 1.9.1 and returns its stdout."""
    if not os.path.exists(MXNET_PYTHON):
        pytest.fail("no .venv-mxnet: run scripts/setup-mxnet.sh (the test command makes it)")

    def run(script):
        # MXNet's own environment only: PYTHONPATH points at Kiln's package and its numpy.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        result = subprocess.run([MXNET_PYTHON, "-c", script], capture_output=True, text=True, check=False, env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout
    return run
