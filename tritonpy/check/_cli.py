"""``tritonpy check REPO [--json] [--strict] [--triton-version YY.MM | --server-python X.Y]
[--build-envs | --no-envs]``.

Exit status: 0 without errors (warnings alone pass unless ``--strict``), 1 with errors, 2 when
the check cannot run (no such directory, a bad option, protobuf/tritonclient not installed: one
line with the ``pip install`` command).

Example::

    tritonpy check model_repository --triton-version 24.10
    tritonpy check model_repository --json --strict > findings.json
    tritonpy check s3://127.0.0.1:9000/models/prod --triton-version 24.10
"""

from __future__ import annotations

import argparse
import sys

from .._tooling import cli as shared


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``check`` subcommand on ``subparsers``."""
    summary = "find deploy-time errors in a model repository without starting a server"
    # exit 2: the check could not run (exit 1 is for errors it found)
    parser = shared.add_command(
        subparsers, "check", cmd_check, help=summary, failures=shared.Failures(status=2)
    )
    shared.add_repository(
        parser,
        "the model repository: a directory, or an s3:// URL (a temporary copy is checked; "
        "credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION)",
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--strict", action="store_true", help="fail on warnings too")
    parser.add_argument(
        "--no-envs",
        action="store_true",
        help="import every model.py in this Python, not in the model's own environment",
    )
    parser.add_argument(
        "--build-envs",
        action="store_true",
        help="build (or take from the cache) the environment a model directory's "
        "requirements.txt/environment.yml declares, and import model.py there "
        "(needs --triton-version)",
    )
    target = parser.add_mutually_exclusive_group()
    shared.add_triton_version(
        target,
        help="the target server's release: its container Python, numpy 2 support and what "
        "it refuses (names, activation hooks, archive members: TP8xx), from tritonpy's table "
        "of release facts",
    )
    shared.add_server_python(
        target, "the target server's Python, when not given by --triton-version"
    )


def cmd_check(args: argparse.Namespace) -> int:
    """Check a Triton model repository (a directory, or an s3:// URL read through a temporary
    copy): layout, config.pbtxt against the tritonpy declarations, batching, ensembles,
    execution environments and their archives, and what the target release
    (--triton-version) refuses. Each model.py is imported inside the model's own environment
    when it has one. Exit 1 on errors (or on warnings with --strict)."""
    from . import check_repository

    report = check_repository(
        args.repository,
        envs=not args.no_envs,
        build_envs=args.build_envs,
        **shared.options(args, "triton_version server_python"),
    )
    sys.stdout.write(report.to_json() + "\n" if args.json else report.render_text())
    return report.exit_code(strict=args.strict)
