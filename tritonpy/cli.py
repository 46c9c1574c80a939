"""The ``tritonpy`` command: thin subcommands over the library.

Every module that declares subcommands (this one for serve, infer, new and demo; each tooling
package's ``cli.py`` for its own) does it the same way: an ``add_<name>(subparsers)`` /
``add_parser(subparsers)`` function calls :func:`tritonpy._tooling.cli.add_command` with a
``cmd_<name>(args) -> int``; that runs every command through the one error handler
(:func:`tritonpy._tooling.cli.run_command`). Add a subcommand by writing both and listing the
``add`` function in :func:`_registrations`.

Example::

    tritonpy serve model_repository --http-port 8000 --grpc-port 8001
    tritonpy infer add_sub --url localhost:8001 --input INPUT0=[1,2,3,4] --input INPUT1=[1,1,1,1]
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence

from . import __version__
from ._runtime.errors import TritonPyError, TritonRequestError
from ._tooling import cli as shared

if TYPE_CHECKING:  # the server and templates modules load only when their command runs
    from .server import TritonServer

__all__ = ["build_parser", "main"]


# ---------------------------------------------------------------------------------- serve
def add_serve(subparsers: shared.Subparsers) -> None:
    """Declare ``serve``."""
    summary = "run a real tritonserver on a model repository until Ctrl-C"
    parser = shared.add_command(subparsers, "serve", cmd_serve, help=summary)
    shared.add_repository(parser, "model repository directory")
    for flag, port in (("--http-port", 8000), ("--grpc-port", 8001), ("--metrics-port", 8002)):
        parser.add_argument(
            flag, type=int, default=None, help=f"port (default {port} when free, else a free one)"
        )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--tritonserver", default=None, help="another tritonserver binary to run")
    parser.add_argument("--backend-directory", default=None, help="its backend directory")
    shared.add_python(parser, "interpreter whose stub serves the models", metavar="PYTHON")
    shared.add_timeout(parser, 120.0, "startup timeout")
    parser.add_argument(
        "--log-verbose", type=int, default=0, help="tritonserver --log-verbose level"
    )
    parser.add_argument(
        "--log-file",
        default=None,
        help="write the server log here (default: a new file in ~/.cache/tritonpy/logs)",
    )
    _add_serve_switches(parser)


def _add_serve_switches(parser: argparse.ArgumentParser) -> None:
    """serve's on/off options (``args.<name>`` is True when given)."""
    switches = {
        "--no-check": "start without running 'tritonpy check' first",
        "--no-env-stubs": "do not give models whose environment has another Python the wheel's "
        "stub for it",
        "--no-heal": "do not reload a model whose stub process died (Triton then fails its "
        "requests)",
        "--restart": "start tritonserver again when it dies (with backoff; gives up after 5 "
        "deaths in 10 minutes)",
    }
    for flag, text in switches.items():
        parser.add_argument(flag, action="store_true", help=text)
    parser.add_argument(
        "--reload",
        "--watch",
        action="store_true",
        help="load, reload or unload a model as its directory is added, edited or removed "
        "(a failed reload keeps the previous version serving)",
    )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="do not echo model logs to the console"
    )


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: Optional[FrameType]) -> None:
    raise _Stop(signal.Signals(signum).name)


def _print(line: str) -> None:
    print(line, flush=True)


def _serve_ready_lines(server: TritonServer) -> List[str]:
    """What serve prints once ready: the URLs, the models, how to query one."""
    from .client import model_inputs

    models = server.models_ready()
    lines = [
        f"tritonserver ready (pid {server.pid})",
        f"  HTTP     {server.http_url}",
        f"  gRPC     {server.grpc_url}",
        f"  metrics  {server.metrics_url}",
        f"  log      {server.log_path}",
        f"  models   {', '.join(models) or '(none)'}",
    ]
    for name, plan in sorted(server.provided_stubs.items()):
        lines.append(f"  stub     {name}: Python {plan.python}, its environment's (from the wheel)")
    if models:
        grpc = server.grpc_url.replace("127.0.0.1:", "localhost:", 1)
        inputs = " ".join(f"-i {name}=..." for name in model_inputs(server.http_url, models[0]))
        lines.append(f"query:   tritonpy infer {models[0]} --url {grpc} {inputs}".rstrip())
    return lines


