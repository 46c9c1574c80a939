"""The fleet's errors, in tritonpy's tree under :class:`~tritonpy.server.ServerError`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._tooling.errors import ServerError

if TYPE_CHECKING:
    from ._rollout import RolloutReport


class FleetError(ServerError):
    """Every replica a request was sent to failed it for a reason of its own (each replica's
    error is in the message), or the fleet was described wrongly (no replica URL)."""


class RolloutError(FleetError):
    """A rolling update stopped at one replica: ``report`` holds what was done (the replicas
    updated before it, the one that failed, and why); the replicas after it were left as
    they were."""

    def __init__(self, message: str, report: Optional[RolloutReport] = None) -> None:
        super().__init__(message)
        self.report = report
