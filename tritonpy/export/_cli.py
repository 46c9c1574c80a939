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

_FAILURES = shared.Failures(interrupted="tritonpy: export interrupted; {out} left as it was")


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``export`` subcommand on ``subparsers``."""
    from ..envs._cli import add_builder

    summary = "write a model repository ready for your own Triton (Docker, Kubernetes, KServe)"
    parser = shared.add_command(subparsers, "export", cmd_export, help=summary, failures=_FAILURES)
    shared.add_repository(parser, "the model repository to export")
    parser.add_argument("out", metavar="OUT", help="the output directory (empty or new)")
    shared.add_triton_version(
        parser,
        required=True,
        help="the release of the target Triton (the tag of nvcr.io/nvidia/tritonserver)",
    )
    _add_deployment(parser)
    parser.add_argument(
        "--no-pack",
        action="store_true",
        help="never build environments: a tritonpy model without a fitting one is an error",
    )
    add_builder(parser, "how missing environments are built (as tritonpy pack-env --builder)")
    parser.add_argument(
        "--env-layout",
        choices=["per-model", "shared", "image"],
        default="per-model",
        help="per-model (default): every model directory gets its own copy of its environment "
        "(works everywhere, object storage and KServe included); shared: one archive per "
        "environment in OUT/envs/, beside the repository, unpacked once by Triton (a "
        "repository served where it lies, or the image; not object storage); image: those "
        "archives unpacked by the Dockerfile into --env-root, used in place (the image only)",
    )
    parser.add_argument(
        "--env-root",
        metavar="DIR",
        default="/opt/tritonpy/envs",
        help="with --env-layout image: the folder of the image the environments are unpacked "
        "into (default /opt/tritonpy/envs)",
    )
    parser.add_argument(
        "--allow-warnings",
        action="store_true",
        help="accept check warnings in the exported repository (errors still fail)",
    )
    shared.add_force(parser, "replace a previous export in OUT")


def _add_deployment(parser: argparse.ArgumentParser) -> None:
    """The options of the Dockerfile and the Kubernetes manifests."""
    parser.add_argument(
        "--base-image",
        metavar="IMAGE",
        default=None,
        help="the Dockerfile's FROM (default nvcr.io/nvidia/tritonserver:YY.MM-py3)",
    )
    parser.add_argument(
        "--name",
        default="tritonpy-models",
        help="the Kubernetes Deployment/Service name (default tritonpy-models)",
    )
    parser.add_argument(
        "--image", default=None, help="the image the manifests run (default NAME:YY.MM)"
    )
    parser.add_argument("--replicas", type=int, default=1, help="Deployment replicas (default 1)")
    parser.add_argument("--cpu", default="1", help="CPU request per pod (default 1)")
    parser.add_argument("--memory", default="2Gi", help="memory request per pod (default 2Gi)")


def cmd_export(args: argparse.Namespace) -> int:
    """Import every model of REPO inside the environment it will run in and report every
    problem before building anything; then copy REPO into OUT/model_repository with every
    config.pbtxt written in full, each tritonpy model's environment for the release (kept when
    it fits, else built once per spec and kept in tritonpy's build cache) and the stubs it
    needs; check it; write OUT/Dockerfile, OUT/k8s/*.yaml and OUT/README.md."""
    from . import export_repository

    with shared.ConsoleReporter() as reporter:
        result = export_repository(
            args.repository,
            args.out,
            pack=not args.no_pack,
            reporter=reporter,
            **shared.options(
                args,
                "triton_version base_image name image replicas cpu memory builder force "
                "allow_warnings env_layout env_root",
            ),
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
    print(f"next: docker build -t {args.image or f'{args.name}:{result.release}'} {result.out}")
    print(f"      (see {result.out / 'README.md'} for docker run, push and kubectl apply)")
    return 0
