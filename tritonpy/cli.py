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
import json
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

from . import __version__
from ._runtime.errors import MissingDependencyError, TritonPyError, TritonRequestError

if TYPE_CHECKING:  # the templates module (and protobuf) load only when `new` runs
    from .templates import ClassifierEnsemble

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
    for flag, port in (("--http-port", 8000), ("--grpc-port", 8001), ("--metrics-port", 8002)):
        p.add_argument(
            flag, type=int, default=None, help=f"port (default {port} when free, else a free one)"
        )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--tritonserver", default=None, help="another tritonserver binary to run")
    p.add_argument("--backend-directory", default=None, help="its backend directory")
    p.add_argument("--python", default=None, help="interpreter whose stub serves the models")
    p.add_argument("--timeout", type=float, default=120.0, help="startup timeout in seconds")
    p.add_argument("--log-verbose", type=int, default=0, help="tritonserver --log-verbose level")
    p.add_argument(
        "--log-file",
        default=None,
        help="write the server log here (default: a new file in ~/.cache/tritonpy/logs)",
    )
    p.add_argument(
        "--no-check", action="store_true", help="start without running 'tritonpy check' first"
    )
    p.add_argument(
        "--no-env-stubs",
        action="store_true",
        help="do not give models whose environment has another Python the wheel's stub for it",
    )
    p.add_argument(
        "--quiet", "-q", action="store_true", help="do not echo model logs to the console"
    )
    p.add_argument(
        "--no-heal",
        action="store_true",
        help="do not reload a model whose stub process died (Triton then fails its requests)",
    )
    p.add_argument(
        "--restart",
        action="store_true",
        help="start tritonserver again when it dies (with backoff; gives up after 5 deaths "
        "in 10 minutes)",
    )
    p.set_defaults(func=cmd_serve)


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: Optional[FrameType]) -> None:
    raise _Stop(signal.Signals(signum).name)


def _print(line: str) -> None:
    print(line, flush=True)


def _serve_ready_lines(server: Any) -> List[str]:
    """What serve prints once ready: the URLs, the models, how to query one."""
    from .server.readiness import model_inputs

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


def cmd_serve(args: argparse.Namespace) -> int:
    from ._tooling.installation import cache_directory
    from .server import CLI_NAMES, TritonServer
    from .server.keeper import serve_until_exit
    from .server.logs import new_log_file

    repository = Path(args.repository)
    log_file = args.log_file or new_log_file(repository, cache_directory() / "logs")
    server = TritonServer(
        repository,
        tritonserver=args.tritonserver,
        backend_directory=args.backend_directory,
        python=args.python,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        host=args.host,
        startup_timeout=args.timeout,
        log_verbose=args.log_verbose,
        log_file=log_file,
        check=not args.no_check,
        env_stubs=not args.no_env_stubs,
        default_ports=(8000, 8001, 8002),
        log_echo=None if args.quiet else _print,
        option_names=CLI_NAMES,
        heal=not args.no_heal,
        heal_report=_print,
    )
    # explicit handlers: SIGINT may be inherited as ignored (a background job of a shell)
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _print(f"starting tritonserver on {args.repository} (log {log_file}) ...")
        try:
            server.start()
        except MissingDependencyError:
            raise  # main prints it as one line, exit 2
        except TritonPyError as exc:
            _err(str(exc))
            if server.log_path is not None:
                _err(f"the server log is kept in {server.log_path}")
            return 1
        for finding in server.preflight_report.warnings if server.preflight_report else []:
            _print(f"check: {finding.render()}")
        for line in _serve_ready_lines(server):
            _print(line)
        _print("serving; press Ctrl-C to stop")
        # returns only when the server died on its own (and, with --restart, stayed dead)
        ended = serve_until_exit(server, restart=args.restart, report=_print)
        _err(ended.reason)
        _err(f"the server log is kept in {server.log_path}")
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
        _print(f"stopped; the server log is kept in {server.log_path}")
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
        description="Send one request to MODEL and print each output's name, datatype, shape "
        "and value (summarised by numpy for large tensors; --full prints every element, --json "
        "prints JSON). Each --input is NAME=VALUE, read by the input's datatype in the model's "
        "configuration: a BYTES input (tp.Text, tp.JSON, tp.Bytes, tp.Image) gets one row, "
        "@FILE the file's bytes, any other VALUE its UTF-8 text exactly as written, so "
        "NAME='{\"a\": 1}' or NAME='[1, 2]' sends that JSON document to a tp.JSON input; "
        "any other input takes a JSON number or list, a tensor of its datatype. A batch "
        "dimension of 1 is added for batching models.",
    )
    p.add_argument("model", metavar="MODEL", help="the model's name in the repository")
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
    shown = p.add_mutually_exclusive_group()
    shown.add_argument(
        "--full", action="store_true", help="print every element of every output (no '...')"
    )
    shown.add_argument(
        "--json",
        action="store_true",
        help="print the outputs as one JSON object: {model, outputs: [{name, datatype, shape, "
        "data}]} (BYTES as text, or {base64: ...} when not UTF-8)",
    )
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
    except MissingDependencyError:
        raise  # main prints it as one line, exit 2
    except TritonPyError as exc:
        _err(str(exc))
        return 1
    if args.json:
        document = {"model": args.model, "outputs": [output.to_json() for output in outputs]}
        print(json.dumps(document, ensure_ascii=False))
        return 0
    for output in outputs:
        print(format_output(output, full=args.full))
    return 0


