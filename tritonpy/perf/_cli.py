"""``tritonpy perf`` and ``tritonpy tune``: thin commands over :func:`~tritonpy.perf.run_perf`
and :func:`~tritonpy.perf._tune.tune`.

Exit status: 0 on success, 1 when the model could not be measured (refused requests, no
configuration met the budget), 2 for bad options or a missing dependency.

Example::

    tritonpy perf image_preprocess --url localhost:8001 --concurrency 1,4,16 --duration 5
    tritonpy tune model_repository/image_preprocess --latency-budget-ms 50 --max-minutes 5 --write
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, Optional, TextIO

from .._tooling import cli as shared
from .._tooling.cli_options import add_options, options_from
from ._inputs import PerfInputError
from ._options import PerfOptions, TuneOptions


def _failures(command: str) -> shared.Failures:
    """perf and tune name themselves on their error lines; bad --input/--shape exit 2."""
    return shared.Failures(prefix=f"tritonpy {command}: ", bad_input=(PerfInputError,))


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``perf`` and ``tune`` subcommands on ``subparsers``: their options are
    :class:`PerfOptions`' and :class:`TuneOptions`' fields, plus each command's own."""
    summary = "load-test a served model: throughput, latency, server CPU and statistics"
    perf = shared.add_command(
        subparsers, "perf", cmd_perf, help=summary, failures=_failures("perf")
    )
    perf.add_argument("model", metavar="MODEL", help="the served model's name")
    shared.add_server_address(perf, default_url="localhost:8001", bare_protocol="grpc")
    perf.add_argument(
        "--model-dir",
        metavar="DIR",
        default=None,
        help="the model's directory: its tritonpy declarations say what BYTES inputs hold",
    )
    add_options(perf, PerfOptions)
    _add_json(perf)
    summary = "search instance count and batching settings of a model on the embedded server"
    tune = shared.add_command(
        subparsers, "tune", cmd_tune, help=summary, failures=_failures("tune")
    )
    shared.add_model_dir(tune, "one model's directory")
    add_options(tune, TuneOptions)
    tune.add_argument(
        "--write", action="store_true", help="store the best configuration in config.pbtxt"
    )
    tune.add_argument(
        "--plot", metavar="PNG", default=None, help="throughput vs p99 plot (matplotlib)"
    )
    _add_json(tune)


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="FILE", default=None, help="write the report as JSON")


class _ProgressLine:
    """Renders progress events as one rewritten line on a TTY; silent otherwise. Leaving it as
    a context manager clears the line (before the result or the error is printed)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()

    def __enter__(self) -> _ProgressLine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.clear()

    def __call__(self, event: object) -> None:
        if not self.live:
            return
        from ._engine import Progress

        assert isinstance(event, Progress)
        self.stream.write(
            f"\r  c={event.concurrency} {event.phase} {event.elapsed_s:4.1f}/"
            f"{event.total_s:.1f} s  {event.completed} done  {event.errors} errors   "
        )
        self.stream.flush()

    def clear(self) -> None:
        if self.live:
            self.stream.write("\r" + " " * 70 + "\r")
            self.stream.flush()


def _hints(model_dir: Optional[str]) -> Dict[str, str]:
    """What the BYTES inputs of the model in ``model_dir`` hold, from its declarations; {}
    for a model without them (an ensemble, a plain pb_utils model) or whose model.py cannot
    be imported here (one with its own environment: a warning says so)."""
    if not model_dir:
        return {}
    from .._tooling.pbtxt import ConfigError
    from ..config import ModelImportError, load_model_class
    from ._inputs import hints_from_class

    try:
        loaded = load_model_class(model_dir)
    except ConfigError:  # no model.py: an ensemble, or another backend's model
        return {}
    except ModelImportError as exc:
        sys.stderr.write(
            f"tritonpy perf: warning: --model-dir: {exc}\n  (a model with its own environment "
            "imports only there) BYTES inputs get generated text; say what they hold with "
            "--input NAME=image|text|json|FILE\n"
        )
        return {}
    return hints_from_class(loaded.cls) if loaded.is_tritonpy else {}


def _write_json(path: Optional[str], data: object) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def cmd_perf(args: argparse.Namespace) -> int:
    """Send a closed-loop load of generated (or given) requests to a model of a running Triton at
    each concurrency, and report throughput, p50/p90/p99 latency, errors, server CPU per
    inference (local server) and Triton's queue/compute time and average batch.

    A decoupled model is driven over gRPC streams (one per client; HTTP cannot stream it):
    requests/s, responses/s, time to first response and latency to the final response. A
    sequence model gets sequences of --sequence-length requests (START/END flags, a fresh
    correlation id each), as many live at once as the concurrency: sequences/s besides."""
    from ._runner import run_perf

    with _ProgressLine(sys.stderr) as progress:
        options = options_from(args, PerfOptions, hints=_hints(args.model_dir))
        report = run_perf(
            args.model, args.url, options, protocol=args.protocol, on_progress=progress
        )
    print(report.table())
    _write_json(args.json, report.to_json())
    return 0 if all(p.errors == 0 for p in report.points) else 1


def cmd_tune(args: argparse.Namespace) -> int:
    """Serve MODEL_DIR in the embedded tritonserver, measure each configuration of a small sweep
    (instances, max_batch_size, dynamic batching delay and preferred sizes), and report the
    fastest one whose p99 latency meets the budget. Decoupled and sequence models are measured
    as perf measures them; on a sequence model only instances and max_batch_size vary (its
    sequence batcher forms the batches: dynamic batching does not apply)."""
    from ._plot import plot_trials
    from ._tune import tune, write_best

    with _ProgressLine(sys.stderr) as progress:

        def say(line: str) -> None:
            progress.clear()
            print(line, file=sys.stderr)

        options = options_from(args, TuneOptions)
        result = tune(args.model_dir, options, on_event=say, on_progress=progress)
    print(result.table())
    _write_json(args.json, result.to_json())
    if args.plot:
        print(plot_trials(result, args.plot))
    if result.best is None:
        print("tritonpy tune: no configuration met the latency budget; nothing written.")
        return 1
    if args.write:
        path = write_best(result, args.model_dir)
        if path is None and not result.holds:
            print(
                f"the best configuration did not beat the served one by more than the noise "
                f"({result.noise:.0%}) when measured again: config.pbtxt unchanged"
            )
        elif path is None:
            print("the served configuration is the best one measured: config.pbtxt unchanged")
        else:
            print(f"wrote {path}: {result.best.candidate.describe()}")
    return 0