def _server(args: argparse.Namespace, log_file: Path) -> TritonServer:
    """The server ``tritonpy serve`` runs, as its options say."""
    from ._tooling.options import CLI_NAMES
    from .server import TritonServer

    return TritonServer(
        Path(args.repository),
        startup_timeout=args.timeout,
        log_file=log_file,
        check=not args.no_check,
        env_stubs=not args.no_env_stubs,
        default_ports=(8000, 8001, 8002),
        log_echo=None if args.quiet else _print,
        option_names=CLI_NAMES,
        heal=not args.no_heal,
        heal_report=_print,
        reloadable=args.reload,
        allow_failures=args.reload,  # a failed model is fixed and loaded while serving
        check_report=_print_check,
        **shared.options(
            args,
            "tritonserver backend_directory python host log_verbose "
            "http_port grpc_port metrics_port",
        ),
    )


def _print_check(report: Any) -> None:
    """The preflight check's findings (warnings: errors stop serve), before the server starts."""
    for finding in report.findings:
        _print(f"check: {finding.render()}")


def _print_load_failures(server: TritonServer) -> None:
    """Each failed model once, short (exception, the user's frames, the fix), then the log."""
    for failure in server.load_failures:
        shared.print_error("\n".join(failure.lines()))
    shared.print_error(f"the full server log is kept in {server.log_path}")


def cmd_serve(args: argparse.Namespace) -> int:
    """Start tritonserver (the nvidia-pytriton wheel's by default) on REPO, wait until every model
    is ready, print the URLs, and serve until Ctrl-C or SIGTERM. 'tritonpy check' runs first (its
    errors stop serve, its warnings are printed); a model that fails to load is said once, with
    its own frames and the fix. With --reload, a model directory added, edited or removed is
    loaded, reloaded or unloaded while serving (a failed reload keeps the last good version)."""
    from ._tooling.installation import cache_directory
    from .server._logs import new_log_file

    log_file = args.log_file or new_log_file(Path(args.repository), cache_directory() / "logs")
    server = _server(args, Path(log_file))
    # explicit handlers: SIGINT may be inherited as ignored (a background job of a shell)
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _print(f"starting tritonserver on {args.repository} (log {log_file}) ...")
        return _serve(server, restart=args.restart, reload=args.reload)
    except (KeyboardInterrupt, _Stop):  # Ctrl-C, SIGTERM
        return _stop(server)
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(server: TritonServer, *, restart: bool, reload: bool) -> int:
    """Start ``server``, print where it serves, and serve until it dies for good."""
    from .server import ModelLoadError, PreflightError, RepositoryWatcher
    from .server._keeper import serve_until_exit

    try:
        server.start()
    except PreflightError as exc:  # its message lists the errors; the warnings come first
        for finding in exc.report.warnings:
            _print(f"check: {finding.render()}")
        raise
    except ModelLoadError:
        if not server.load_failures:
            raise
        _print_load_failures(server)
        return 1
    except TritonPyError as exc:
        if server.log_path is not None:
            shared.add_note(exc, f"the server log is kept in {server.log_path}")
        raise
    for line in _serve_ready_lines(server):
        _print(line)
    for failure in server.load_failures:  # with --reload, serving goes on without them
        shared.print_error("\n".join(failure.lines()))
    if server.load_failures:
        failed = ", ".join(f.model for f in server.load_failures)
        _print(f"serving without {failed}: fix it and save, --reload loads it")
    watcher = None
    if reload:
        watcher = RepositoryWatcher(server, on_event=lambda e: _print("\n".join(e.lines())))
        watcher.start()
        _print(f"watching {server.model_repository} for changes")
    _print("serving; press Ctrl-C to stop")
    try:  # returns only when the server died on its own (and, with --restart, stayed dead)
        ended = serve_until_exit(server, restart=restart, report=_print)
    finally:
        if watcher is not None:
            watcher.stop()
    shared.print_error(ended.reason)
    shared.print_error(f"the server log is kept in {server.log_path}")
    return 1


def _stop(server: TritonServer) -> int:
    """Stop ``server`` after Ctrl-C or SIGTERM; a second Ctrl-C kills it."""
    _print("stopping tritonserver ...")
    try:
        server.stop()
    except (KeyboardInterrupt, _Stop):  # a second Ctrl-C: no more grace
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _print("killing tritonserver ...")
        server.stop(grace=0)
    _print(f"stopped; the server log is kept in {server.log_path}")
    return 0


