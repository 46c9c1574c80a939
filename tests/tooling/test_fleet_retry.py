"""Which failures FleetClient sends to another replica (the ones measured on 24.10 replicas,
tritonpy/fleet/_retry.py, each as the client libraries raise it), and where it sends them."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from tritonclient.utils import InferenceServerException

from tritonpy import TritonRequestError
from tritonpy.fleet import FleetClient, replica_fault


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (TritonRequestError("UNAVAILABLE", "failed to connect to all addresses"), "unavailable"),
        (
            TritonRequestError("NOT_FOUND", "Request for unknown model: 'm' is not found"),
            "model not loaded",
        ),
        (
            TritonRequestError("INTERNAL", "Stub process 'm_0_0' is not healthy."),
            "stub not healthy",
        ),
        # tritonclient's own refusal on a gRPC stream whose replica died before the request was
        # sent (seen killing a replica under load: tests/integration/test_fleet_s3.py)
        (
            InferenceServerException(
                "The stream is no longer in valid state, the error detail is reported through "
                "provided callback. A new stream should be started after stopping the current "
                "stream."
            ),
            "unavailable",
        ),
    ],
)
def test_a_replica_fault_is_retried(error: BaseException, reason: str) -> None:
    assert replica_fault(error) == reason


@pytest.mark.parametrize(
    "error",
    [
        TritonRequestError("INVALID_ARG", "input 'X' has shape [2], expected [4]"),
        TritonRequestError("INTERNAL", "ZeroDivisionError: division by zero"),
        TritonRequestError("DEADLINE_EXCEEDED", "Deadline Exceeded"),
        InferenceServerException("unexpected inference output 'Y' for model 'm'"),
        ValueError("The stream is fine"),
    ],
)
def test_the_request_own_error_is_not_retried(error: BaseException) -> None:
    assert replica_fault(error) is None


def test_a_dead_replica_share_is_spread_over_the_others() -> None:
    """Round robin goes round the replicas up: with one marked down, the two others get one
    turn in two each (not the one after it two turns in three), and the dead one comes last."""
    fleet = FleetClient(["a:8001", "b:8001", "c:8001"])
    fleet._down["b:8001"] = time.monotonic() + 60
    orders = [fleet._order() for _ in range(300)]
    assert all(order[-1] == "b:8001" and len(order) == 3 for order in orders)
    firsts = Counter(order[0] for order in orders)
    assert firsts == {"a:8001": 150, "c:8001": 150}
    fleet._down.clear()
    firsts = Counter(fleet._order()[0] for _ in range(300))
    assert firsts == {"a:8001": 100, "b:8001": 100, "c:8001": 100}
