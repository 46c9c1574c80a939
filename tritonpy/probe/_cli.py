"""``tritonpy probe [--url URL] [--model NAME ...] [--repository REPO] [--timeout S]
[--protocol P] [--json]``.

Exit status: 0 when every probed model answered, 1 when one did not or the server did not
answer (one ``FAIL`` line each, naming the model and why), 2 for bad options or a missing
tritonclient (one line with the ``pip install`` command).

Example::

    tritonpy probe --url localhost:8000 --timeout 5
    tritonpy probe --url grpc://localhost:8001 --model preprocess --json
    tritonpy probe --url localhost:8000 --repository s3://127.0.0.1:9000/models/prod
"""

from __future__ import annotations

import argparse
import sys

from .._tooling import cli as shared
from .._tooling.cli_options import add_options, options_from


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``probe`` subcommand on ``subparsers``."""
    from ._runner import DEFAULT_URL, ProbeOptions

    summary = "send each model one real request: a liveness check that sees dead stubs"
    # exit 2: the probe could not run (exit 1 is for a model that did not answer)
    parser = shared.add_command(
        subparsers, "probe", cmd_probe, help=summary, failures=shared.Failures(status=2)
    )
    shared.add_server_address(parser, default_url=DEFAULT_URL, bare_protocol="http")
    parser.add_argument(
        "--model",
        "-m",
        action="append",
        default=None,
        metavar="NAME",
        help="probe this model (repeatable; default: every READY model)",
    )
    add_options(parser, ProbeOptions)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def cmd_probe(args: argparse.Namespace) -> int:
    """Send one inference request, built from the model's configuration (or its model_warmup
    sample), to each model of a running Triton (default: every READY model) and report which
    answered. A success or the model's own refusal of the input (INVALID_ARG) counts as an
    answer; INTERNAL errors such as 'Stub process ... is not healthy', UNAVAILABLE, timeouts
    and the server's refusals before any model ran (no correlation id, a wrong shape) do not.
    A decoupled model gets a stream and answers with its first response or its final flag
    (gRPC's bidirectional stream; over HTTP generate_stream, which carries JSON numbers and
    text but no sequence id: use grpc://HOST:8001 for the rest); a sequence model (or an
    ensemble over one) gets a one-request sequence, START and END with a fresh correlation id.
    A failure names the ensemble member or BLS callee whose stub died. Exit 1 when a model did
    not answer: use it as a livenessProbe (tritonpy export runs it over gRPC). With
    --repository (a directory or an s3:// URL) the repository's models are probed, and one the
    server has not loaded, or serves in an older version than the repository's newest (not
    rolled out yet: tritonpy rollout), fails by name. A bare host:port --url is HTTP here (the
    port Kubernetes probes use), gRPC for tritonpy infer."""
    from ._runner import ProbeOptions, probe

    options = options_from(args, ProbeOptions)
    report = probe(args.url, args.model, options, protocol=args.protocol)
    sys.stdout.write(report.to_json() + "\n" if args.json else report.render_text())
    return report.exit_code
