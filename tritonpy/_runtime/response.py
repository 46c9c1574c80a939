"""``Response``: outputs together with response parameters, returned or yielded by ``infer``.

Example::

    class Tagger(tp.Model):
        inputs = {"TEXT": tp.Text()}
        outputs = {"TAGS": tp.Text()}

        def infer(self, TEXT):
            return tp.Response({"TAGS": TEXT.upper()}, parameters={"language": "en"})

Response parameters reach clients as the response's ``parameters`` (gRPC) / ``"parameters"``
(HTTP JSON). They need a Python backend with ``pb_utils.InferenceResponse(parameters=...)``
(python_backend r25.02 src/pb_stub.cc: release 25.02 and later); release 24.10's
InferenceResponse has no such argument, and a ``Response`` with parameters then fails that
request with an error that says so. Declare ``response_parameters = True`` on the model to
have it refuse to load there instead.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Union

from ._release_hooks import PARAMETERS_SOURCE, release_of
from .errors import OutputError

ResponseParameter = Union[bool, int, str]


class Response:
    """The outputs of one ``infer`` call (``{output name: value}``, as ``infer`` would return
    them) and the ``parameters`` (``{str: bool | int | str}``) to attach to every response
    that call produces."""

    __slots__ = ("outputs", "parameters")

    def __init__(
        self,
        outputs: Mapping[str, Any],
        *,
        parameters: Optional[Mapping[str, ResponseParameter]] = None,
    ) -> None:
        self.outputs = outputs
        self.parameters: Dict[str, ResponseParameter] = dict(parameters or {})
        for key, value in self.parameters.items():
            if not isinstance(key, str) or not isinstance(value, (bool, int, str)):
                raise OutputError(
                    f"tp.Response parameter {key!r} = {value!r}: keys must be str and values "
                    f"bool, int or str (what Triton's response parameters hold); convert it, "
                    f"for example with str()"
                )

    def __repr__(self) -> str:
        return f"Response({sorted(self.outputs)}, parameters={self.parameters!r})"


def make_inference_response(pb: Any, tensors: Any, parameters: Mapping[str, Any]) -> Any:
    """``pb.InferenceResponse`` with parameters, or an OutputError naming the release when the
    pb_utils in use has no response parameters (Triton 24.10 and earlier)."""
    try:
        return pb.InferenceResponse(output_tensors=tensors, parameters=dict(parameters))
    except TypeError as exc:
        if "parameters" not in str(exc) and "argument" not in str(exc):
            raise
    raise OutputError(
        f"response parameters {sorted(parameters)}: this Triton's Python backend"
        f"{release_of(pb)} has no response parameters (pb_utils.InferenceResponse("
        f"parameters=...) arrived in release 25.02, {PARAMETERS_SOURCE}; release 24.10 and "
        f"older refuse it, as do 24.11 to 25.01); return the outputs "
        f"without parameters=, or carry the values in an output (declare "
        f"response_parameters = True to refuse to load on such a release instead)"
    )
