"""What a model under the harness may call (BLS targets): another ModelHarness, or a callable
on pb_utils requests. Being extended: model classes and plain callables on numpy inputs."""

from __future__ import annotations

from typing import Any, Callable

from . import fake_pb_utils as pb
from ._responses import _bls_handler

__all__ = ["bls_handler"]


def bls_handler(target: Any) -> Callable[[pb.InferenceRequest], Any]:
    """The fake's BLS handler for ``target``."""
    from .harness import ModelHarness  # the harness imports this module

    if isinstance(target, ModelHarness):
        return _bls_handler(target)
    if callable(target):
        handler: Callable[[pb.InferenceRequest], Any] = target
        return handler
    raise TypeError(f"a BLS target must be a ModelHarness or a callable, got {target!r}")
