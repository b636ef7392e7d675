"""Kiln through its CLI: one `kiln bench --json` process per timing round (latencies measured in C++
around Predictor::predict), its peak RSS, and `kiln run` for the output check."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time

from runtimes import peak_rss


def supports_precision(kiln: str) -> bool:
    """Whether this `kiln bench` takes --precision (fp32|bf16)."""
    help_text = subprocess.run([kiln, "bench", "--help"], capture_output=True, text=True).stdout
    return "--precision" in help_text


class Kiln:
    def __init__(self, kiln, model, threads, inputs, precision=None):
        self.kiln, self.model, self.threads, self.inputs, self.precision = (
            kiln,
            model,
            threads,
            inputs,
            precision,
        )
        self.peak_rss_kib = 0

    def _model_args(self) -> list[str]:
        args = [self.model, "--threads", str(self.threads)]
        for name, path in self.inputs:
            args += ["--input", f"{name}={path}"]
        return args

    def bench(self, warmup: int, iters: int) -> dict:
        """One `kiln bench` process: loads the model, `warmup` untimed calls, `iters` timed ones.
        Returns its JSON (p50_ms, p99_ms, ...) plus its wall time and peak RSS."""
        args = [
            self.kiln,
            "bench",
            *self._model_args(),
            "--warmup",
            str(warmup),
            "--iters",
            str(iters),
            "--json",
        ]
        if self.precision:
            args += ["--precision", self.precision]
        with tempfile.TemporaryDirectory() as folder:
            rss_file = os.path.join(folder, "rss")
            start = time.perf_counter()
            process = peak_rss.start(
                args, rss_file, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            stdout, stderr = process.communicate()
            wall_s = time.perf_counter() - start
            rss_kib = peak_rss.finish(process, rss_file)
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed with status {process.returncode}: {stderr.strip()}")
        result = json.loads(stdout)
        result["wall_s"] = wall_s
        result["rss_kib"] = rss_kib
        self.peak_rss_kib = max(self.peak_rss_kib, rss_kib)
        return result

    def write_outputs(self, folder: str) -> None:
        """`kiln run` at the same optimization level as `kiln bench` (all), outputs as NAME.npy."""
        args = [self.kiln, "run", *self._model_args(), "--opt-level", "all", "--output-dir", folder]
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed with status {out.returncode}: {out.stderr.strip()}")
