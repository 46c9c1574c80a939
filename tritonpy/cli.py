"""The ``tritonpy`` command: a router over the subcommands each package declares.

Every package that owns a subcommand declares it the same way, in its ``_cli`` module (serve
and infer: ``tritonpy/server``; new: ``tritonpy/templates``; demo: ``tritonpy.demo``): an
``add_parser(subparsers)`` function calls :func:`tritonpy._tooling.cli.add_command` with a
``cmd_<name>(args) -> int``, which runs the command through the one error handler
(:func:`tritonpy._tooling.cli.run_command`). Where a library entry point has an options
dataclass (``PackOptions``, ``ExportOptions``, ``ServerOptions``, ...), the command's flags are
generated from its fields (:mod:`tritonpy._tooling.cli_options`). Add a subcommand by writing
both and listing the ``add_parser`` function in :func:`_registrations`.

Example::

    tritonpy serve model_repository --http-port 8000 --grpc-port 8001
    tritonpy infer add_sub --url localhost:8001 --input INPUT0=[1,2,3,4] --input INPUT1=[1,1,1,1]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, List, Optional, Sequence

from . import __version__
from ._tooling import cli as shared

__all__ = ["build_parser", "main"]


def _registrations() -> List[Callable[[shared.Subparsers], None]]:
    """The ``add`` function of every subcommand, in the order ``tritonpy --help`` lists them.
    Each tooling package owns its subcommands; they load here, when the parser is built, so
    that importing this module (and the runtime) stays light."""
    from .check._cli import add_parser as add_check
    from .config._cli import add_parser as add_config
    from .demo import add_parser as add_demo
    from .envs._cli import add_parser as add_pack_env
    from .export._cli import add_parser as add_export
    from .fleet._cli import add_parser as add_fleet
    from .perf._cli import add_parser as add_perf_and_tune
    from .probe._cli import add_parser as add_probe
    from .server._cli import add_parser as add_serve
    from .server._infer_cli import add_parser as add_infer
    from .storage._cli import add_parser as add_publish
    from .stubs._cli import add_parser as add_stub
    from .templates._cli import add_parser as add_new

    return [
        add_serve,
        add_infer,
        add_new,
        add_demo,
        add_config,
        add_check,
        add_pack_env,
        add_stub,
        add_export,
        add_publish,
        add_fleet,
        add_probe,
        add_perf_and_tune,
    ]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="tritonpy",
        description="Write, test and serve Python models for NVIDIA Triton Inference Server.",
    )
    parser.add_argument("--version", action="version", version=f"tritonpy {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in _registrations():
        add(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``tritonpy`` command; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    command: Optional[Callable[[argparse.Namespace], Any]] = getattr(args, "func", None)
    if command is None:
        parser.print_help(sys.stderr)
        return 2
    status: int = command(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
