"""kiln.__version__ and kiln.features() say the version and what the build has, and agree with
`kiln --version` of the same build."""
import os
import re
import subprocess

import kiln


def test_version_and_features():
    assert re.fullmatch(r"\d+\.\d+\.\d+", kiln.__version__), kiln.__version__
    features = kiln.features()
    assert set(features) == {"onednn", "cuda", "java", "server"}, features
    assert all(isinstance(v, bool) for v in features.values()), features


def kiln_command():
    """The kiln program of this build: $KILN_CLI (ctest sets it), else the one beside the package
    copy of a development build (build/release/python/kiln -> build/release/apps/kiln/kiln)."""
    if "KILN_CLI" in os.environ:
        return os.environ["KILN_CLI"]
    package = os.path.dirname(os.path.abspath(kiln.__file__))
    return os.path.join(package, "..", "..", "apps", "kiln", "kiln")


def test_the_command_line_reports_the_same():
    command = kiln_command()
    assert os.path.exists(command), f"no kiln program at {command}: set KILN_CLI"
    line = subprocess.run([command, "--version"], capture_output=True, text=True, check=True).stdout
    parts = ", ".join(f"{name}: {'yes' if present else 'no'}" for name, present in sorted(kiln.features().items()))
    assert line.strip() == f"kiln {kiln.__version__} ({parts})", line
