"""Many tritonservers serving one repository: a client that fails over between replicas
(:class:`FleetClient`), and a rolling update of models through the repository API
(:func:`roll_out`, ``tritonpy rollout``).

Example::

    from tritonpy.fleet import FleetClient, roll_out

    replicas = ["10.0.0.1:8001", "10.0.0.2:8001", "10.0.0.3:8001"]
    fleet = FleetClient(replicas, retries=3)
    outputs = fleet.infer("classifier", {"IMAGE": images})
    report = roll_out(replicas, ["classifier"])      # after publishing a new version
    print(report.total_line(), fleet.stats().summary())
"""

from __future__ import annotations

from .._runtime._public_names import publish as _publish
from ._client import FleetAnswer, FleetClient
from ._errors import FleetError, RolloutError
from ._retry import replica_fault
from ._rollout import ReplicaRollout, RolloutReport, roll_out
from ._stats import FleetStats, ReplicaStats

__all__ = [
    "FleetAnswer",
    "FleetClient",
    "FleetError",
    "FleetStats",
    "ReplicaRollout",
    "ReplicaStats",
    "RolloutError",
    "RolloutReport",
    "replica_fault",
    "roll_out",
]

_publish(__name__, globals())