# ------------------------------------------------------------------------------------ new
def _add_new(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "new",
        help="render a model template into a repository under a new name",
        description="Copy template TEMPLATE into REPO/NAME, renaming the model in its "
        "config.pbtxt. The ensemble_classifier template comes with its three members "
        "(NAME_preprocess, NAME_classifier, NAME_postprocess), so the repository checks clean "
        "and serves. --list shows the templates.",
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
        help="ensemble only: point step OLD at your model NEW and render the ensemble alone "
        "(repeatable)",
    )
    p.add_argument(
        "--train",
        action="store_true",
        help="ensemble_classifier: train the classifier on scikit-learn's digits (a few "
        "seconds) instead of starting from untrained weights",
    )
    p.add_argument("--force", action="store_true", help="replace existing model directories")
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
    from .templates import (
        ENSEMBLE_TEMPLATE,
        describe_template,
        list_templates,
        render_classifier_ensemble,
        render_template,
    )

    if args.list:
        names = list_templates()
        width = max((len(name) for name in names), default=0)
        for name in names:
            print(f"{name:<{width}}  {describe_template(name)}".rstrip())
        return 0
    if not args.name or not args.template:
        _err("new needs NAME and --template (see tritonpy new --list)")
        return 2
    try:
        parameters = _pairs(args.param, "--param") or None
        models = _pairs(args.model, "--model") or None
        if args.template == ENSEMBLE_TEMPLATE and not models:
            if parameters:
                raise TritonPyError(
                    f"--param: template {ENSEMBLE_TEMPLATE!r} has no parameters (an ensemble "
                    f"config has none); set them on the members after rendering"
                )
            rendered = render_classifier_ensemble(
                args.name, Path(args.repo), train=args.train, overwrite=args.force
            )
            _print_ensemble_next_steps(args, rendered)
            return 0
        if args.train:
            raise TritonPyError(
                f"--train: only the {ENSEMBLE_TEMPLATE!r} template (without --model) trains "
                f"weights; template {args.template!r} has none to train"
            )
        target = render_template(
            args.template,
            args.name,
            Path(args.repo),
            parameters=parameters,
            models=models,
            overwrite=args.force,
        )
    except MissingDependencyError:
        raise  # main prints it as one line, exit 2
    except TritonPyError as exc:
        _err(str(exc))
        return 1
    print(f"created {target} from template {args.template!r}")
    _print_model_next_steps(args, target)
    return 0


def _print_model_next_steps(args: argparse.Namespace, target: Path) -> None:
    model_py = target / "1" / "model.py"
    if model_py.is_file():
        print(f"next: edit {model_py}")
        if "model.pt" in model_py.read_text(encoding="utf-8"):
            print(f"      put its weights (a torch state_dict) at {target / '1' / 'model.pt'}")
        print(f"      test it:  tritonpy.testing.ModelHarness({str(target)!r}) in pytest")
    else:  # an ensemble rendered alone (--model): its steps name models of the repository
        print(f"next: add the models its steps run to {args.repo} (or fix them with --model)")
    print(f"      check it: tritonpy check {args.repo}")
    print(f"      serve it: tritonpy serve {args.repo}")


def _print_ensemble_next_steps(args: argparse.Namespace, rendered: ClassifierEnsemble) -> None:
    members = ", ".join(path.name for path in rendered.members.values())
    print(f"created the ensemble {rendered.ensemble} and its members {members}")
    if rendered.trained:
        print(
            f"the classifier is trained on scikit-learn's digits (held-out accuracy "
            f"{rendered.holdout_accuracy:.3f})"
        )
    else:
        print(
            f"the classifier's weights ({rendered.weights}) are untrained: it answers, with "
            f"arbitrary classes"
        )
    print(f"next: check it: tritonpy check {args.repo}")
    print(f"      serve it: tritonpy serve {args.repo}")
    print(f"      query it: tritonpy infer {rendered.ensemble.name} --input IMAGE=@digit.png")
    if not rendered.trained:
        print(
            f"      train it: tritonpy new {args.name} --template {args.template} "
            f"--repo {args.repo} --train --force  (needs scikit-learn and OpenCV)"
        )


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


def _add_probe(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .probe.cli import add_parser

    add_parser(sub)


def _add_perf(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # registers both ``perf`` and ``tune`` (one engine, one set of input options)
    from .perf.cli import add_parser

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
    _add_probe,
    _add_perf,
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
