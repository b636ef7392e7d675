"""Runs every program in examples/python (MXNet's tutorial snippets with `import kiln as mx`, and
the MLP training) and checks what each promises to print."""
import os
import subprocess
import sys

import pytest
from child_env import python_env

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples", "python")


def run_example(name, tmp_path, *args):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600, check=False, env=python_env())
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result.stdout


def test_ndarray_tutorial(tmp_path):
    out = run_example("ndarray_tutorial.py", tmp_path)
    assert "{'a.shape': (3,), 'b.shape': (2, 3)}" in out and "int32" in out
    assert "1000.0" in out and "<NDArray 5x6 @cpu(0)>" in out


def test_autograd_tutorial(tmp_path):
    out = run_example("autograd_tutorial.py", tmp_path)
    assert out.startswith("\n[5. 7. 9.]\n<NDArray 3 @cpu(0)>")
    assert "[[ 4.  8.]\n [12. 16.]]" in out


def test_gluon_tutorial(tmp_path):
    out = run_example("gluon_tutorial.py", tmp_path)
    assert "(4, 10)" in out and "((6, 1, 5, 5), (84,))" in out
    assert os.path.exists(tmp_path / "hybridnet-symbol.json") and os.path.exists(tmp_path / "hybridnet-0001.params")
    # Reloaded parameters give the same output, up to float32 rounding: the reloaded net runs op by op,
    # the original hybridized (one compiled graph).
    assert out.rstrip().endswith("<NDArray 1 @cpu(0)>")
    assert float(out.rstrip().splitlines()[-2].strip("[]")) < 1e-6


def test_symbol_tutorial(tmp_path):
    out = run_example("symbol_tutorial.py", tmp_path)
    assert "['data', 'myweight', 'fc1_bias']" in out
    assert "['softmax_output', 'regression_output']" in out
    assert "{'input': {'a': (2, 3), 'b': (2, 3)}, 'output': {'_plus0_output': (2, 3)}}" in out
    assert "[[6. 6. 6. 6.]]" in out and out.rstrip().endswith("True")


def test_train_mlp_reaches_the_cpp_accuracy(tmp_path):
    data = os.path.join(ROOT, "data", "digits")
    if not os.path.exists(os.path.join(data, "test_y.npy")):
        pytest.fail("no data/digits: run scripts/setup.sh (the test command writes it)")
    out = run_example("train_mlp.py", tmp_path, data)
    accuracy = float(out.rsplit("final test accuracy:", 1)[1])
    assert accuracy >= 0.97
