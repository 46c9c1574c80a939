"""The command line of tritonpy.storage (being written: it declares no subcommand yet)."""

from __future__ import annotations

from .._tooling import cli as shared


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare this package's subcommands on ``subparsers`` (none yet)."""
    del subparsers
