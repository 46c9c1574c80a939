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
import sys

from .._runtime.errors import MissingDependencyError, TritonPyError

__all__ = ["add_parser", "cmd_export"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare the ``export`` subcommand on ``subparsers``."""
    from ..envs.pack import BUILDERS

    parser = subparsers.add_parser(
        "export",
        help="write a model repository ready for your own Triton (Docker, Kubernetes, KServe)",
        description="Copy REPO into OUT/model_repository with every config.pbtxt written in "
        "full, each tritonpy model's environment archive for the release (kept when it fits, "
        "else packed) and the stubs it needs; check it; write OUT/Dockerfile, "
        "OUT/k8s/*.yaml and OUT/README.md.",
    )
    parser.add_argument("repository", metavar="REPO", help="the model repository to export")
    parser.add_argument("out", metavar="OUT", help="the output directory (empty or new)")
    parser.add_argument(
        "--triton-version",
        metavar="YY.MM",
        required=True,
        help="the release of the target Triton (the tag of nvcr.io/nvidia/tritonserver)",
    )
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
    parser.add_argument(
        "--no-pack",
        action="store_true",
        help="never build environments: a tritonpy model without a fitting one is an error",
    )
    parser.add_argument(
        "--builder",
        choices=BUILDERS,
        default="auto",
        help="how missing environments are built (as tritonpy pack-env --builder)",
    )
    parser.add_argument(
        "--allow-warnings",
        action="store_true",
        help="accept check warnings in the exported repository (errors still fail)",
    )
    parser.add_argument("--force", action="store_true", help="replace a previous export in OUT")
    parser.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    """Run ``tritonpy export``; return the exit status."""
    from ..envs.cli import ConsoleReporter
    from . import export_repository

    reporter = ConsoleReporter()
    try:
        result = export_repository(
            args.repository,
            args.out,
            triton_version=args.triton_version,
            base_image=args.base_image,
            name=args.name,
            image=args.image,
            replicas=args.replicas,
            cpu=args.cpu,
            memory=args.memory,
            pack=not args.no_pack,
            builder=args.builder,
            force=args.force,
            allow_warnings=args.allow_warnings,
            reporter=reporter,
        )
    except MissingDependencyError as exc:
        reporter.close()
        print(f"tritonpy: error: {exc.for_feature('tritonpy export')}", file=sys.stderr)
        return 2
    except TritonPyError as exc:
        reporter.close()
        print(f"tritonpy: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        reporter.close()
        print(f"tritonpy: export interrupted; {args.out} left as it was", file=sys.stderr)
        return 130
    reporter.close()
    for model in result.models:
        env = model.environment
        if model.parameter:
            env += f" {model.parameter} (Python {model.python})"
        stub = f", stub: {model.stub}" if model.stub else ""
        print(f"{model.name}: {model.kind}, config {model.config}, environment {env}{stub}")
    print(f"wrote {result.repository} and {', '.join(str(f) for f in result.files)}")
    print(f"next: docker build -t {args.image or f'{args.name}:{result.release}'} {result.out}")
    print(f"      (see {result.out / 'README.md'} for docker run, push and kubectl apply)")
    return 0
