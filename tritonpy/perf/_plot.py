"""The throughput-vs-p99 plot of a tune search (PNG), when matplotlib is installed.

Example::

    print(plot_trials(result, "tune.png"))      # "wrote tune.png" or why not
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ._tune import TuneResult


def plot_trials(result: TuneResult, path: Any) -> str:
    """Draw every measured point of ``result`` (p99 latency against throughput, one series
    per configuration, the best one emphasised, the budget as a line) into ``path``; return
    one line saying what was done. Without matplotlib nothing is drawn and the line says so."""
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        return "plot skipped: matplotlib is not installed (pip install 'tritonpy[perf]')"
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    best = result.best
    for trial in result.trials:
        if trial.report is None:
            continue
        xs = [p.throughput for p in trial.report.points]
        ys = [p.p99_ms for p in trial.report.points]
        emphasis = trial is best
        axes.plot(
            xs, ys, marker="o", linewidth=2.5 if emphasis else 1.0,
            alpha=1.0 if emphasis else 0.5, label=trial.candidate.describe(),
        )  # fmt: skip
    if result.latency_budget_ms is not None:
        axes.axhline(result.latency_budget_ms, color="red", linestyle="--", label="p99 budget")
    axes.set_xlabel("throughput (infer/s)")
    axes.set_ylabel("p99 latency (ms)")
    axes.set_title(f"tritonpy tune {result.model}")
    axes.legend(fontsize="x-small")
    figure.tight_layout()
    figure.savefig(Path(path), dpi=120)
    plt.close(figure)
    return f"wrote {path}"
