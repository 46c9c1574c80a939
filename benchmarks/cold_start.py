"""Cold start: what a model costs before it serves, tritonpy against a hand-written model and
an identical copy of it (the control), and what a model's environment archive adds.

    python benchmarks/cold_start.py                      # 6 rounds of every phase (~6 min)
    python benchmarks/cold_start.py --rounds 10 --json cold.json
    python benchmarks/cold_start.py --phases loads       # the loads alone
    python benchmarks/cold_start.py --quick              # smoke mode: 2 rounds, no _x4 starts

Three phases, each in rounds whose order rotates (every variant takes every place):

- ``loads``: ONE tritonserver in explicit model control serves the add_sub workload's raw
  model, its control copy and the tritonpy model, and the tritonpy model three more times with
  a realistic environment (numpy + tritonpy, packed by :func:`tritonpy.envs.pack_env` with
  the local builder; ~60 MB archive): ``env_folder`` names it as a folder (the image layout:
  Triton uses it in place), ``env_archive`` as an archive reloaded at the same path (the
  Python backend, src/pb_env.cc, extracts an archive once per server process, keyed by its
  real path and mtime) and ``env_archive_new`` as an archive at a new path at every load
  (what a model served from object storage pays at every load: each load's copy has a new
  path). Per round each variant is unloaded, then loaded through the repository API (timed
  until READY), sent its first request (timed), and its stub's memory read from
  ``/proc/<pid>/smaps_rollup`` (RSS and PSS).
- ``starts``: a new tritonserver per start, on a repository of one model: raw, the control
  (the same repository copied), the tritonpy model with the environment as a folder, and as
  an archive in the model's directory (``$$TRITON_MODEL_DIRECTORY/...``, pack-env's layout);
  and four tritonpy models of one environment, as one folder (``env_folder_x4``) and as an
  archive copied into each model's directory (``env_archive_x4``: export's default per-model
  layout): what a pod pays at each start; timed until every model is READY.
- ``serve``: ``tritonpy serve`` on those repositories, timed from the command to its
  ``serving`` line (its preflight check included; one untimed start of each first, so that
  the check's cache of unpacked environments is as it is after a user's first serve); the
  archive repositories twice: as serve runs them (an archive in its model's directory served
  from tritonpy's unpacked copy) and with ``--no-unpacked-envs`` (``_extracting``:
  tritonserver extracts it at every start, what serve did before).

Printed per phase, variant and measure: the median over the rounds with a distribution-free
interval (95 %, or the whole range below 6 rounds), the geometric mean of the per-round
ratios to raw with a 95 % t interval, the control's ratio in the heading, and whether a
difference is inside the control's interval (noise) or outside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks.cold_report import (
    MEASURES,
    UNITS,
    Summary,
    machine_jiffies,
    other_cores,
    render_summaries,
    rotated,
    summarize,
)
from benchmarks.cold_serve import LoadedServer, serve_start, server_start, stub_figures
from benchmarks.control import add_control_models
from benchmarks.machine import cpu_times, steal_percent
from benchmarks.pooled import geometric_interval
from benchmarks.workloads import MODELS_DIR, build_repository

__all__ = ["LOAD_VARIANTS", "START_VARIANTS", "main"]

LOAD_VARIANTS = ("raw", "control", "tritonpy", "env_folder", "env_archive", "env_archive_new")
START_VARIANTS = (
    "raw", "control", "env_folder", "env_archive", "env_folder_x4", "env_archive_x4",
)  # fmt: skip
#: models of one environment in the ``_x4`` start variants
MODELS_OF_ONE_ENV = 4
PHASES = ("loads", "starts", "serve")
_INSTANCE = "instance_group [ { count: 1 kind: KIND_CPU } ]\n"
Say = Callable[[str], None]


# -- the environment ---------------------------------------------------------------------------


def packed_environment(python: str, say: Say) -> Path:
    """The add_sub tritonpy model's environment (numpy + tritonpy) for Python ``python``,
    packed once by pack-env with the local builder into tritonpy's cache (an unchanged build
    is not rebuilt) and returned as the archive's path."""
    from tritonpy._tooling.installation import cache_directory
    from tritonpy.envs import pack_env

    model = cache_directory() / "benchmarks" / "cold_start" / f"py{python}" / "add_sub_env"
    (model / "1").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(MODELS_DIR / "add_sub_tritonpy.py", model / "1" / "model.py")
    config = model / "config.pbtxt"
    if not config.exists():
        config.write_text('name: "add_sub_env"\nbackend: "python"\n', encoding="utf-8")
    say(f"packing the environment (numpy + tritonpy, Python {python}) in {model} ...")
    result = pack_env(model, python=python, builder="local", stub="never", server_python=python)
    return result.archive


