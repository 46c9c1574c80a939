"""``tritonpy config MODEL_DIR [--check]``: write (or check) config.pbtxt from the model's
declarations.

Example::

    tritonpy config model_repository/preprocess            # writes config.pbtxt
    tritonpy config model_repository/preprocess --check    # exit 1 and a diff when it
                                                           # contradicts the declarations
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._tooling import cli as shared


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``config`` subcommand on ``subparsers``."""
    summary = "write or check config.pbtxt from a tritonpy model's declarations"
    parser = shared.add_command(subparsers, "config", cmd_config, help=summary)
    shared.add_model_dir(parser)
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 0 when config.pbtxt matches the declarations or Triton's "
        "auto-complete completes it to them (e.g. just name and backend), or is written by "
        "hand (an ensemble, a plain Python-backend model), else print the difference and "
        "exit 1",
    )
    parser.add_argument(
        "--version", type=int, default=None, help="the version directory (default: highest)"
    )
    parser.add_argument(
        "--fix-name",
        action="store_true",
        help="when config.pbtxt names another model than its directory (tritonserver refuses "
        "to load it), set name to the directory's name; without it that is an error",
    )


def cmd_config(args: argparse.Namespace) -> int:
    """Derive MODEL_DIR/config.pbtxt from the declarations of MODEL_DIR/<version>/model.py (name,
    backend, max_batch_size, dynamic_batching or a stateful model's sequence_batching, inputs,
    outputs, decoupled policy), keeping every
    other field as written. A name other than the directory's is an error (tritonserver refuses
    the model) unless --fix-name. Comments in config.pbtxt are lost when the file is
    rewritten."""
    from ._declarations import HandWrittenConfigError, sync_config

    try:
        result = sync_config(
            args.model_dir, check=args.check, version=args.version, fix_name=args.fix_name
        )
    except HandWrittenConfigError as exc:
        if not args.check:
            raise
        # nothing to contradict a hand-written file: a repository-wide --check stays green
        print(
            f"{Path(args.model_dir) / 'config.pbtxt'}: written by hand ({exc.kind}); no "
            "declarations to check it against ('tritonpy check' checks the file itself)"
        )
        return 0
    if args.check:
        if result.contradicts:
            sys.stdout.write(result.conflicts or result.diff)
            print(
                f"{result.path}: missing; run 'tritonpy config {args.model_dir}' to write it"
                if not result.before
                else f"{result.path}: contradicts the declarations of the model (the diff "
                f"above: the file as Triton's auto-complete completes it -> what the "
                f"declarations say); run 'tritonpy config {args.model_dir}' to update it",
                file=sys.stderr,
            )
            return 1
        if result.autocompletes:
            print(
                f"{result.path}: complete via auto-complete (Triton fills in the rest from "
                f"the declarations at load time; 'tritonpy config {args.model_dir}' writes "
                f"it out)"
            )
            return 0
        print(f"{result.path}: up to date")
        return 0
    print(f"{result.path}: {'written' if result.written else 'unchanged'}")
    return 0
