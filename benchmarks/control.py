"""The reference models a benchmark run adds beside raw and tritonpy.

``--control``, the A/A control: a second copy of each hand-written model, measured like the
others, whose ratio to raw shows how large a difference this run can tell from noise. Two
copies of one model differ only by chance (which stub the machine's other jobs slowed down,
where each variant's slices fell), so "control / raw" is the run's noise floor: a tritonpy
ratio inside it is not a measured tax or gain.

``--checked``: the hand-written model plus what tritonpy's engine does per request beyond a
hand-written model's work, written out by hand (``<workload>_checked.py``: each output checked
against its declared data type and shape, ``infer`` timed for ``check_cancellation="auto"``).
"tritonpy / checked" is what the engine costs beyond its checks, "checked / control" what the
checks cost: the split of a tax between the engine and the checks, pooled like any other
ratio (the workloads with such a file: add_sub, sequence, stream).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, List, Sequence

from benchmarks.workloads import MODELS_DIR, Workload

__all__ = ["CHECKED", "CONTROL", "add_checked_models", "add_control_models", "noise_floor"]

#: the variant name of the copies
CONTROL = "control"
#: the variant name of the hand-written models that make tritonpy's checks
CHECKED = "checked"


def add_control_models(repo: Path, workloads: Sequence[Workload]) -> List[str]:
    """Copy each workload's raw model to ``<raw model>_control`` in ``repo`` and add it to the
    workload as the ``control`` variant; an ensemble's copy runs copies of its members, so
    that no stub is shared with raw. Return the workloads that got one."""
    added = []
    for workload in workloads:
        raw = workload.models.get("raw")
        if raw is None:
            continue
        name = _copy_model(repo, raw, f"{raw}_control")
        if workload.name == "ensemble":
            _point_steps_at_copies(repo, name)
        workload.models[CONTROL] = name
        added.append(workload.name)
    return added


def add_checked_models(repo: Path, workloads: Sequence[Workload]) -> List[str]:
    """Write each workload's ``<workload>_checked.py`` (when it has one) into ``repo`` as
    ``<workload>_checked``, with the raw model's configuration, and add it to the workload as
    the ``checked`` variant. Return the workloads that got one."""
    added = []
    for workload in workloads:
        raw = workload.models.get("raw")
        source = MODELS_DIR / f"{workload.name}_{CHECKED}.py"
        if raw is None or not source.is_file():
            continue
        name = _copy_model(repo, raw, f"{workload.name}_{CHECKED}")
        shutil.copyfile(source, repo / name / "1" / "model.py")
        workload.models[CHECKED] = name
        added.append(workload.name)
    return added


def _copy_model(repo: Path, model: str, name: str) -> str:
    """Copy ``model`` in ``repo`` as ``name`` (its configuration renamed); return ``name``."""
    shutil.copytree(repo / model, repo / name, dirs_exist_ok=True)
    config = repo / name / "config.pbtxt"
    config.write_text(
        config.read_text(encoding="utf-8").replace(f'name: "{model}"', f'name: "{name}"', 1),
        encoding="utf-8",
    )
    return name


def _point_steps_at_copies(repo: Path, ensemble: str) -> None:
    from tritonpy.config import format_config, parse_config

    path = repo / ensemble / "config.pbtxt"
    config = parse_config(path.read_text(encoding="utf-8"))
    for step in config.ensemble_scheduling.step:
        step.model_name = _copy_model(repo, step.model_name, f"{step.model_name}_control")
    path.write_text(format_config(config), encoding="utf-8")


def noise_floor(cells: Sequence[Any]) -> List[str]:
    """One line per workload and concurrency with a control: its throughput and server CPU per
    inference as ratios to raw (``cells``: the run's :class:`benchmarks.run.Cell` list)."""
    by = {(c.workload, c.variant, c.concurrency): c for c in cells}
    lines = []
    for cell in cells:
        if cell.variant != CONTROL:
            continue
        raw = by.get((cell.workload, "raw", cell.concurrency))
        if raw is None or not raw.throughput or not raw.server_cpu_ms:
            continue
        lines.append(
            f"{cell.workload} c={cell.concurrency}: control (a copy of raw) "
            f"{cell.throughput / raw.throughput:.2f}x throughput, "
            f"{cell.server_cpu_ms / raw.server_cpu_ms:.2f}x server CPU/inf"
        )
    return lines
