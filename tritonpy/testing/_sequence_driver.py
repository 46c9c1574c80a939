"""A sequence, driven from a test: ``harness.sequence(id)`` sends each request with that
correlation id, START on the first one, END when the test says so.

Example::

    with ModelHarness("models/running_sum") as harness:
        with harness.sequence(7) as seq:
            assert seq.send(VALUE=[[1]])["SUM"].tolist() == [[1]]     # START
            assert seq.send(VALUE=[[2]], end=True)["SUM"].tolist() == [[3]]   # END
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Protocol, Type

from ._errors import HarnessError
from ._responses import Outputs, StreamErrors
from ._sequences import SEQUENCE_END, SEQUENCE_START, CorrelationId


class _Sends(Protocol):
    """What a sequence is sent through (a ModelHarness)."""

    name: str
    sequence_rules: Optional[Any]

    def infer(
        self, inputs: Mapping[str, Any], *, correlation_id: CorrelationId = ..., flags: int = ...
    ) -> Outputs: ...

    def infer_stream(
        self,
        inputs: Mapping[str, Any],
        *,
        errors: StreamErrors = ...,
        correlation_id: CorrelationId = ...,
        flags: int = ...,
    ) -> List[Any]: ...


class SequenceDriver:
    """One sequence of requests to a harness's model (see :meth:`ModelHarness.sequence`).

    :meth:`send` (or :meth:`stream`, for a decoupled model) sends one request of the
    sequence: START on the first, END with ``end=True``; inputs as a mapping, as keywords, or
    both. After END the sequence is over: a further send raises :class:`HarnessError` (use
    ``harness.infer(..., correlation_id=id)`` to send what the server would refuse).
    Leaving the ``with`` block sends nothing: a sequence left open stays open, as a client
    that stops sending leaves it, until its idle timeout ends it.

    Example::

        with harness.sequence("user-1") as seq:
            seq.send(VALUE=[[5]])
            harness.clock.advance(2.0)      # past the idle timeout: the sequence is ended
            seq.send(VALUE=[[6]])           # TritonRequestError INVALID_ARG: no START
    """

    def __init__(self, harness: _Sends, correlation_id: CorrelationId) -> None:
        if harness.sequence_rules is None:
            raise HarnessError(
                f"sequence({correlation_id!r}): model '{harness.name}' has no "
                "sequence_batching in its configuration; add it (or declare tp.Sequence) "
                "to make it stateful"
            )
        if correlation_id in (0, ""):
            raise HarnessError(
                f"sequence({correlation_id!r}) of model '{harness.name}': a sequence needs a "
                "non-zero number or a non-empty string as its correlation id"
            )
        self._harness = harness
        #: the correlation id of every request of this sequence
        self.id = correlation_id
        #: requests sent so far
        self.sent = 0
        #: whether END was sent
        self.ended = False

    def _flags(self, end: bool, start: Optional[bool]) -> int:
        if self.ended:
            raise HarnessError(
                f"sequence {self.id!r} of model '{self._harness.name}' has ended (END was "
                "sent); start another with harness.sequence(id), or send a request of an "
                f"ended sequence with harness.infer(..., correlation_id={self.id!r})"
            )
        first = self.sent == 0 if start is None else start
        return (SEQUENCE_START if first else 0) | (SEQUENCE_END if end else 0)

    def _inputs(self, inputs: Optional[Mapping[str, Any]], named: Dict[str, Any]) -> Dict[str, Any]:
        return {**(inputs or {}), **named}

    def send(
        self,
        inputs: Optional[Mapping[str, Any]] = None,
        *,
        end: bool = False,
        start: Optional[bool] = None,
        **named: Any,
    ) -> Outputs:
        """Send one request of the sequence and return its outputs (as ``harness.infer``).
        ``start`` forces START on (a restart of an open sequence) or off (None: on the first
        request only)."""
        flags = self._flags(end, start)
        try:  # sent, whatever the answer: the next request carries no START
            return self._harness.infer(
                self._inputs(inputs, named), correlation_id=self.id, flags=flags
            )
        finally:
            self._sent(end)

    def stream(
        self,
        inputs: Optional[Mapping[str, Any]] = None,
        *,
        end: bool = False,
        start: Optional[bool] = None,
        errors: StreamErrors = "raise",
        **named: Any,
    ) -> List[Any]:
        """Send one request of the sequence to a decoupled model; return its responses' outputs
        (as ``harness.infer_stream``)."""
        flags = self._flags(end, start)
        try:
            return self._harness.infer_stream(
                self._inputs(inputs, named), correlation_id=self.id, flags=flags, errors=errors
            )
        finally:
            self._sent(end)

    def end(self, inputs: Optional[Mapping[str, Any]] = None, **named: Any) -> Outputs:
        """Send the last request of the sequence (END)."""
        return self.send(inputs, end=True, **named)

    def _sent(self, end: bool) -> None:
        self.sent += 1
        self.ended = self.ended or end

    def __enter__(self) -> SequenceDriver:
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        error: Optional[BaseException],
        trace: Optional[TracebackType],
    ) -> None:
        return None

    def __repr__(self) -> str:
        state = "ended" if self.ended else f"{self.sent} sent"
        return f"SequenceDriver({self._harness.name!r}, id={self.id!r}, {state})"
