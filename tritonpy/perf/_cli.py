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
from typing import Dict, Optional, TextIO, Tuple, get_args

from .._tooling import cli as shared
from ..client import IdChoice
from ._inputs import InputSpec, PerfInputError, parse_input_option, parse_shape_option
from ._runner import ENGINES
from ._sequences import DEFAULT_SEQUENCE_LENGTH


def _concurrency(text: str) -> Tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected comma-separated positive integers, e.g. 1,4,16"
        )
    return values


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE|KIND",
        help="what input NAME gets: a file (BYTES: its bytes; numbers: .npy or JSON) or a "
        "kind: image, image:WxH, text, json, zeros, random (repeatable)",
    )
    parser.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=d,d",
        help="dims of input NAME without the batch dimension, for -1 dims (repeatable)",
    )
    parser.add_argument(
        "--concurrency",
        type=_concurrency,
        default=None,
        metavar="N,N",
        help="concurrent requests of each point of the sweep (default 1,4,16)",
    )
    parser.add_argument("--duration", type=float, default=None, help="seconds measured per point")
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="load engine: perf_analyzer when on PATH (auto), or the built-in one",
    )
    parser.add_argument("--json", metavar="FILE", default=None, help="write the report as JSON")
    _add_sequence_options(parser)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer, e.g. 20")
    return value


def _sequence_id_range(text: str) -> Tuple[int, Optional[int]]:
    start, sep, end = text.partition(":")
    try:
        found = (int(start), int(end) if sep and end else None)
    except ValueError:
        found = (0, None)
    if found[0] < 1 or (found[1] is not None and found[1] <= found[0]):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected START or START:END with 1 <= START < END (END excluded), "
            "e.g. 1:1000"
        )
    return found


def _add_sequence_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "sequence models (sequence_batching; concurrency = sequences live at once)"
    )
    group.add_argument(
        "--sequence-length",
        type=_positive,
        default=DEFAULT_SEQUENCE_LENGTH,
        metavar="N",
        help="requests per sequence: START on the first, END on the last (default "
        f"{DEFAULT_SEQUENCE_LENGTH}, as perf_analyzer)",
    )
    group.add_argument(
        "--sequence-id-range",
        type=_sequence_id_range,
        default=(1, None),
        metavar="START[:END]",
        help="correlation ids of the sequences, a fresh one each, END excluded (default 1, "
        "no bound)",
    )
    group.add_argument(
        "--sequence-ids",
        choices=get_args(IdChoice),
        default="auto",
        help="numeric or string correlation ids (auto: strings when the CORRID control is "
        "TYPE_STRING)",
    )


def _failures(command: str) -> shared.Failures:
    """perf and tune name themselves on their error lines; bad --input/--shape exit 2."""
    return shared.Failures(prefix=f"tritonpy {command}: ", bad_input=(PerfInputError,))


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``perf`` and ``tune`` subcommands on ``subparsers``."""
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
    perf.add_argument("--server-pid", type=int, default=None, help="pid for server CPU")
    perf.add_argument("--warmup", type=float, default=1.0, help="seconds before each point")
    _add_input_options(perf)
    _add_tune_parser(subparsers)


def _add_tune_parser(subparsers: shared.Subparsers) -> None:
    summary = "search instance count and batching settings of a model on the embedded server"
    tune = shared.add_command(
        subparsers, "tune", cmd_tune, help=summary, failures=_failures("tune")
    )
    shared.add_model_dir(tune, "one model's directory")
    tune.add_argument("--latency-budget-ms", type=float, default=None, help="p99 budget")
    tune.add_argument("--max-minutes", type=float, default=5.0, help="time for the search")
    tune.add_argument(
        "--write", action="store_true", help="store the best configuration in config.pbtxt"
    )
    tune.add_argument(
        "--plot", metavar="PNG", default=None, help="throughput vs p99 plot (matplotlib)"
    )
    _add_input_options(tune)


def _inputs(
    args: argparse.Namespace,
) -> Tuple[Dict[str, InputSpec], Dict[str, Tuple[int, ...]]]:
    specs = dict(parse_input_option(text) for text in args.input)
    shapes = dict(parse_shape_option(text) for text in args.shape)
    return specs, shapes


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
    from ..config._loader import ModelImportError, load_model_class
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
    from ._runner import PerfOptions, run_perf

    with _ProgressLine(sys.stderr) as progress:
        specs, shapes = _inputs(args)
        options = PerfOptions(
            concurrency=args.concurrency or (1, 4, 16),
            duration=args.duration or 5.0,
            warmup=args.warmup,
            specs=specs,
            hints=_hints(args.model_dir),
            shapes=shapes,
            engine=args.engine,
            server_pid=args.server_pid,
            sequence_length=args.sequence_length,
            sequence_id_range=args.sequence_id_range,
            sequence_ids=args.sequence_ids,
        )
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

        specs, shapes = _inputs(args)
        result = tune(
            args.model_dir,
            latency_budget_ms=args.latency_budget_ms,
            max_minutes=args.max_minutes,
            concurrency=args.concurrency or (1, 4, 16),
            duration=args.duration or 2.0,
            engine=args.engine,
            specs=specs,
            shapes=shapes,
            sequence_length=args.sequence_length,
            sequence_id_range=args.sequence_id_range,
            sequence_ids=args.sequence_ids,
            on_event=say,
            on_progress=progress,
        )
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
                "the best configuration did not beat the served one when measured again: "
                "config.pbtxt unchanged"
            )
        elif path is None:
            print("the served configuration is the best one measured: config.pbtxt unchanged")
        else:
            print(f"wrote {path}: {result.best.candidate.describe()}")
    return 0
