"""``tritonpy config MODEL_DIR [--check]``: write (or check) config.pbtxt from the model's
declarations.

Example::

    tritonpy config model_repository/preprocess            # writes config.pbtxt
    tritonpy config model_repository/preprocess --check    # exit 1 and a diff when it differs
"""

from __future__ import annotations

import argparse
import sys

from ..errors import TritonPyError

__all__ = ["add_parser", "cmd_config"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare the ``config`` subcommand on ``subparsers``."""
    parser = subparsers.add_parser(
        "config",
        help="write or check config.pbtxt from a tritonpy model's declarations",
        description="Derive MODEL_DIR/config.pbtxt from the declarations of "
        "MODEL_DIR/<version>/model.py (name, backend, max_batch_size, dynamic_batching, "
        "inputs, outputs, decoupled policy), keeping every other field as written. "
        "Comments in config.pbtxt are lost when the file is rewritten.",
    )
    parser.add_argument("model_dir", metavar="MODEL_DIR", help="the model directory")
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; print the difference and exit 1 when there is one",
    )
    parser.add_argument(
        "--version", type=int, default=None, help="the version directory (default: highest)"
    )
    parser.set_defaults(func=cmd_config)


def cmd_config(args: argparse.Namespace) -> int:
    """Run ``tritonpy config``; return the exit status (0 ok, 1 difference or error)."""
    from .declarations import sync_config

    try:
        result = sync_config(args.model_dir, check=args.check, version=args.version)
    except TritonPyError as exc:
        print(f"tritonpy: error: {exc}", file=sys.stderr)
        return 1
    if args.check:
        if result.changed:
            sys.stdout.write(result.diff)
            print(
                f"{result.path}: differs from the declarations; run "
                f"'tritonpy config {args.model_dir}' to update it",
                file=sys.stderr,
            )
            return 1
        print(f"{result.path}: up to date")
        return 0
    print(f"{result.path}: {'written' if result.written else 'unchanged'}")
    return 0
