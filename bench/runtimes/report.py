"""The comparison's output: Markdown tables (latency and ratios; memory and output check) and a
hand-written SVG bar chart of the median latencies on a log scale."""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

LABELS = {
    "kiln": "Kiln",
    "ort": "ONNX Runtime",
    "openvino-f32": "OpenVINO f32",
    "openvino-bf16": "OpenVINO bf16",
    "torch": "PyTorch eager",
}
HOW_TIMED = """\
How each runtime is timed (same threads, same input files, same calls per round):
- Kiln: `kiln bench --json` at opt level all, a new process per round (load, warm-up, timed calls),
  steady_clock around Predictor::predict in C++.
- ONNX Runtime, OpenVINO, PyTorch eager: a process each (bench/runtimes/runner.py), loaded and warmed
  up once, perf_counter around each Python call (so the binding's microseconds are included).
- Rounds go round-robin, the order rotated each round. Per round, p50 and p99 by nearest rank over
  that round's calls (as `kiln bench` computes them); reported: the median of the rounds' p50s and
  the largest of their p99s.
"""
SHORT = {"ort": "ORT", "openvino-f32": "OV f32", "openvino-bf16": "OV bf16", "torch": "PyTorch"}
COLORS = {
    "kiln": "#d9480f",
    "ort": "#1c7ed6",
    "openvino-f32": "#5f3dc4",
    "openvino-bf16": "#b197fc",
    "torch": "#2b8a3e",
}


def label(runtime: str, kiln_precision: str) -> str:
    return f"Kiln {kiln_precision}" if runtime == "kiln" else LABELS[runtime]


def ms_text(ms: float | None) -> str:
    """Three significant digits, as the timings are not more precise than that."""
    if ms is None:
        return "-"
    if ms >= 100:
        return f"{ms:.0f}"
    return f"{ms:.3g}" if ms >= 1 else f"{ms:.3f}"


def markdown(rows: list[dict], runtimes: list[str], kiln_precision: str) -> str:
    peers = [r for r in runtimes if r != "kiln"]
    heads = [label(r, kiln_precision) for r in runtimes] + [f"Kiln / {SHORT[p]}" for p in peers]
    lines = [
        HOW_TIMED,
        "Latency per call, p50 / p99 in ms; Kiln / peer is the ratio of the p50s (above 1: Kiln is slower).",
        "",
        "| model | batch | " + " | ".join(heads) + " |",
        "|---|---:|" + "---:|" * len(heads),
    ]
    for row in rows:
        times = row["runtimes"]
        cells = [
            f"{ms_text(times[r]['p50_ms'])} / {ms_text(times[r]['p99_ms'])}" if r in times else "-"
            for r in runtimes
        ]
        cells += [f"{row['ratios'][p]:.2f}" if row["ratios"].get(p) else "-" for p in peers]
        lines.append(f"| {row['model']} | {row['batch']} | " + " | ".join(cells) + " |")

    lines += [
        "",
        "Peak RSS in MiB of each runtime's own process (in parentheses: the Python interpreter and the",
        "runtime's library after import, before the model is loaded); output difference against ONNX",
        "Runtime as max |x - ORT| / max |ORT| over all outputs; timed rounds x calls per round; load",
        "average at the start and end of the model's measurement.",
        "",
        "| model | batch | "
        + " | ".join(label(r, kiln_precision) for r in runtimes)
        + " | outputs vs ORT ("
        + " / ".join(SHORT.get(r, "Kiln") for r in runtimes if r != "ort")
        + ")"
        + " | rounds x calls | load |",
        "|---|---:|" + "---:|" * len(runtimes) + "---|---|---|",
    ]
    for row in rows:
        times = row["runtimes"]
        cells = []
        for r in runtimes:
            if r not in times:
                cells.append("-")
                continue
            base = times[r].get("import_rss_mib")
            cells.append(f"{times[r]['peak_rss_mib']:.0f}" + (f" ({base:.0f})" if base else ""))
        check = " / ".join(
            f"{row['check'][r]:.1e}" if row["check"].get(r) is not None else "-"
            for r in runtimes
            if r != "ort"
        )
        load = row["load_average"]
        lines.append(
            f"| {row['model']} | {row['batch']} | " + " | ".join(cells) + f" | {check} | "
            f"{row['rounds']} x {row['calls_per_round']} | {load[0]:.1f} - {load[1]:.1f} |"
        )
    return "\n".join(lines) + "\n"


def svg_chart(rows: list[dict], runtimes: list[str], kiln_precision: str, title: str) -> str:
    """Horizontal bars, one group per model and batch, one bar per runtime: p50 latency on a log
    scale (the models span from microseconds to seconds), the value printed after each bar."""
    bar, gap, left, right, top = 13, 14, 170, 70, 70
    width = 900
    values = [row["runtimes"][r]["p50_ms"] for row in rows for r in runtimes if r in row["runtimes"]]
    low = 10 ** math.floor(math.log10(min(values)))
    high = 10 ** math.ceil(math.log10(max(values)))
    span = math.log10(high) - math.log10(low)

    def x(ms):
        return left + (math.log10(ms) - math.log10(low)) / span * (width - left - right)

    group = len(runtimes) * bar + gap
    height = top + len(rows) * group + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    for i, r in enumerate(runtimes):
        lx = left + i * 135
        out.append(f'<rect x="{lx}" y="30" width="12" height="12" fill="{COLORS[r]}"/>')
        out.append(f'<text x="{lx + 16}" y="40">{escape(label(r, kiln_precision))}</text>')
    decade = low
    while decade <= high * 1.0001:
        gx = x(decade)
        out.append(f'<line x1="{gx:.1f}" y1="{top - 8}" x2="{gx:.1f}" y2="{height - 25}" stroke="#ddd"/>')
        out.append(f'<text x="{gx:.1f}" y="{height - 10}" text-anchor="middle">{decade:g} ms</text>')
        decade *= 10
    for g, row in enumerate(rows):
        y0 = top + g * group
        out.append(
            f'<text x="{left - 8}" y="{y0 + len(runtimes) * bar / 2 + 4:.1f}" text-anchor="end">'
            f"{escape(row['model'])}, batch {row['batch']}</text>"
        )
        for i, r in enumerate(runtimes):
            if r not in row["runtimes"]:
                continue
            ms = row["runtimes"][r]["p50_ms"]
            y = y0 + i * bar
            out.append(
                f'<rect x="{left}" y="{y}" width="{max(x(ms) - left, 1):.1f}" height="{bar - 2}" '
                f'fill="{COLORS[r]}"/>'
            )
            out.append(f'<text x="{x(ms) + 4:.1f}" y="{y + bar - 3}" font-size="10">{ms_text(ms)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
