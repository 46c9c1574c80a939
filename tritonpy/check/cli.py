"""``tritonpy check REPO [--json] [--strict] [--triton-version YY.MM | --server-python X.Y]``.

Exit status: 0 without errors (warnings alone pass unless ``--strict``), 1 with errors, 2 when
the check cannot run (no such directory, a bad option, protobuf/tritonclient not installed: one
line with the ``pip install`` command).

Example::

    tritonpy check model_repository --triton-version 24.10
    tritonpy check model_repository --json --strict > findings.json
"""

from __future__ import annotations

import argparse
import sys

from .._runtime.errors import MissingDependencyError, TritonPyError

__all__ = ["add_parser", "cmd_check"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare the ``check`` subcommand on ``subparsers``."""
    parser = subparsers.add_parser(
        "check",
        help="find deploy-time errors in a model repository without starting a server",
        description="Check a Triton model repository: layout, config.pbtxt against the "
        "tritonpy declarations, batching, ensembles, execution environments and their "
        "archives. Exit 1 on errors (or on warnings with --strict).",
    )
    parser.add_argument("repository", metavar="REPO", help="the model repository directory")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--strict", action="store_true", help="fail on warnings too")
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--triton-version",
        metavar="YY.MM",
        default=None,
        help="the target server's release (its container Python; numpy 2 support)",
    )
    target.add_argument(
        "--server-python",
        metavar="X.Y",
        default=None,
        help="the target server's Python, when not given by --triton-version",
    )
    parser.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    """Run ``tritonpy check``; return the exit status."""
    from . import check_repository

    try:
        report = check_repository(
            args.repository,
            triton_version=args.triton_version,
            server_python=args.server_python,
        )
    except MissingDependencyError as exc:
        print(f"tritonpy: error: {exc.for_feature('tritonpy check')}", file=sys.stderr)
        return 2
    except TritonPyError as exc:
        print(f"tritonpy: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(report.to_json() + "\n" if args.json else report.render_text())
    return report.exit_code(strict=args.strict)
