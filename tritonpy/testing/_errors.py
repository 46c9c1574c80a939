"""The harness's own errors (re-exported by :mod:`tritonpy.testing._harness`).

A model that would fail to load raises :class:`tritonpy.server.ModelLoadError`, the one class
for load failures (re-exported here), also under the harness."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

from typing import Any

from .._runtime.errors import TritonPyError, TritonRequestError


class HarnessError(TritonPyError):
    """The harness itself could not do what was asked (missing tritonclient, bad arguments)."""


class ModelBugError(HarnessError):
    """The model broke the Python-backend contract: wrong number of responses, a non-response
    object, no FINAL flag in decoupled mode..."""


class ExecuteContractError(TritonRequestError, ModelBugError):
    """What a client receives when ``execute()`` broke the Python-backend contract (returned
    something other than a list of one response per request, responses from a decoupled
    model, a response for a rescheduled request...): the server's error response, code
    ``INTERNAL`` and the stub's message in :attr:`message`, exactly as tritonserver 24.10
    sends it; :attr:`explanation` is tritonpy's account of the rule and its fix (appended to
    ``str(error)``, never to the message a BLS caller receives).

    It is a :class:`TritonRequestError` (what a client sees) and a :class:`ModelBugError`
    (what it means).

    Example::

        try:
            harness.infer({"X": x})
        except ExecuteContractError as error:
            assert error.code == "INTERNAL" and "Expected a list" in error.message
            print(error.explanation)
    """

    def __init__(self, message: str, explanation: str) -> None:
        TritonRequestError.__init__(self, "INTERNAL", message)
        self.explanation = explanation
        self.args = (f"[INTERNAL] {message}\n(tritonpy: {explanation})",)

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> Any:
        return (type(self), (self.message, self.explanation), self.__dict__)
