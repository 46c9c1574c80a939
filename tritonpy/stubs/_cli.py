"""``tritonpy stub``: thin command over :func:`tritonpy.stubs._provision.provision_stub`.

Example::

    tritonpy stub model_repository/preprocess --triton-version 24.10 --python 3.10
"""

from __future__ import annotations

import argparse

from .._tooling import cli as shared
from ._cache import SOURCES
from ._provision import provision_stub


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``stub`` subcommand on ``subparsers``."""
    summary = "place a triton_python_backend_stub for the environment's Python in MODEL_DIR"
    parser = shared.add_command(
        subparsers, "stub", cmd_stub, help=summary, failures=shared.CHANGES_MODEL_DIR
    )
    shared.add_model_dir(parser, "the model directory (config.pbtxt)")
    shared.add_triton_version(parser, required=True, help="server release")
    shared.add_python(parser, "Python of the environment (default: from MODEL_DIR/*_py3.X.tar.gz)")
    parser.add_argument(
        "--source",
        dest="sources",
        action="append",
        choices=SOURCES,
        help="only these sources, in this order (repeat; default: all)",
    )
    parser.add_argument(
        "--source-dir",
        metavar="DIR",
        help="offline sources: python_backend, common, core, backend (and pybind11, dlpack, "
        "googletest) as checkouts DIR/NAME/ or archives DIR/NAME.tar.gz, or a folder of "
        "releases DIR/triton-rYY.MM/ holding those; a build from the same inputs is taken "
        "from the stub cache (default: $TRITONPY_STUB_SOURCE_DIR, which pack-env, serve and "
        "export use too)",
    )
    parser.add_argument("--python-path", metavar="PATH", help="interpreter to build against")
    parser.add_argument("--build-script", metavar="PATH", help="another build_stub.sh")


def cmd_stub(args: argparse.Namespace) -> int:
    """Put triton_python_backend_stub beside MODEL_DIR/config.pbtxt, built for Python X.Y from
    Triton release YY.MM, from the first source that works: the local cache, the nvidia-pytriton
    wheel (release 24.10 only), a native build (the build_stub.sh shipped with tritonpy), Docker
    (its Dockerfile.stub)."""
    with shared.ConsoleReporter() as reporter:
        result = provision_stub(
            args.model_dir,
            sources=tuple(args.sources or SOURCES),
            reporter=reporter,
            **shared.options(args, "triton_version python source_dir python_path build_script"),
        )
    how = f"{result.source}, cached" if result.cached and result.source != "cache" else None
    print(
        f"{result.path} (Python {result.python}, r{result.release}, {result.arch}, "
        f"from {how or result.source})",
        flush=True,
    )
    return 0
