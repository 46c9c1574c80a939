"""``tritonpy export REPO OUT --triton-version YY.MM``: thin command over
:func:`tritonpy.export.export_repository`.

Exit status: 0 when OUT holds the export, 1 when the export failed (the reason and the fix on
stderr; OUT unchanged), 2 for bad options or a missing optional dependency.

Example::

    tritonpy export model_repository deploy --triton-version 24.10
    tritonpy export model_repository deploy --triton-version 24.10 --no-pack --force
"""

from __future__ import annotations

import argparse

from .._tooling import cli as shared
from .._tooling.cli_options import add_options, options_from
from ._options import ExportOptions

_FAILURES = shared.Failures(interrupted="tritonpy: export interrupted; {out} left as it was")


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``export`` subcommand on ``subparsers``."""
    summary = "write a model repository ready for your own Triton (Docker, Kubernetes, KServe)"
    parser = shared.add_command(subparsers, "export", cmd_export, help=summary, failures=_FAILURES)
    shared.add_repository(parser, "the model repository to export")
    parser.add_argument("out", metavar="OUT", help="the output directory (empty or new)")
    add_options(parser, ExportOptions)


def cmd_export(args: argparse.Namespace) -> int:
    """Import every model of REPO inside the environment it will run in and report every
    problem before building anything; then copy REPO into OUT/model_repository with every
    config.pbtxt written in full, each tritonpy model's environment for the release (kept when
    it fits, else built once per spec and kept in tritonpy's build cache) and the stubs it
    needs; check it; write OUT/Dockerfile, OUT/k8s/*.yaml and OUT/README.md."""
    from . import export_repository

    with shared.ConsoleReporter() as reporter:
        result = export_repository(
            args.repository, args.out, options_from(args, ExportOptions), reporter=reporter
        )
    for built in result.environments:
        how = "built" if built.built else "from the cache"
        users = ", ".join(built.models) or "-"
        print(
            f"environment {built.plan.label} (Python {built.python}): {how}"
            + (f" in {built.seconds:.1f} s" if built.built else "")
            + f", used by {users}"
        )
    for model in result.models:
        env: str = model.environment
        if model.parameter:
            env += f" {model.parameter} (Python {model.python})"
        stub = f", stub: {model.stub}" if model.stub else ""
        print(f"{model.name}: {model.kind}, config {model.config}, environment {env}{stub}")
    print(
        f"wrote {result.repository} and {', '.join(str(f) for f in result.files)} "
        f"(environment layout {result.env_layout}, {result.seconds:.1f} s)"
    )
    if result.url is not None:
        print(f"published {result.repository} to {result.url}")
    print(f"next: docker build -t {args.image or f'{args.name}:{result.release}'} {result.out}")
    print(f"      (see {result.out / 'README.md'} for docker run, push and kubectl apply)")
    return 0
