"""What perf and tune say about a model's kind. Why a load test cannot start, in one line
that names the real reason and the command that works: the model's kind (decoupled models
stream over gRPC only; sequence models want correlation ids and START/END flags) or the
inputs (data the model refuses: the options that give other data); and tune's notes on the
knobs that do not apply to a kind.

Example::

    kind = ModelKind("square", decoupled=True)
    str(http_refusal(kind, "http://localhost:8000"))   # "... is a decoupled model ..."
    refused_message(kind, "StatusCode.INVALID_ARGUMENT: ...", sequence_length=20)
"""

from __future__ import annotations

from typing import List

from .._runtime.errors import ToolError
from ..client import ModelKind

_INPUT_FIX = (
    "Give inputs it accepts: --input NAME=FILE or NAME=image|text|json, --shape NAME=d,d "
    "for dynamic dimensions."
)


def http_refusal(kind: ModelKind, url: str) -> ToolError:
    """The error for a decoupled model asked over HTTP: its responses stream over gRPC only."""
    return ToolError(
        f"model {kind.name!r} is {kind.phrase()}: its responses stream over gRPC only "
        f"(Triton's HTTP endpoint refuses decoupled models), not over {url}. Measure it at "
        f"the server's gRPC address: tritonpy perf {kind.name} --url HOST:8001 (the gRPC "
        "port; tritonpy serve prints it)."
    )


def _sequence_fix(kind: ModelKind, detail: str) -> str:
    if "unexpected number of string elements" in detail:
        return (
            "Triton 24.10 fails every request to a model with a TYPE_STRING CORRID control; "
            "remove the CORRID control from sequence_batching and read "
            "request.correlation_id() in the model, then run perf with --sequence-ids string."
        )
    if kind.string_id:
        return "Its CORRID control is TYPE_STRING: perf sent string ids (--sequence-ids)."
    return (
        "Check the model's sequence_batching controls; --sequence-ids string sends string "
        "ids to a model that reads request.correlation_id() as a string."
    )


def refused_message(kind: ModelKind, detail: str, *, sequence_length: int) -> str:
    """The message for a first request the model refused with ``detail`` (the server's
    words): the kind's reason and fix when the refusal is about it, else the inputs' fix."""
    name = kind.name
    if "decoupled" in detail:
        return (
            f"model {name!r} refused the generated request: {detail}. It answers as a "
            "decoupled model: perf streams those over gRPC (tritonpy perf "
            f"{name} --url HOST:8001) when their configuration says "
            "model_transaction_policy { decoupled: true }."
        )
    if kind.sequence:
        about_sequence = any(
            word in detail for word in ("correlation", "START", "END", "sequence", "CORRID")
        )
        what = (
            f"the first request of a sequence ({sequence_length} requests, START on the "
            "first, END on the last, a fresh correlation id)"
        )
        fix = _sequence_fix(kind, detail) if about_sequence else _INPUT_FIX
        return f"model {name!r}, {kind.phrase()}, refused {what}: {detail}. {fix}"
    return f"model {name!r} refused the generated request: {detail}. {_INPUT_FIX}"


def kind_notes(kind: ModelKind) -> List[str]:
    """What tune says of a decoupled or sequence model: how it is measured, and the knob that
    does not apply (dynamic batching on a sequence model: the sequence batcher replaces it)."""
    notes = []
    if kind.sequence:
        notes.append(
            f"{kind.name!r} is {kind.phrase()}: dynamic batching does not apply (the "
            "sequence batcher forms the batches); tune varies instance count and "
            "max_batch_size only, measured with sequences (concurrency = live sequences)"
        )
    if kind.decoupled:
        notes.append(
            f"{kind.name!r} is decoupled: measured over gRPC streams, scored by requests/s"
        )
    return notes
