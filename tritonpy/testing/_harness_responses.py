"""What :class:`~tritonpy.testing.ModelHarness` shows beside a client's outputs: the response
parameters a client receives, what a decoupled model's response sender sent, and the answer
the target release's server gives for the model's readiness."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

from typing import Any, Callable, ContextManager, Dict, Iterable, List, Mapping, Optional, Tuple

from .._tooling.release_facts import ReleaseFacts
from . import fake_pb_utils as pb
from ._release import READY_TIMEOUT_S, Readiness, readiness
from ._responses import (
    Outputs,
    client_outputs,
    collect_sent,
    response_parameters,
)


class ResponseViews:
    """The views of :class:`~tritonpy.testing.ModelHarness` on what a model answers beside a
    client's outputs: response parameters, what the response sender sent, and readiness (the
    parts that depend on the target release)."""

    release_facts: ReleaseFacts
    model: Any
    name: str
    instance_name: str
    stream_timeout: float
    #: how long the server waits for the model's is_ready() (5 s; a test may shorten it)
    ready_timeout: float = READY_TIMEOUT_S

    @property
    def release(self) -> str:
        """The target release (``YY.MM``), as given (``release_facts``: its facts)."""
        return self.release_facts.release

    def _respond(
        self, inputs: Mapping[str, Any], requested_outputs: Optional[Iterable[str]], *rest: Any
    ) -> Tuple[pb.InferenceResponse, Optional[List[str]]]:
        raise NotImplementedError  # ModelHarness's

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        raise NotImplementedError  # ModelHarness's

    def _build_request(
        self, inputs: Mapping[str, Any], requested_outputs: Optional[Iterable[str]], *rest: Any
    ) -> Tuple[pb.InferenceRequest, Optional[List[str]]]:
        raise NotImplementedError  # ModelHarness's

    def _execute(self, requests: List[pb.InferenceRequest]) -> Any:
        raise NotImplementedError  # ModelHarness's

    def _run(self, requests: List[pb.InferenceRequest]) -> Any:
        raise NotImplementedError  # ModelHarness's: _execute, and again when rescheduled

    def _running(self) -> ContextManager[None]:
        raise NotImplementedError  # ModelHarness's

    def _in_model(self, fn: Callable[[], Any]) -> Any:
        """Call a model hook as the harness runs model code (the fake installed, showing the
        harness's release; coroutines to completion)."""
        with self._running():
            return self._call(fn)

    def _stub_dead(self) -> bool:
        return getattr(self, "_ended", None) is not None

    def infer_with_parameters(
        self,
        inputs: Mapping[str, Any],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_id: str = "",
    ) -> Tuple[Outputs, Dict[str, Any]]:
        """``infer``, also returning the response parameters the client receives (``{}`` when
        it has none; releases before 25.02 have none), as ``InferClient`` does.

        Example::

            outputs, params = ModelHarness(Tagger, release="25.02").infer_with_parameters(x)
        """
        response, requested = self._respond(inputs, requested_outputs, parameters, request_id)
        return client_outputs(response, requested), response_parameters(response)

    def stream_responses(
        self,
        inputs: Mapping[str, Any],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_id: str = "",
    ) -> List[Tuple[Optional[pb.InferenceResponse], int]]:
        """Send one request to a decoupled model; return what its response sender sent, as
        the server receives it: ``(pb_utils.InferenceResponse or None, flags)`` pairs, error
        responses and the FINAL flag included (:meth:`infer_stream` gives the client's view).

        Example::

            sent = harness.stream_responses({"TEXT": "two words"})
            assert sent[-1][1] == pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        """
        request, _ = self._build_request(inputs, requested_outputs, parameters, request_id)
        # rescheduled requests run again, as for infer_stream (a BLS caller streams this way);
        # a decoupled model's returns are checked in _execute
        self._run([request])
        collect_sent(self.name, request, self.stream_timeout)  # waits for the FINAL flag
        sender = request.created_sender()
        return list(sender.sent) if sender is not None else []

    def readiness(self) -> Readiness:
        """What the target release's server answers for this model's readiness: from 26.03 it
        calls the model's ``is_ready()`` (5 s at most, :attr:`ready_timeout`); before, never.

        Example::

            assert not ModelHarness(Warming, release="26.03").readiness().ready
        """
        return readiness(
            self.release_facts,
            self.model,
            self.instance_name,
            self._in_model,
            self._stub_dead(),
            self.ready_timeout,
        )

    def is_ready(self) -> bool:
        """``readiness().ready``: whether ``/v2/models/<name>/ready`` would answer 200."""
        return self.readiness().ready
