"""A malformed KILN_* environment variable fails `import kiln`, naming the variable, before anything
reads it; valid settings import."""
import subprocess
import sys

import pytest
from child_env import python_env


def import_kiln(**settings):
    return subprocess.run([sys.executable, "-c", "import kiln"], env=python_env(**settings), capture_output=True,
                          text=True)


@pytest.mark.parametrize("name,value", [("KILN_NUM_THREADS", "abc"), ("KILN_ENGINE", "bogus"),
                                        ("KILN_POOL_LIMIT_MB", "xyz"), ("KILN_ENGINE_THREADS", "0")])
def test_malformed_variable_fails_the_import(name, value):
    result = import_kiln(**{name: value})
    assert result.returncode != 0
    assert f"environment variable {name}='{value}'" in result.stderr, result.stderr


def test_valid_settings_import():
    result = import_kiln(KILN_NUM_THREADS="2", KILN_ENGINE="naive", KILN_POOL_LIMIT_MB="64")
    assert result.returncode == 0, result.stderr
