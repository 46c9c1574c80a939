"""``tritonpy stub``: thin command over :func:`tritonpy.stubs.provision.provision_stub`.

Example::

    tritonpy stub model_repository/preprocess --triton-version 24.10 --python 3.10
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from .._runtime.errors import MissingDependencyError, TritonPyError
from ..envs.cli import ConsoleReporter
from .provision import SOURCES, provision_stub

__all__ = ["add_parser", "cmd_stub"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``stub`` to ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "stub",
        help="place a triton_python_backend_stub for the environment's Python in MODEL_DIR",
        description="Put triton_python_backend_stub beside MODEL_DIR/config.pbtxt, built for "
        "Python X.Y from Triton release YY.MM, from the first source that works: the local "
        "cache, the nvidia-pytriton wheel (release 24.10 only), a native build "
        "(the build_stub.sh shipped with tritonpy), Docker (its Dockerfile.stub).",
    )
    p.add_argument("model_dir", metavar="MODEL_DIR", help="the model directory (config.pbtxt)")
    p.add_argument("--triton-version", required=True, metavar="YY.MM", help="server release")
    p.add_argument(
        "--python",
        metavar="X.Y",
        help="Python of the environment (default: from MODEL_DIR/*_py3.X.tar.gz)",
    )
    p.add_argument(
        "--source",
        dest="sources",
        action="append",
        choices=SOURCES,
        help="only these sources, in this order (repeat; default: all)",
    )
    p.add_argument(
        "--source-dir",
        metavar="DIR",
        help="offline sources: python_backend, common, core, backend (and pybind11, dlpack, "
        "googletest) as checkouts DIR/NAME/ or archives DIR/NAME.tar.gz; a build from the "
        "same inputs is taken from the stub cache (default: $TRITONPY_STUB_SOURCE_DIR, which "
        "pack-env, serve and export use too)",
    )
    p.add_argument("--python-path", metavar="PATH", help="interpreter to build against")
    p.add_argument("--build-script", metavar="PATH", help="another build_stub.sh")
    p.set_defaults(func=cmd_stub)
    return p


def cmd_stub(args: argparse.Namespace, reporter: Optional[ConsoleReporter] = None) -> int:
    """Run ``stub``; return the exit status (0 ok, 1 error, 130 interrupted)."""
    reporter = reporter or ConsoleReporter()
    try:
        result = provision_stub(
            args.model_dir,
            triton_version=args.triton_version,
            python=args.python,
            sources=tuple(args.sources or SOURCES),
            reporter=reporter,
            source_dir=args.source_dir,
            python_path=args.python_path,
            build_script=args.build_script,
        )
    except KeyboardInterrupt:
        reporter.close()
        print(f"tritonpy: interrupted; {args.model_dir} left as it was", file=sys.stderr)
        return 130
    except MissingDependencyError:
        raise  # tritonpy.cli.main prints it as one line, exit 2
    except TritonPyError as exc:
        reporter.close()
        print(f"tritonpy: error: {exc}", file=sys.stderr)
        return 1
    how = f"{result.source}, cached" if result.cached and result.source != "cache" else None
    print(
        f"{result.path} (Python {result.python}, r{result.release}, {result.arch}, "
        f"from {how or result.source})",
        flush=True,
    )
    return 0