# ---------------------------------------------------------------------------------- infer
def add_infer(subparsers: shared.Subparsers) -> None:
    """Declare ``infer``."""
    summary = "send one inference request and print the outputs"
    # a request's error prints as the server gave it: "[INVALID_ARG] ..." from the model
    failures = shared.Failures(bare=(TritonRequestError,))
    parser = shared.add_command(subparsers, "infer", cmd_infer, help=summary, failures=failures)
    parser.add_argument("model", metavar="MODEL", help="the model's name in the repository")
    shared.add_server_address(parser, default_url="localhost:8001", bare_protocol="grpc")
    for flag, short, dest, metavar, text in (
        ("--input", "-i", "inputs", "NAME=VALUE", "an input (repeat for each)"),
        ("--output", "-o", "outputs", "NAME", "an output to request (default: all)"),
    ):
        parser.add_argument(
            flag, short, dest=dest, action="append", default=[], metavar=metavar, help=text
        )
    parser.add_argument(
        "--model-version",
        metavar="N",
        type=int,
        default=None,
        help="the version to ask, for a model served in several versions (default: the one "
        "its version_policy picks, the newest)",
    )
    shared.add_timeout(parser, 60.0, "request timeout")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--full", action="store_true", help="print every element of every output (no '...')"
    )
    shown.add_argument(
        "--json",
        action="store_true",
        help="print the outputs as one JSON object: {model, outputs: [{name, datatype, shape, "
        "data}]} (BYTES as text, or {base64: ...} when not UTF-8), with 'sequence' for a "
        "sequence model; a decoupled model's stream as JSON lines, one {model, index, "
        "outputs} per response as it arrives, then {model, responses, final}",
    )
    parser.add_argument(
        "--sequence-id",
        metavar="ID",
        default=None,
        help="sequence models: the request's correlation id, a number or a string (default: a "
        "fresh id, sent with START and END: a one-request sequence)",
    )
    parser.add_argument(
        "--sequence-start", action="store_true", help="the first request of the sequence (START)"
    )
    parser.add_argument(
        "--sequence-end", action="store_true", help="the last request of the sequence (END)"
    )


def cmd_infer(args: argparse.Namespace) -> int:
    """Send one request to MODEL and print each output's name, datatype, shape and value (summarised
    by numpy for large tensors; --full prints every element, --json prints JSON). Each --input is
    NAME=VALUE, read by the input's datatype in the model's configuration: a BYTES input
    (tp.Text, tp.JSON, tp.Bytes, tp.Image) gets one row, @FILE the file's bytes, any other VALUE
    its UTF-8 text exactly as written, so NAME='{"a": 1}' or NAME='[1, 2]' sends that JSON
    document to a tp.JSON input; any other input takes a JSON number or list, a tensor of its
    datatype. A batch dimension of 1 is added for batching models. A decoupled model streams:
    each response is printed as it arrives ('response N'), then how many came and whether the
    stream ended with its final flag (over HTTP generate_stream: flat JSON values, no sequence
    id; gRPC carries everything). A sequence model takes --sequence-id ID with
    --sequence-start / --sequence-end, to drive a sequence request by request; without them a
    request is a one-request sequence with a fresh id (START and END), as stderr says. A bare
    host:port --url is gRPC (default localhost:8001), unlike tritonpy probe's (HTTP, the port of
    Kubernetes probes)."""
    from .client import SequenceOptions, infer_events, sequence_id_from_text, split_assignment
    from .server._infer_cli import print_infer_events

    values = dict(split_assignment(text) for text in args.inputs)
    sequence_id = None if args.sequence_id is None else sequence_id_from_text(args.sequence_id)
    sequence = SequenceOptions(sequence_id, args.sequence_start, args.sequence_end)
    events = infer_events(
        args.model,
        values,
        outputs=args.outputs or None,
        sequence=sequence,
        version="" if args.model_version is None else str(args.model_version),
        **shared.options(args, "url protocol timeout"),
    )
    return print_infer_events(events, as_json=args.json, full=args.full, model=args.model)


# ----------------------------------------------------------------------------------- main
def _registrations() -> List[Callable[[shared.Subparsers], None]]:
    """The ``add`` function of every subcommand, in the order ``tritonpy --help`` lists them.
    Each tooling package owns its subcommands; they load here, when the parser is built, so
    that importing this module (and the runtime) stays light."""
    from .check._cli import add_parser as add_check
    from .config._cli import add_parser as add_config
    from .demo import add_parser as add_demo
    from .envs._cli import add_parser as add_pack_env
    from .export._cli import add_parser as add_export
    from .perf._cli import add_parser as add_perf_and_tune
    from .probe._cli import add_parser as add_probe
    from .stubs._cli import add_parser as add_stub
    from .templates._cli import add_parser as add_new

    return [
        add_serve,
        add_infer,
        add_new,
        add_demo,
        add_config,
        add_check,
        add_pack_env,
        add_stub,
        add_export,
        add_probe,
        add_perf_and_tune,
    ]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="tritonpy",
        description="Write, test and serve Python models for NVIDIA Triton Inference Server.",
    )
    parser.add_argument("--version", action="version", version=f"tritonpy {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in _registrations():
        add(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``tritonpy`` command; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    command: Optional[Callable[[argparse.Namespace], Any]] = getattr(args, "func", None)
    if command is None:
        parser.print_help(sys.stderr)
        return 2
    status: int = command(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
