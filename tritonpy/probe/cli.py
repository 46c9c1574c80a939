"""``tritonpy probe [--url URL] [--model NAME ...] [--timeout S] [--protocol P] [--json]``.

Exit status: 0 when every probed model answered, 1 when one did not or the server did not
answer (one ``FAIL`` line each, naming the model and why), 2 for bad options or a missing
tritonclient (one line with the ``pip install`` command).

Example::

    tritonpy probe --url localhost:8000 --timeout 5
    tritonpy probe --url grpc://localhost:8001 --model preprocess --json
"""

from __future__ import annotations

import argparse
import sys

from .._runtime.errors import MissingDependencyError, TritonPyError

__all__ = ["add_parser", "cmd_probe"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare the ``probe`` subcommand on ``subparsers``."""
    from .runner import DEFAULT_TIMEOUT, DEFAULT_URL

    parser = subparsers.add_parser(
        "probe",
        help="send each model one real request: a liveness check that sees dead stubs",
        description="Send one inference request, built from the model's configuration (or its "
        "model_warmup sample), to each model of a running Triton (default: every READY model) "
        "and report which answered. A success or a refusal of the input (INVALID_ARG) counts "
        "as an answer; INTERNAL errors such as 'Stub process ... is not healthy', UNAVAILABLE "
        "and timeouts do not. Exit 1 when a model did not answer: use it as a livenessProbe.",
    )
    parser.add_argument(
        "--url",
        default=DEFAULT_URL,
        help=f"server address: host:port (HTTP unless --protocol grpc), http://, grpc:// "
        f"(default {DEFAULT_URL})",
    )
    parser.add_argument(
        "--protocol", choices=("http", "grpc"), default=None, help="protocol for a host:port URL"
    )
    parser.add_argument(
        "--model",
        "-m",
        action="append",
        default=None,
        metavar="NAME",
        help="probe this model (repeatable; default: every READY model)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds each call may take (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--repository",
        metavar="DIR",
        default=None,
        help="the server's model repository, to read warmup samples' input_data_file",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=cmd_probe)


def cmd_probe(args: argparse.Namespace) -> int:
    """Run ``tritonpy probe``; return the exit status."""
    from .runner import probe

    try:
        report = probe(
            args.url,
            args.model,
            timeout=args.timeout,
            protocol=args.protocol,
            repository=args.repository,
        )
    except MissingDependencyError as exc:
        print(f"tritonpy: error: {exc.for_feature('tritonpy probe')}", file=sys.stderr)
        return 2
    except TritonPyError as exc:
        print(f"tritonpy: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(report.to_json() + "\n" if args.json else report.render_text())
    return report.exit_code
