"""Cancelling a request while ``execute()`` runs, as a client of the real server does.

:class:`CancelAt` says when the harness's client cancels: at the model's k-th
``is_cancelled()`` check (``check=k``, deterministic), or ``after_s`` seconds of wall time
after it sent the request. Wall time, not :attr:`ModelHarness.clock`: ``execute()`` runs in
the test's own thread, so the test cannot move a :class:`ManualClock` while the model sleeps
and polls; a timer thread cancels instead, as a gRPC client's ``future.cancel()`` would.

What the client then sees is what tritonclient's gRPC client sees from tritonserver 24.10
(measured with Triton's own QA model ``qa/python_models/execute_cancel``, driven as
``qa/L0_backend_python/lifecycle`` ``test_execute_cancel`` and ``decoupled``
``test_decoupled_execute_cancel`` drive it): its own cancellation, code ``CANCELLED``,
message ``Locally cancelled by application!``. Whatever the model answers afterwards (even
its own ``TritonError.CANCELLED`` response) never reaches the client. On a stream, the
responses sent before the cancellation arrive first.

Example::

    with ModelHarness("models/slow") as harness:
        with pytest.raises(TritonRequestError) as info:
            harness.infer({"DELAY": [[4.0]]}, cancel=CancelAt(check=2))
        assert info.value.code == "CANCELLED"
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback
__tracebackhide__ = True

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    NoReturn,
    Optional,
    Set,
    Tuple,
    Union,
)

from .._runtime.errors import TritonRequestError
from . import fake_pb_utils as pb
from ._errors import ExecuteContractError, HarnessError
from ._responses import (
    Outputs,
    StreamErrors,
    batch_answers,
    check_responses,
    client_outputs,
    collect_sent,
    decoupled_refused,
    outputs_or_error,
    stream_until_error,
)

#: what tritonclient's gRPC client reports for a request it cancelled (grpc's own text,
#: measured on 24.10 for ``async_infer(...).cancel()`` and ``stop_stream(cancel_requests=True)``)
CLIENT_CANCELLED = "Locally cancelled by application!"


#: the name of the thread that cancels a request after a wall time (CancelAt(after_s=))
TIMER_THREAD = "tritonpy-cancel-timer"


@dataclass(frozen=True)
class CancelAt:
    """When the harness's client cancels a request that ``execute()`` is working on.

    ``check=k``: the model's k-th ``is_cancelled()`` (on the request or its response sender)
    is the first to answer True. ``after_s=t``: ``t`` seconds (wall time) after the request
    was sent. Exactly one of the two. A model that answers before that point gets its answer
    to the client, as on the server, where a cancel after the response changes nothing.

    Example::

        harness.infer({"EXECUTE_DELAY": [[4.0]]}, cancel=CancelAt(after_s=1.5))
        harness.infer_stream({"TEXT": ["long"]}, cancel=CancelAt(check=3), errors="return")
    """

    check: Optional[int] = None
    after_s: Optional[float] = None

    def __post_init__(self) -> None:
        if (self.check is None) == (self.after_s is None):
            raise HarnessError(
                f"CancelAt(check={self.check!r}, after_s={self.after_s!r}): give exactly one, "
                "check=k (the model's k-th is_cancelled()) or after_s=seconds (wall time)"
            )
        if self.check is not None and (isinstance(self.check, bool) or self.check < 1):
            raise HarnessError(
                f"CancelAt(check={self.check!r}): expected a check number >= 1 (1: the "
                "model's first is_cancelled() answers True)"
            )
        if self.after_s is not None and not self.after_s >= 0:
            raise HarnessError(
                f"CancelAt(after_s={self.after_s!r}): expected seconds >= 0; use "
                "cancel=True to cancel before execute()"
            )

    def describe(self) -> str:
        if self.check is not None:
            return f"at the model's is_cancelled() check number {self.check}"
        return f"{self.after_s} s after sending it"


class ClientCancelledError(TritonRequestError):
    """What the client sees for a request it cancelled: code ``CANCELLED`` and
    :data:`CLIENT_CANCELLED` in :attr:`message`, exactly as tritonclient's gRPC client; the
    harness's account (when it cancelled, what the model answered that the client never
    receives) in :attr:`explanation` and in ``str()``; the model's answer alone in
    :attr:`model_answer` (``"[CANCELLED] stopped"``, ``"with its outputs"``; ``""``: none yet,
    as on a stream the client left). For a test that asserts what the MODEL did:
    :attr:`model_result`, the model's answer itself (its outputs, or its
    :class:`TritonRequestError`; on a stream, the parts it had sent when the client left,
    the client's view of each; None when it had not answered), and :attr:`parts`, what a streaming
    client received before its own CANCELLED.

    Example::

        with pytest.raises(ClientCancelledError) as info:
            harness.infer({"TEXT": ["a"]}, cancel=True)
        assert info.value.model_result["LENGTH"].tolist() == [[1]]
    """

    def __init__(self, code: str, message: str, *, model: Optional[str] = None) -> None:
        super().__init__(code, message, model=model)
        self.explanation = ""
        self.model_answer = ""
        self.model_result: Any = None
        self.parts: List[Any] = []

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base} ({self.explanation})" if self.explanation else base


class CancelWatch:
    """Cancels one request at its :class:`CancelAt` point, once (not after the response)."""

    def __init__(self, plan: CancelAt, request: pb.InferenceRequest, model: str) -> None:
        self.plan = plan
        self.request = request
        self.model = model
        self.checks = 0
        self.fired = False
        self.delivered = 0  # responses the client had received when it cancelled
        self.answered = ""  # the model's answer, which the client never receives
        self._done = False
        self._lock = threading.Lock()
        self._timer: Optional[threading.Timer] = None

    def start(self) -> None:
        if self.plan.check is not None:
            self.request.watch_cancel_checks(self._counted)
        else:
            self._timer = threading.Timer(float(self.plan.after_s or 0), self._fire)
            self._timer.daemon = True
            self._timer.name = TIMER_THREAD
            self._timer.start()

    def _counted(self) -> None:
        with self._lock:
            self.checks += 1
            due = self.plan.check is not None and self.checks >= self.plan.check
        if due:
            self._fire()

    def _fire(self) -> None:
        with self._lock:
            sender = self.request.created_sender()
            if self._done or self.fired or (sender is not None and sender.wait_final(0)):
                return  # the client has its answer already: a cancel changes nothing
            self.fired = True
            self.delivered = len(_responses(sender))
            self.request.cancel_as_client()

    def stop(self) -> None:
        """The client has its answer: no cancellation from now on."""
        with self._lock:
            self._done = True
        if self._timer is not None:
            self._timer.cancel()
            if self._timer is not threading.current_thread():
                self._timer.join(1.0)  # cancelled, it ends at once: no thread outlives its request
        self.request.watch_cancel_checks(None)

    def error(self, answered: str = "") -> ClientCancelledError:
        answered = answered or self.answered
        exc = ClientCancelledError("CANCELLED", CLIENT_CANCELLED)
        exc.model_answer = answered
        exc.explanation = (
            f"tritonpy: the harness's client cancelled its request to model '{self.model}' "
            f"{self.plan.describe()}, after {self.delivered} response(s); the model saw "
            f"is_cancelled() True from then on"
            + (f" and answered {answered}, which a client never receives" if answered else "")
        )
        return exc

    def collect(self, timeout: Optional[float]) -> Optional[List[pb.InferenceResponse]]:
        """The responses a stream's client received before it cancelled; None when the FINAL
        flag came first (or ``timeout`` passed), for the usual collection."""
        sender = self.request.created_sender()
        deadline = None if timeout is None else time.monotonic() + timeout
        while sender is not None and not self.fired:
            if sender.wait_final(0.01) or (deadline is not None and time.monotonic() > deadline):
                break
        self.stop()
        return _responses(sender)[: self.delivered] if self.fired else None


def _responses(sender: Optional[pb.ResponseSender]) -> List[pb.InferenceResponse]:
    return [r for r, _ in (sender.sent if sender is not None else []) if r is not None]


@contextmanager
def cancelling(
    plan: Optional[CancelAt], request: pb.InferenceRequest, model: str
) -> Iterator[Optional[CancelWatch]]:
    """Run the block (``execute()`` and the response checks of a non-streaming request) with
    ``plan`` armed; if the client cancelled before the block ended, raise what it sees
    (:class:`ClientCancelledError`) instead of the response or the error the model gave.
    A streaming caller reads the watch with :meth:`CancelWatch.collect` inside the block."""
    if plan is None:
        yield None
        return
    watch = CancelWatch(plan, request, model)
    watch.start()
    try:
        yield watch
    except (TritonRequestError, HarnessError) as exc:
        watch.stop()
        if watch.fired:
            raise watch.error(_answer(exc)) from exc
        raise
    watch.stop()
    if watch.fired:
        raise watch.error()


def _answer(exc: BaseException) -> str:
    if isinstance(exc, TritonRequestError):
        return f"[{exc.code}] {exc.message}"
    return f"{type(exc).__name__}: {exc}"


def _described(response: pb.InferenceResponse) -> str:
    error = response.error()
    if error is None:
        return "with its outputs"
    return f"[{error.code().name}] {error.message()}"


def cancelled_infer(
    harness: Any,
    plan: CancelAt,
    inputs: Mapping[str, Any],
    requested_outputs: Optional[Iterable[str]],
    rest: Tuple[Any, ...],
) -> Outputs:
    """``ModelHarness.infer(..., cancel=plan)``: the outputs, or the client's CANCELLED
    error when it cancelled before the model answered."""
    if harness.decoupled:
        raise decoupled_refused(harness.name)
    request, requested = harness._build_request(inputs, requested_outputs, *rest)
    with cancelling(plan, request, harness.name) as watch:
        returned = harness._run([request])
        (response,) = check_responses(harness.name, [request], returned, harness.stream_timeout)
        assert watch is not None
        watch.answered = _described(response)
    return client_outputs(response, requested)


def cancelled_stream(
    harness: Any,
    request: pb.InferenceRequest,
    requested: Optional[List[str]],
    plan: CancelAt,
    errors: StreamErrors,
) -> List[Any]:
    """``ModelHarness.infer_stream(..., cancel=plan)``: the parts the client received before
    it cancelled, then its CANCELLED error (raised, or in the list with ``errors="return"``);
    everything, as without ``cancel``, when the FINAL flag came first."""
    watch = CancelWatch(plan, request, harness.name)
    watch.start()
    try:
        returned = harness._run([request])
    except ExecuteContractError as error:
        watch.stop()
        if watch.fired:
            raise watch.error(f"[{error.code}] {error.message}") from error
        return stream_until_error(request, requested, error, errors)
    except BaseException:
        watch.stop()
        raise
    if returned is not None:  # a model that is not decoupled, on a stream
        watch.stop()
        if watch.fired:
            raise watch.error()
        (response,) = check_responses(harness.name, [request], returned, harness.stream_timeout)
        return [client_outputs(response, requested)]
    before = watch.collect(harness.stream_timeout)
    if before is None:  # the FINAL flag came first (no wait then), or none came in time
        sender = request.created_sender()
        final = sender is not None and sender.wait_final(0)
        sent = collect_sent(harness.name, request, 0 if final else harness.stream_timeout)
    else:
        sent = before
    if errors == "raise":
        parts = [client_outputs(r, requested) for r in sent]
        if before is not None:
            raise watch.error()
        return parts
    received: List[Any] = [outputs_or_error(r, requested) for r in sent]
    return received if before is None else [*received, watch.error()]


class BatchCancels:
    """``infer_requests(cancelled=...)``: indexes cancelled before ``execute()`` (a list), or
    ``{index: CancelAt(...)}`` cancelled while it runs (``True`` as a value: before). Only a
    cancelled request's client sees CANCELLED; the others of the batch get their answers.

    Example::

        harness.infer_requests([a, b], cancelled={1: CancelAt(check=1)})  # [outputs, error]
    """

    def __init__(
        self, cancelled: Union[Iterable[int], Mapping[int, Union[bool, CancelAt]]], model: str
    ) -> None:
        self.model = model
        self.plans: Dict[int, Union[bool, CancelAt]] = (
            dict(cancelled) if isinstance(cancelled, Mapping) else dict.fromkeys(cancelled, True)
        )
        self.watches: Dict[int, CancelWatch] = {}
        self.before: Set[int] = set()

    def arm(self, index: int, request: pb.InferenceRequest) -> None:
        plan = self.plans.get(index)
        if plan is True:
            request.cancel_as_client()
            self.before.add(index)
        elif isinstance(plan, CancelAt):
            self.watches[index] = watch = CancelWatch(plan, request, self.model)
            watch.start()

    def settle(self, results: Dict[int, Any]) -> None:
        """Each answered request's client: its answer, or CANCELLED if it cancelled first
        (before ``execute()``: always, as a gRPC client that cancelled a queued request)."""
        for index in [i for i in self.before if i in results]:
            self.before.discard(index)
            results[index] = cancelled_before(self.model, results[index])
        for index in [i for i in self.watches if i in results]:
            watch = self.watches.pop(index)
            watch.stop()
            if watch.fired:
                answer = results[index]
                said = _answer(answer) if isinstance(answer, BaseException) else "with its outputs"
                results[index] = error = watch.error(said)
                error.model_result = answer


#: how the harness's client cancelled before ``execute()`` (``cancel=True``, ``cancelled=[i]``)
BEFORE = (
    "before execute() (on 24.10 a request cancelled while queued still reaches execute(), "
    "is_cancelled() True, measured with the default scheduler and the dynamic batcher)"
)


def cancelled_before(model: str, result: Any, how: str = BEFORE) -> ClientCancelledError:
    """What a client that cancelled sees, ``result`` (the model's outputs, its error, or on a
    stream its parts) kept in :attr:`ClientCancelledError.model_result`."""
    if isinstance(result, list):
        answered = f"{len(result)} response(s)" if result else ""
    elif isinstance(result, BaseException):
        answered = _answer(result)
    else:
        answered = "with its outputs"
    exc = ClientCancelledError("CANCELLED", CLIENT_CANCELLED)
    exc.model_answer = answered
    exc.model_result = result
    exc.explanation = (
        f"tritonpy: the harness's client cancelled its request to model '{model}' {how}; "
        "the model saw is_cancelled() True"
        + (f" and answered {answered}, which a client never receives" if answered else "")
    )
    return exc


def cancelled_before_infer(
    harness: Any,
    inputs: Mapping[str, Any],
    requested_outputs: Optional[Iterable[str]],
    rest: Tuple[Any, ...],
) -> NoReturn:
    """``ModelHarness.infer(..., cancel=True)``: ``execute()`` runs on the cancelled request,
    as on the server; the client's CANCELLED is raised, the model's answer kept in it."""
    if harness.decoupled:
        raise decoupled_refused(harness.name)
    request, requested = harness._build_request(inputs, requested_outputs, *rest)
    request.cancel_as_client()
    (answer,) = batch_answers(harness.name, [request], harness._run, harness.stream_timeout)
    result = (
        answer if isinstance(answer, TritonRequestError) else outputs_or_error(answer, requested)
    )
    raise cancelled_before(harness.name, result)


def stream_cancelled(
    harness: Any,
    request: pb.InferenceRequest,
    requested: Optional[List[str]],
    cancel_after: Optional[int],
    errors: StreamErrors,
) -> List[Any]:
    """``infer_stream(..., cancel=True)`` (``cancel_after`` None) or ``cancel_after=n``: the
    parts the client received (none, or the first n), then its CANCELLED (raised, or last in
    the list with ``errors="return"``), as tritonclient's callback gets them after
    ``stop_stream(cancel_requests=True)``; a stream that ended before its n-th response is
    returned as without ``cancel_after``."""
    if cancel_after is None:
        request.cancel_as_client()
        how = BEFORE
    elif isinstance(cancel_after, bool) or cancel_after < 1:
        raise HarnessError(
            f"infer_stream(cancel_after={cancel_after}): expected a number of "
            "responses >= 1; use cancel=True to cancel before execute()"
        )
    else:
        request.get_response_sender().cancel_after(cancel_after)
        how = f"after its response number {cancel_after} (stop_stream(cancel_requests=True))"
    sent = run_stream(harness, request, requested, "return", cancel_after)
    sender = request.created_sender()
    if cancel_after is not None and not (sender is not None and sender.wait_cancelled(0)):
        return _raising_first_error(sent) if errors == "raise" else sent
    parts = sent[:cancel_after] if cancel_after is not None else []
    exc = cancelled_before(harness.name, sent, how)
    exc.parts = parts
    if errors == "raise":
        _raising_first_error(parts)
        raise exc
    return [*parts, exc]


def _raising_first_error(parts: List[Any]) -> List[Any]:
    """``parts`` as ``errors="raise"`` gives them: the first error response raised."""
    for part in parts:
        if isinstance(part, TritonRequestError):
            raise part
    return parts


def run_stream(
    harness: Any,
    request: pb.InferenceRequest,
    requested: Optional[List[str]],
    errors: StreamErrors,
    cancel_after: Optional[int] = None,
) -> List[Any]:
    """``infer_stream``'s run of one request: every part up to the FINAL flag (with
    ``cancel_after``: the first that many, once the client cancelled), as the client's view
    of each (an error response raised, or in the list with ``errors="return"``)."""
    if not harness.decoupled:  # on a stream, as a gRPC client may send to it
        (answer,) = batch_answers(
            harness.name, [request], harness._run, harness.stream_timeout, True
        )
        return stream_until_error(request, requested, answer, errors)
    try:
        harness._run([request])  # None: execute() checked it
    except ExecuteContractError as error:
        return stream_until_error(request, requested, error, errors)
    sent = collect_sent(harness.name, request, harness.stream_timeout, cancel_after)
    if errors == "raise":
        return [client_outputs(r, requested) for r in sent]
    return [outputs_or_error(r, requested) for r in sent]
