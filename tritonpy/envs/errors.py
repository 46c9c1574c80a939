"""Errors of the environment tooling."""

from __future__ import annotations

from ..errors import ToolError

__all__ = ["ArchiveError", "EnvError", "SpecError"]


class EnvError(ToolError):
    """An environment could not be built, packed, verified or placed."""


class SpecError(EnvError):
    """An environment spec (conda environment file, requirements file) is unusable."""


class ArchiveError(EnvError):
    """An environment archive is unsafe or incomplete (absolute or ``..`` member paths, links
    pointing outside, no ``bin/activate``, no ``lib/libpython3.X.so*``)."""
