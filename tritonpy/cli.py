"""The ``tritonpy`` command: thin subcommands over the library.

Each subcommand is one ``_add_<name>(subparsers)`` function declaring its arguments and one
``cmd_<name>(args) -> int`` doing the work; add a subcommand by writing both and listing the
``_add_`` function in ``_SUBCOMMANDS``.

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
from typing import Callable, Dict, List, Optional, Sequence

from . import __version__
from .errors import MissingDependencyError, TritonPyError, TritonRequestError

__all__ = ["build_parser", "main"]


def _err(message: str) -> None:
    print(f"tritonpy: error: {message}", file=sys.stderr)


# ---------------------------------------------------------------------------------- serve
def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="run a real tritonserver on a model repository until Ctrl-C",
        description="Start tritonserver (the nvidia-pytriton wheel's by default) on REPO, wait "
        "until every model is ready, print the URLs, and serve until Ctrl-C or SIGTERM.",
    )
    p.add_argument("repository", metavar="REPO", help="model repository directory")
    p.add_argument("--http-port", type=int, default=None, help="HTTP port (default: a free one)")
    p.add_argument("--grpc-port", type=int, default=None, help="gRPC port (default: a free one)")
    p.add_argument("--metrics-port", type=int, default=None, help="metrics port (default: free)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--tritonserver", default=None, help="another tritonserver binary to run")
    p.add_argument("--backend-directory", default=None, help="its backend directory")
    p.add_argument("--python", default=None, help="interpreter whose stub serves the models")
    p.add_argument("--timeout", type=float, default=120.0, help="startup timeout in seconds")
    p.add_argument("--log-verbose", type=int, default=0, help="tritonserver --log-verbose level")
    p.add_argument("--log-file", default=None, help="write the server log here")
    p.set_defaults(func=cmd_serve)


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: Optional[FrameType]) -> None:
    raise _Stop(signal.Signals(signum).name)


def cmd_serve(args: argparse.Namespace) -> int:
    from .server import TritonServer

    server = TritonServer(
        args.repository,
        tritonserver=args.tritonserver,
        backend_directory=args.backend_directory,
        python=args.python,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        host=args.host,
        startup_timeout=args.timeout,
        log_verbose=args.log_verbose,
        log_file=args.log_file,
    )
    # explicit handlers: SIGINT may be inherited as ignored (a background job of a shell)
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"starting tritonserver on {args.repository} ...", flush=True)
        try:
            server.start()
        except TritonPyError as exc:
            _err(str(exc))
            return 1
        print(f"tritonserver ready (pid {server.pid})", flush=True)
        print(f"  HTTP     {server.http_url}", flush=True)
        print(f"  gRPC     {server.grpc_url}", flush=True)
        print(f"  metrics  {server.metrics_url}", flush=True)
        print(f"  log      {server.log_path}", flush=True)
        print(f"  models   {', '.join(server.models_ready()) or '(none)'}", flush=True)
        print("serving; press Ctrl-C to stop", flush=True)
        code = server.wait()  # returns only if the server dies on its own
        _err(f"tritonserver exited unexpectedly with code {code}:\n{server.log_tail(30)}")
        server.stop()
        return 1
    except (KeyboardInterrupt, _Stop):  # Ctrl-C, SIGTERM
        print("stopping tritonserver ...", flush=True)
        try:
            try:
                server.stop()
            except (KeyboardInterrupt, _Stop):  # a second Ctrl-C: no more grace
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                print("killing tritonserver ...", flush=True)
                server.stop(grace=0)
        except TritonPyError as exc:
            _err(str(exc))
            return 1
        print("stopped", flush=True)
        return 0
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# ---------------------------------------------------------------------------------- infer
def _add_infer(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "infer",
        help="send one inference request and print the outputs",
        description="Send one request to MODEL. Each --input is NAME=VALUE where VALUE is a "
        "JSON list/number (a tensor of the declared dtype), @FILE (a BYTES row with the file's "
        "bytes) or text (a BYTES row with the UTF-8 text). A batch dimension of 1 is added for "
        "batching models.",
    )
    p.add_argument("model", metavar="MODEL")
    p.add_argument(
        "--url",
        default="localhost:8001",
        help="host:port, http://host:port or grpc://host:port (default localhost:8001)",
    )
    p.add_argument(
        "--protocol",
        choices=("grpc", "http"),
        default=None,
        help="protocol when --url has no scheme (default grpc)",
    )
    p.add_argument(
        "--input",
        "-i",
        dest="inputs",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an input (repeat for each)",
    )
    p.add_argument(
        "--output",
        "-o",
        dest="outputs",
        action="append",
        default=[],
        metavar="NAME",
        help="an output to request (default: all)",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="request timeout in seconds")
    p.set_defaults(func=cmd_infer)


def cmd_infer(args: argparse.Namespace) -> int:
    from .server.client import format_output, infer_once, split_assignment

    try:
        values = dict(split_assignment(text) for text in args.inputs)
        outputs = infer_once(
            args.model,
            values,
            url=args.url,
            protocol=args.protocol,
            outputs=args.outputs or None,
            timeout=args.timeout,
        )
    except TritonRequestError as exc:
        print(f"[{exc.code}] {exc.message}", file=sys.stderr)
        return 1
    except TritonPyError as exc:
        _err(str(exc))
        return 1
    for output in outputs:
        print(format_output(output))
    return 0


# ------------------------------------------------------------------------------------ new
def _add_new(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "new",
        help="render a model template into a repository under a new name",
        description="Copy model_templates/TEMPLATE into REPO/NAME, renaming the model in its "
        "config.pbtxt. Templates: image_preprocess, classification_postprocess, "
        "detection_postprocess, torch_model, ensemble_classifier (--list shows them).",
    )
    p.add_argument("name", metavar="NAME", nargs="?", help="the new model's name")
    p.add_argument("--template", "-t", help="template to start from")
    p.add_argument("--repo", default="model_repository", help="model repository directory")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config.pbtxt parameter (repeatable)",
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="rename an ensemble step's model (repeatable)",
    )
    p.add_argument("--force", action="store_true", help="replace REPO/NAME if it exists")
    p.add_argument("--list", action="store_true", help="list the templates and exit")
    p.set_defaults(func=cmd_new)


def _pairs(items: Sequence[str], what: str) -> Dict[str, str]:
    pairs: Dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TritonPyError(f"{what} {item!r}: expected KEY=VALUE")
        pairs[key] = value
    return pairs


def cmd_new(args: argparse.Namespace) -> int:
    from .templates import list_templates, render_template

    if args.list:
        for name in list_templates():
            print(name)
        return 0
    if not args.name or not args.template:
        _err("new needs NAME and --template (see tritonpy new --list)")
        return 2
    try:
        parameters = _pairs(args.param, "--param") or None
        models = _pairs(args.model, "--model") or None
        target = render_template(
            args.template,
            args.name,
            Path(args.repo),
            parameters=parameters,
            models=models,
            overwrite=args.force,
        )
    except TritonPyError as exc:
        _err(str(exc))
        return 1
    print(f"created {target} from template {args.template!r}")
    print(f"next: edit {target / '1' / 'model.py'}; test it with")
    print(f"      tritonpy.testing.ModelHarness({str(target)!r}); serve it with")
    print(f"      tritonpy serve {args.repo}")
    return 0


# ----------------------------------------------------------------------------------- demo
def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .demo import DESCRIPTION, add_arguments

    p = sub.add_parser(
        "demo",
        help="serve the digits ensemble in a real tritonserver and query it",
        description=DESCRIPTION,
    )
    add_arguments(p)
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run

    return run(args)


# ------------------------------------------------------------------ tooling subcommands
# Each tooling package owns its subcommand; importing it is deferred so that `tritonpy --help`
# and the runtime stay light.
def _add_config(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .config.cli import add_parser

    add_parser(sub)


def _add_check(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .check.cli import add_parser

    add_parser(sub)


def _add_pack_env(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .envs.cli import add_parser

    add_parser(sub)


def _add_stub(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .stubs.cli import add_parser

    add_parser(sub)


def _add_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .export.cli import add_parser

    add_parser(sub)


# ----------------------------------------------------------------------------------- main
_SUBCOMMANDS: List[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    _add_serve,
    _add_infer,
    _add_new,
    _add_demo,
    _add_config,
    _add_check,
    _add_pack_env,
    _add_stub,
    _add_export,
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="tritonpy",
        description="Write, test and serve Python models for NVIDIA Triton Inference Server.",
    )
    parser.add_argument("--version", action="version", version=f"tritonpy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in _SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``tritonpy`` command; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        result: int = args.func(args)
    except MissingDependencyError as exc:
        # one line naming the subcommand and the pip command, no traceback; 2 like a usage error
        _err(str(exc.for_feature(f"tritonpy {args.command}")))
        return 2
    return result


if __name__ == "__main__":
    sys.exit(main())
