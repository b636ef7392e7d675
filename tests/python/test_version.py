"""kiln.__version__ and kiln.features() say the version and what the build has, and agree with
`kiln --version` of the same build."""
import os
import re
import subprocess

import kiln
import pytest


def test_version_and_features():
    assert re.fullmatch(r"\d+\.\d+\.\d+", kiln.__version__), kiln.__version__
    features = kiln.features()
    assert set(features) == {"onednn", "cuda", "java", "server"}, features
    assert all(isinstance(v, bool) for v in features.values()), features


@pytest.mark.skipif("KILN_CLI" not in os.environ, reason="KILN_CLI names the kiln program (ctest sets it)")
def test_the_command_line_reports_the_same():
    line = subprocess.run([os.environ["KILN_CLI"], "--version"], capture_output=True, text=True, check=True).stdout
    parts = ", ".join(f"{name}: {'yes' if present else 'no'}" for name, present in sorted(kiln.features().items()))
    assert line.strip() == f"kiln {kiln.__version__} ({parts})", line
