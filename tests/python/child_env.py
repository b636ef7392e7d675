"""The environment of a Python process a test starts that imports kiln: the test's own, with the
ASan runtime preloaded again when the package under test is an ASan build (conftest.py keeps the
preload away from the other processes the tests start)."""
import os


def python_env(**settings):
    env = dict(os.environ, **settings)
    if os.environ.get("KILN_ASAN_PRELOAD"):
        env["LD_PRELOAD"] = os.environ["KILN_ASAN_PRELOAD"]
    return env
