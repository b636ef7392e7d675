"""The parent's side of runner.py: starts a peer runtime in its own process, asks it for timed
calls, and reads its peak resident set size when it exits."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

from runtimes import peak_rss

RUNNER = pathlib.Path(__file__).resolve().parent / "runner.py"


class Runner:
    """One runtime of runner.RUNNERS on one model and batch, loaded and warmed up."""

    def __init__(
        self,
        runtime,
        model,
        threads,
        inputs,
        warmup_seconds,
        warmup_calls=None,
        weights=None,
        torch_model=None,
    ):
        self.runtime = runtime
        args = [sys.executable, str(RUNNER), runtime, model, "--threads", str(threads)]
        args += ["--warmup-seconds", str(warmup_seconds)]
        if warmup_calls:
            args += ["--warmup-calls", str(warmup_calls)]
        for name, path in inputs:
            args += ["--input", f"{name}={path}"]
        if weights:
            args += ["--weights", weights, "--torch-model", torch_model]
        self.rss_file = os.path.join(tempfile.mkdtemp(), "rss")
        self.process = peak_rss.start(
            args, self.rss_file, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.peak_rss_kib = None
        self.ready = self._reply()

    def _reply(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            raise RuntimeError(
                f"runner {self.runtime} exited with status {self.process.returncode} (see stderr)"
            )
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def _ask(self, command: str) -> dict:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._reply()

    def time(self, calls: int) -> list[float]:
        return self._ask(f"time {calls}")["ms"]

    def save_outputs(self, path: str) -> None:
        self._ask(f"save {path}")

    def close(self) -> int:
        """Ends the process; returns its peak RSS in KiB."""
        if self.peak_rss_kib is None:
            self.process.stdin.close()
            self.peak_rss_kib = peak_rss.finish(self.process, self.rss_file)
            self.process.stdout.close()
            os.remove(self.rss_file)
            os.rmdir(os.path.dirname(self.rss_file))
        return self.peak_rss_kib
