"""``tritonpy rollout --replica URL [--replica URL ...] --model NAME [...]``: a rolling update
of models across replicas through the repository API, one line per replica and a total.

Exit status: 0 when every replica serves the models' new versions, 1 when the rollout stopped
at a replica (the message names it and why; the replicas after it keep their old versions),
2 for bad options or a missing tritonclient.

Example::

    tritonpy rollout --replica 10.0.0.1:8001 --replica 10.0.0.2:8001 --model classifier
"""

from __future__ import annotations

import argparse
import sys

from .._tooling import cli as shared


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``rollout`` subcommand on ``subparsers``."""
    parser = shared.add_command(
        subparsers,
        "rollout",
        cmd_rollout,
        help="load models' new versions replica by replica (repository API, explicit mode)",
    )
    parser.add_argument(
        "--replica",
        "-r",
        action="append",
        required=True,
        metavar="URL",
        help="a replica (host:port, grpc://host:port or http://host:port; repeatable, in order)",
    )
    parser.add_argument(
        "--model",
        "-m",
        action="append",
        required=True,
        metavar="NAME",
        help="a model to load on each replica (repeatable)",
    )
    parser.add_argument(
        "--protocol",
        choices=shared.PROTOCOLS,
        default="grpc",
        help="the protocol of bare host:port replicas (default: grpc)",
    )
    shared.add_timeout(parser, 300.0, "each replica's load and readiness")


def cmd_rollout(args: argparse.Namespace) -> int:
    """Roll the models out across the replicas, one at a time: on each, load_model every
    model through the repository API (the replicas run --model-control-mode=explicit), then
    wait until it serves, ready, the versions the repository holds (those the first replica
    loaded) before the next replica. Publish the new version first (tritonpy publish
    --new-version). A failure stops the rollout: the replicas after it keep their old
    versions, and the message says which replica failed and why."""
    from ._errors import RolloutError
    from ._rollout import roll_out

    try:
        report = roll_out(args.replica, args.model, protocol=args.protocol, timeout=args.timeout)
    except RolloutError as exc:
        if exc.report is not None:
            for replica in exc.report.replicas:
                sys.stdout.write(f"updated  {replica.line()}\n")
        raise
    for replica in report.replicas:
        sys.stdout.write(f"updated  {replica.line()}\n")
    sys.stdout.write(report.total_line() + "\n")
    return 0