def _link(source: Path, target: Path) -> None:
    """``target`` as a hard link of ``source`` (a copy across file systems)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _env_config(name: str, env_path: str) -> str:
    return (
        f'name: "{name}"\nbackend: "python"\n{_INSTANCE}'
        f'parameters {{ key: "EXECUTION_ENV_PATH" value {{ string_value: "{env_path}" }} }}\n'
    )


def _tritonpy_model(repo: Path, name: str, env_path: Optional[str]) -> None:
    (repo / name / "1").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(MODELS_DIR / "add_sub_tritonpy.py", repo / name / "1" / "model.py")
    config = _env_config(name, env_path) if env_path else f'name: "{name}"\nbackend: "python"\n'
    (repo / name / "config.pbtxt").write_text(config, encoding="utf-8")


# -- the loads ----------------------------------------------------------------------------------


class NewPaths:
    """``env_archive_new``: before each load the archive gets a new path (a hard link named
    ``new_<n>.tar.gz``) and the model's config names it, as each load from object storage
    has a copy of its own; the extraction of the load before (unused once its model is
    unloaded) is removed, so /tmp holds one at a time."""

    def __init__(self, archive: Path, folder: Path, repo: Path, model: str) -> None:
        self.archive, self.folder, self.repo, self.model = archive, folder, repo, model
        self.count = 0
        self.previous_root: Optional[Path] = None

    def next(self) -> None:
        for old in self.folder.glob("new_*.tar.gz"):
            old.unlink()
        if self.previous_root is not None and "python_env_" in str(self.previous_root):
            shutil.rmtree(self.previous_root, ignore_errors=True)
        self.count += 1
        target = self.folder / f"new_{self.count}.tar.gz"
        _link(self.archive, target)
        config = _env_config(self.model, str(target))
        (self.repo / self.model / "config.pbtxt").write_text(config, encoding="utf-8")


def build_load_repository(repo: Path, archive: Path, work: Path) -> Dict[str, Any]:
    """The loads' repository: add_sub's raw model, its control copy, the tritonpy model and
    the three environment variants. Returns the variants' model names, the add_sub payloads
    and the :class:`NewPaths` of ``env_archive_new``."""
    from tritonpy._tooling.archives import safe_extract

    [workload] = build_repository(repo, ["add_sub"])
    add_control_models(repo, [workload])
    folder = work / "env_folder"
    safe_extract(archive, folder)
    kept = work / "archives" / "env_kept.tar.gz"
    _link(archive, kept)
    models = dict(workload.models)
    for variant, env_path in (("env_folder", str(folder)), ("env_archive", str(kept))):
        models[variant] = f"add_sub_{variant}"
        _tritonpy_model(repo, models[variant], env_path)
    models["env_archive_new"] = "add_sub_env_archive_new"
    _tritonpy_model(repo, models["env_archive_new"], str(kept))
    paths = NewPaths(archive, work / "archives", repo, models["env_archive_new"])
    return {"models": models, "payloads": workload.payloads, "new_paths": paths}


def measure_loads(
    server: LoadedServer, setup: Dict[str, Any], rounds: int, say: Say
) -> Dict[str, Dict[str, List[Any]]]:
    """Every variant unloaded and loaded again once per round, the order rotating."""
    models: Dict[str, str] = setup["models"]
    new_paths: NewPaths = setup["new_paths"]
    figures: Dict[str, Dict[str, List[Any]]] = {
        v: {m: [] for m, _ in MEASURES} | {"env_root": []} for v in LOAD_VARIANTS
    }
    for name in models.values():
        server.warm(name, setup["payloads"])  # the channels open, each model answered once
    for index in range(rounds):
        for variant in rotated(LOAD_VARIANTS, index, rounds):
            model = models[variant]
            server.unload(model)
            if variant == "env_archive_new":
                new_paths.next()
            load_s = server.load(model)
            first_ms = server.first_request_ms(model)
            stub = stub_figures(server.pid, model)
            if variant == "env_archive_new":
                new_paths.previous_root = Path(stub["env_root"]) if stub["env_root"] else None
            for key, value in (("load_s", load_s), ("first_ms", first_ms), *stub.items()):
                figures[variant][key].append(value)
            say(
                f"  round {index + 1} {variant:<16} load {load_s:5.2f} s  first request "
                f"{first_ms:6.1f} ms  stub RSS {stub['rss_mb']:5.1f} MB "
                f"PSS {stub['pss_mb']:5.1f} MB"
            )
    return figures


# -- the starts ---------------------------------------------------------------------------------


def build_start_repositories(base: Path, archive: Path, folder: Path) -> Dict[str, Path]:
    """One repository of one model per start variant (see the module's docstring)."""
    repos = {variant: base / variant / "model_repository" for variant in START_VARIANTS}
    for variant in ("raw", "control"):
        build_repository(repos[variant], ["add_sub"])
        shutil.rmtree(repos[variant] / "add_sub_tritonpy")
    in_model = "$$TRITON_MODEL_DIRECTORY/" + archive.name
    for suffix, count in (("", 1), ("_x4", MODELS_OF_ONE_ENV)):
        names = ["add_sub_env"] if count == 1 else [f"add_sub_env_{i}" for i in range(count)]
        for name in names:
            _tritonpy_model(repos[f"env_folder{suffix}"], name, str(folder))
            _tritonpy_model(repos[f"env_archive{suffix}"], name, in_model)
            # each model directory its own copy (a hard link), as pack-env and export's
            # per-model layout leave them: each has its own path, so each is extracted
            _link(archive, repos[f"env_archive{suffix}"] / name / archive.name)
    return repos


#: a serve variant with --no-unpacked-envs: tritonserver extracts the archives (before serve
#: used its unpacked copies)
EXTRACTING = "_extracting"


def serve_variants(repos: Dict[str, Path]) -> Dict[str, Path]:
    """The serve phase's variants: every start repository, and those with archives also
    served with ``--no-unpacked-envs`` (``<variant>_extracting``), side by side."""
    served: Dict[str, Path] = {}
    for variant, repo in repos.items():
        served[variant] = repo
        if variant.startswith("env_archive"):
            served[variant + EXTRACTING] = repo
    return served


def before_after(figures: Dict[str, Dict[str, List[float]]], measure: str) -> List[str]:
    """Per archive variant served both ways: serve's time with the unpacked copy over its
    time with tritonserver extracting (``_extracting``), paired by round, 95 % interval."""
    lines = []
    for variant, values in figures.items():
        before = figures.get(variant + EXTRACTING, {}).get(measure)
        if before:
            pairs = [a / b for a, b in zip(values[measure], before) if a > 0 and b > 0]
            lines.append(
                f"{variant}: unpacked copy / extracting {geometric_interval(pairs)} "
                f"({statistics.median(before) - statistics.median(values[measure]):.2f} s "
                f"less, medians)"
            )
    return lines


def measure_starts(
    start: Callable[[str, Path], Dict[str, float]],
    repos: Dict[str, Path],
    rounds: int,
    say: Say,
    label: str,
) -> Dict[str, Dict[str, List[float]]]:
    """``start(variant, repository)`` once per variant and round, the order rotating."""
    figures: Dict[str, Dict[str, List[float]]] = {v: {} for v in repos}
    for index in range(rounds):
        for variant in rotated(list(repos), index, rounds):
            measured = start(variant, repos[variant])
            for key, value in measured.items():
                figures[variant].setdefault(key, []).append(value)
            shown = "  ".join(f"{k} {v:.2f}" for k, v in measured.items())
            say(f"  round {index + 1} {label} {variant:<12} {shown}")
    return figures


# -- main --------------------------------------------------------------------------------------


def _parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/cold_start.py",
        description="cold start: model loads, server starts and tritonpy serve starts, "
        "tritonpy and environments against a hand-written model and its control copy",
    )
    parser.add_argument("--rounds", type=int, default=6, help="rounds per phase (default 6)")
    parser.add_argument(
        "--phases",
        default=",".join(PHASES),
        help=f"comma-separated, from {','.join(PHASES)} (default: all)",
    )
    parser.add_argument(
        "--env-python",
        default="{}.{}".format(*sys.version_info[:2]),
        metavar="X.Y",
        help="Python of the packed environment (default: this interpreter's, the server's)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke mode: 2 rounds, starts without the _x4 variants, serve without warm-ups",
    )
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parse_args(argv)
    phases = [p for p in args.phases.split(",") if p]
    if args.quick:
        args.rounds = 2
    if not phases or set(phases) - set(PHASES) or args.rounds < 1:
        print(f"error: bad --phases {args.phases!r} or --rounds {args.rounds}", file=sys.stderr)
        return 2

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    began, load_before = time.monotonic(), os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="tritonpy-cold-"))
    results: Dict[str, Any] = {}
    try:
        archive = packed_environment(args.env_python, say)
        setup = build_load_repository(work / "model_repository", archive, work)
        machine = _MachineWatch()
        if "loads" in phases:
            say("loads: one tritonserver, every variant unloaded and loaded in each round ...")
            with LoadedServer(work / "model_repository", work / "tritonserver.log") as server:
                results["loads"] = measure_loads(server, setup, args.rounds, say)
        repos = build_start_repositories(work / "starts", archive, work / "env_folder")
        if args.quick:
            repos = {v: r for v, r in repos.items() if not v.endswith("_x4")}
        if "starts" in phases:
            say("starts: a new tritonserver per start ...")
            results["starts"] = measure_starts(
                lambda v, r: server_start(r, work / f"start-{v}.log", setup["payloads"]),
                repos,
                args.rounds,
                say,
                "server",
            )
        if "serve" in phases:
            say("serve: tritonpy serve per start (one untimed start of each first) ...")
            served = serve_variants(repos)
            for variant, repo in served.items() if not args.quick else ():
                serve_start(repo, extracting=variant.endswith(EXTRACTING))
            results["serve"] = measure_starts(
                lambda v, r: serve_start(r, extracting=v.endswith(EXTRACTING)),
                served,
                args.rounds,
                say,
                "serve",
            )
        archive_mb = archive.stat().st_size / 1e6
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after, busy = os.getloadavg(), machine.stop()
    summaries = _report(results, archive_mb, args, load_before, load_after, busy)
    print(f"\n{time.monotonic() - began:.0f} s; {os.cpu_count()} CPUs")
    if args.json:
        document = {
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "python": platform.python_version()},
            "settings": {"rounds": args.rounds, "phases": phases, "env_python": args.env_python},
            "archive_mb": archive_mb,
            "load_average": {"before": load_before, "after": load_after},
            "other_cores": busy["other_cores"],
            "steal_percent": busy["steal_percent"],
            "rounds": results,
            "summaries": {phase: [asdict(s) for s in rows] for phase, rows in summaries.items()},
        }  # fmt: skip
        args.json.write_text(json.dumps(document, indent=2, default=str), encoding="utf-8")
        say(f"figures written to {args.json}")
    return 0


