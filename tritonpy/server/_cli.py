"""``tritonpy serve``: run a real tritonserver on a model repository until Ctrl-C (thin command
over :class:`~tritonpy.server.TritonServer`, whose options it takes from
:class:`~tritonpy.server.ServerOptions`, plus serve's own --restart, --reload and --quiet).

Example::

    tritonpy serve model_repository --http-port 8000 --grpc-port 8001 --reload
"""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from types import FrameType
from typing import Any, List, Optional, Union

from .._runtime.errors import TritonPyError
from .._tooling import cli as shared
from .._tooling.cli_options import add_options, options_from
from ._options import SERVE_NAMES, ServerOptions
from ._process import TritonServer


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``serve`` subcommand on ``subparsers``: :class:`ServerOptions`' flags, then
    serve's own switches."""
    summary = "run a real tritonserver on a model repository until Ctrl-C"
    parser = shared.add_command(subparsers, "serve", cmd_serve, help=summary)
    shared.add_repository(
        parser,
        "model repository directory, or an s3:// URL (s3://BUCKET/PREFIX, "
        "s3://HOST:PORT/BUCKET/PREFIX; credentials from AWS_ACCESS_KEY_ID, "
        "AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION)",
    )
    add_options(parser, ServerOptions)
    parser.add_argument(
        "--restart",
        action="store_true",
        help="start tritonserver again when it dies (with backoff; gives up after 5 deaths in "
        "10 minutes)",
    )
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
    from ..client import model_inputs

    models = server.models_ready()
    lines = [
        f"tritonserver ready (pid {server.pid})",
        f"  HTTP     {server.http_url}",
        f"  gRPC     {server.grpc_url}",
        f"  metrics  {server.metrics_url}",
        f"  log      {server.log_path}",
        f"  models   {', '.join(models) or '(none)'}",
    ]
    if server.remote is not None:
        lines.insert(5, f"  from     {server.repository}")
    for name, plan in sorted(server.provided_stubs.items()):
        lines.append(f"  stub     {name}: Python {plan.python}, its environment's (from the wheel)")
    for name, env in sorted(server.unpacked.items()):
        lines.append(f"  env      {name}: {env.entry} used unpacked ({env.folder}), not extracted")
    if models:
        grpc = server.grpc_url.replace("127.0.0.1:", "localhost:", 1)
        inputs = " ".join(f"-i {name}=..." for name in model_inputs(server.http_url, models[0]))
        lines.append(f"query:   tritonpy infer {models[0]} --url {grpc} {inputs}".rstrip())
    return lines


def _server(args: argparse.Namespace, log_file: Path) -> TritonServer:
    """The server ``tritonpy serve`` runs, as its options say."""
    options = options_from(
        args,
        ServerOptions,
        log_file=log_file,
        default_ports=(8000, 8001, 8002),
        log_echo=None if args.quiet else _print,
        option_names=SERVE_NAMES,
        heal_report=_print,
        reloadable=args.reload,
        allow_failures=args.reload,  # a failed model is fixed and loaded while serving
        check_report=_print_check,
    )
    # a URL stays a string: Path() would fold the '//' of s3://
    return TritonServer(_repository_argument(args.repository), options)


def _repository_argument(text: str) -> Union[str, Path]:
    from ..storage import is_remote

    return text if is_remote(text) else Path(text)


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
    from .._tooling.installation import cache_directory
    from ._logs import new_log_file

    log_name = Path(args.repository.rstrip("/").rsplit("/", 1)[-1] or "repository")
    log_file = args.log_file or new_log_file(log_name, cache_directory() / "logs")
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
    from .._tooling.errors import ModelLoadError
    from ._keeper import serve_until_exit
    from ._preflight import PreflightError
    from ._watch import RepositoryWatcher

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
        _print(f"watching {server.repository} for changes")
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
