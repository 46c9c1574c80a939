"""How the sequence batcher runs admitted requests: the ``execute()`` it makes of them, and
what it does to a request between the rounds of an iterative sequence.

- Requests sent at once run in as many ``execute()`` calls as the batcher needs: each holds
  at most one request of a sequence and at most ``max(1, max_batch_size)`` requests, and a
  new sequence that finds no free slot waits for a later one (:func:`request_rounds`).
- The direct strategy of a batching model fills each empty slot below a busy one with a null
  request (core's ``CopyAsNull``: the inputs of a real request with no meaningful data,
  START, END and READY false, CORRID 0, correlation id 0, no flags, no requested outputs) and
  orders the batch by slot; a null request's response reaches no client (measured, r24.10).
- With ``iterative_sequence`` a rescheduled request comes back with no flags (core's
  ``IterativeSequencer::RescheduleRequest``: neither START nor END, its controls so too),
  and the release of a request that started a sequence ends that sequence.

Example::

    returned = run_sequence_batch(harness, [request], harness._execute)
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    MutableMapping,
    Optional,
    Sequence,
    Set,
    Tuple,
)

import numpy as np

from .._runtime.errors import TritonRequestError
from . import fake_pb_utils as pb
from ._hash_order import server_input_order
from ._requests import NDArray, RequestedModel, new_request
from ._reschedule import execute_with_rescheduling
from ._sequences import SEQUENCE_START, Backlogged, CorrelationId, SequenceRules

Execute = Callable[[List[pb.InferenceRequest]], Any]


def _rules(model: RequestedModel) -> SequenceRules:
    rules = model.sequence_rules
    assert rules is not None  # only sequence models come here
    return rules


def _batched(model: RequestedModel) -> bool:
    return int(model.config.get("max_batch_size", 0)) > 0


def null_request(model: RequestedModel, like: pb.InferenceRequest) -> pb.InferenceRequest:
    """The filler of an empty slot, shaped as ``like`` (see the module docstring; its data
    are zeros here, the server's are not meaningful)."""
    controls = _rules(model).control_tensors(0, False, False, batched=_batched(model), ready=False)
    arrays: Dict[str, NDArray] = {}
    for tensor in like.inputs():
        data = tensor.as_numpy()
        if tensor.name() not in controls:
            empty = data.dtype.kind == "O"
            arrays[tensor.name()] = (
                np.full(data.shape, b"", np.object_) if empty else np.zeros_like(data)
            )
    merged = {**arrays, **controls}
    ordered = {n: merged[n] for n in server_input_order(merged)}
    return new_request(model, ordered, [], "", 0, 0, None)


Build = Callable[[int, Set[int]], pb.InferenceRequest]
Round = List[Tuple[int, pb.InferenceRequest]]


def request_rounds(
    rules: Optional[SequenceRules],
    ids: Sequence[CorrelationId],
    build: Build,
    refused: MutableMapping[int, Any],
) -> Iterator[Round]:
    """The ``execute()`` calls the scheduler makes of requests sent at once (``ids``: their
    correlation ids; ``build(index, busy_slots)`` admits one): without a sequence batcher one,
    with it as many as its rules need: at most one request of a sequence and at most
    ``max(1, max_batch_size)`` requests in each, and a new sequence that finds no free slot
    waits for the next (one that never finds one raises :class:`Backlogged`). A request the
    server refuses lands in ``refused``. The caller runs each round before the next is made
    (an END or an iterative sequence's release frees its slot)."""
    waiting = list(range(len(ids)))
    while waiting:
        round_: Round = []
        deferred: List[int] = []
        backlog: Optional[Backlogged] = None
        for index in waiting:
            if rules is not None and _full(rules, round_, ids[index]):
                deferred.append(index)
                continue
            busy = {rules.slot_of[r] for _, r in round_ if r in rules.slot_of} if rules else set()
            try:
                round_.append((index, build(index, busy)))
            except Backlogged as exc:
                deferred.append(index)
                backlog = exc
            except TritonRequestError as exc:
                refused[index] = exc
        if not round_:
            if backlog is not None:
                raise backlog
            return
        yield round_
        waiting = deferred


def _full(rules: SequenceRules, round_: Round, correlation_id: CorrelationId) -> bool:
    """Whether a request of ``correlation_id`` must wait for a later execute()."""
    if len(round_) >= rules.layout.batch:
        return True
    return correlation_id not in (0, "") and any(
        r.correlation_id() == correlation_id for _, r in round_
    )


def sequence_batch(
    model: RequestedModel, requests: List[pb.InferenceRequest]
) -> Tuple[List[pb.InferenceRequest], List[int]]:
    """The ``execute()`` the sequence batcher makes of ``requests`` (admitted together), and
    where each of them sits in it (see the module docstring)."""
    rules = _rules(model)
    plain = list(range(len(requests)))
    layout = rules.layout
    if layout.strategy != "direct" or layout.instances != 1 or layout.batch < 2:
        return requests, plain
    # request_rounds gives each request of a batch a slot of its own
    by_slot = {rules.slot_of.get(r, i): i for i, r in enumerate(requests)}
    like = requests[by_slot[min(by_slot)]]
    batch: List[pb.InferenceRequest] = []
    where = [0] * len(requests)
    for slot in range(max(by_slot) + 1):
        if slot in by_slot:
            where[by_slot[slot]] = len(batch)
            batch.append(requests[by_slot[slot]])
        else:
            batch.append(null_request(model, like))
    return batch, where


def _rescheduled(model: RequestedModel) -> Callable[[pb.InferenceRequest], None]:
    """What the iterative sequencer does to a request it runs again: no flags, and the
    controls to match (START and END false)."""
    rules = _rules(model)

    def again(request: pb.InferenceRequest) -> None:
        request.set_flags(0)
        if not rules.controls:
            return
        controls = rules.control_tensors(
            request.correlation_id(), False, False, batched=_batched(model)
        )
        request._inputs = [  # the fake's own field: the batcher sets controls anew each time
            pb.Tensor(t.name(), controls[t.name()]) if t.name() in controls else t
            for t in request.inputs()
        ]

    return again


def run_sequence_batch(
    model: RequestedModel, requests: List[pb.InferenceRequest], execute: Execute
) -> Any:
    """``execute`` on the batch the sequence batcher makes of ``requests`` (rescheduled
    requests run again); returns what the model returned for ``requests``, in their order."""
    rules = _rules(model)
    batch, where = sequence_batch(model, requests)
    started = [r.correlation_id() for r in requests if r.flags() & SEQUENCE_START]
    again = _rescheduled(model)
    returned = execute_with_rescheduling(
        model.name, model.config, batch, execute, again, model.instance_name
    )
    if rules.iterative:  # released: a sequence its START request began ends with it
        for correlation_id in started:
            rules.release(correlation_id)
    if batch is requests or not isinstance(returned, (list, tuple)):
        return returned
    if len(returned) != len(batch):
        return returned  # the harness's checks report the wrong count
    return [returned[i] for i in where]
