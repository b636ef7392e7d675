"""The Python examples of docs/PYTHON.md run, in order, as one session in an empty folder."""
import os
import re
import subprocess
import sys

from child_env import python_env

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_python_md_examples_run(tmp_path):
    text = open(os.path.join(ROOT, "docs", "PYTHON.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5, f"docs/PYTHON.md has {len(blocks)} python examples"
    script = tmp_path / "examples.py"
    script.write_text("\n".join(blocks))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, check=False, env=python_env())
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