_HEADINGS = {
    "loads": "Model loads in one tritonserver (unload, then load until READY; first request; "
    "the stub's memory):",
    "starts": "Server starts (a new tritonserver on a one-model repository, until READY):",
    "serve": "tritonpy serve starts (the command until its 'serving' line, check included):",
}


def _report(
    results: Dict[str, Any],
    archive_mb: float,
    args: argparse.Namespace,
    load_before: Sequence[float],
    load_after: Sequence[float],
    busy: Dict[str, Optional[float]],
) -> Dict[str, List[Summary]]:
    units = UNITS
    summaries: Dict[str, List[Summary]] = {}
    print(
        f"\nCold start, add_sub; environment numpy + tritonpy for Python {args.env_python}, "
        f"archive {archive_mb:.0f} MB; {args.rounds} rounds"
    )
    for phase, figures in results.items():
        measures = [m for m in units if any(m in f for f in figures.values())]
        numeric = {v: {m: f[m] for m in measures if m in f} for v, f in figures.items()}
        summaries[phase] = summarize(numeric, measures)
        print(f"\n{_HEADINGS[phase]}")
        for line in render_summaries(summaries[phase], units):
            print(f"  {line}")
        if phase == "loads":
            for variant in ("env_folder", "env_archive", "env_archive_new"):
                roots = figures[variant]["env_root"]
                print(f"  {variant}: environment used from {len(set(roots))} place(s): "
                      f"{', '.join(sorted({_where(r) for r in roots}))}")  # fmt: skip
        if phase == "serve":
            for line in before_after(figures, "serving_s"):
                print(f"  {line}")
    shown = ", ".join(f"{x:.2f}" for x in load_before)
    print(
        f"\nload average (1, 5, 15 min) before: {shown}; after (this run's own load "
        f"included): {', '.join(f'{x:.2f}' for x in load_after)}"
    )
    other, steal = busy["other_cores"], busy["steal_percent"]
    if other is not None:
        print(f"other processes kept {other:.2f} of {os.cpu_count()} cores busy while measuring")
    if steal is not None:
        print(f"CPU steal while measuring: {steal:.0f} %")
    return summaries


class _MachineWatch:
    """The machine's busy CPU time, steal and this process's own CPU time (with its waited
    children: the servers and stubs) from now until :meth:`stop`."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.own = self._own()
        self.stat = self._stat()
        self.steal = cpu_times()

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    @staticmethod
    def _stat() -> Optional[int]:
        try:
            return machine_jiffies(Path("/proc/stat").read_text(encoding="ascii"))[0]
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> Dict[str, Optional[float]]:
        wall, own, stat = time.monotonic() - self.began, self._own() - self.own, self._stat()
        other = None
        if stat is not None and self.stat is not None:
            other = other_cores(stat - self.stat, own, wall, os.sysconf("SC_CLK_TCK"))
        return {"other_cores": other, "steal_percent": steal_percent(self.steal, cpu_times())}


def _where(root: str) -> str:
    if not root:
        return "unknown"
    return "an extraction in /tmp/python_env_*" if "python_env_" in root else "the folder"


if __name__ == "__main__":
    sys.exit(main())
