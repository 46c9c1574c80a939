"""Request rescheduling (``request.set_release_flags(TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)``)
as tritonserver 24.10 does it.

With ``sequence_batching { iterative_sequence: true }`` the server runs a rescheduled request
again in a later ``execute`` (the same request: a decoupled model keeps sending through the same
response sender; a non-decoupled one returns ``None`` in its place until it answers). Without
it, the server never answers the request: the client waits forever (measured), so the harness
raises an error naming the rule instead.
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

from typing import Any, Callable, Dict, List, Optional

from . import fake_pb_utils as pb
from ._errors import ModelBugError

#: more rounds than any test needs: a model that reschedules forever is a bug
MAX_ROUNDS = 1000


def _iterative(config: Dict[str, Any]) -> bool:
    return bool((config.get("sequence_batching") or {}).get("iterative_sequence", False))


def _rescheduled(requests: List[pb.InferenceRequest]) -> List[int]:
    flag = pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
    return [i for i, r in enumerate(requests) if r.release_flags() == flag]


def execute_with_rescheduling(
    name: str,
    config: Dict[str, Any],
    requests: List[pb.InferenceRequest],
    execute: Callable[[List[pb.InferenceRequest]], Any],
    again: Optional[Callable[[pb.InferenceRequest], None]] = None,
    instance: str = "",
) -> Any:
    """``execute(requests)``, then again on the rescheduled ones until none is; returns what
    the model returned, with each rescheduled slot filled by its final answer. ``again`` is
    what the scheduler does to a request before it runs it again (the sequence batcher's);
    ``instance`` the model instance's name, as the stub's errors give it."""
    returned = execute(requests)
    pending = _rescheduled(requests)
    rounds = 0
    while pending:
        if not _iterative(config):
            raise ModelBugError(
                f"model '{name}' released request(s) with "
                "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE but its configuration has no "
                "sequence_batching { iterative_sequence: true }: Triton never answers such "
                "a request (the client waits forever). Add that to config.pbtxt, or answer "
                "the request instead of rescheduling it"
            )
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise ModelBugError(
                f"model '{name}' rescheduled a request {MAX_ROUNDS} times in a row; "
                "a rescheduled request must end with a response"
            )
        rerun = [requests[i] for i in pending]
        for request in rerun:
            request.set_release_flags(pb.TRITONSERVER_REQUEST_RELEASE_ALL)
            if again is not None:
                again(request)
        answer = execute(rerun)
        # execute() checked both as the stub does: a list of one entry per request, or None
        merged: List[Optional[Any]] = (
            list(returned) if isinstance(returned, list) else [None] * len(requests)
        )
        answers = list(answer) if isinstance(answer, list) else [None] * len(rerun)
        for index, item in zip(pending, answers):
            merged[index] = item
        returned = None if all(item is None for item in merged) else merged
        pending = [pending[i] for i in _rescheduled(rerun)]
    return returned
