"""Helpers of bench/compare_runtimes.py: model inputs, the Kiln CLI, the per-runtime runner processes,
PyTorch rebuilds of the benchmark models, and the Markdown/SVG report."""
