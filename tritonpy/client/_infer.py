"""One request to a running server with tritonclient (HTTP or gRPC): :class:`InferClient`
for a model's configuration, signature and one inference (request parameters, sequence
controls, version), and :func:`infer_once` for a request built from command-line strings.

Example::

    client = InferClient("localhost:8001")
    outputs = client.infer("add_sub", {"INPUT0": np.ones(4, np.float32), ...})
    client.close()
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
    Union,
)

import numpy as np
from numpy.typing import NDArray

from .._runtime._optional import require
from .._runtime.errors import DeclarationError
from .._tooling.errors import ServerError
from ._signature import ModelSignature, OutputTensor
from ._values import request_arrays
from ._wire import WireProtocol, parse_endpoint, request_error

if TYPE_CHECKING:
    from typing_extensions import Unpack


@dataclass(frozen=True)
class SequenceControl:
    """The sequence-batcher controls of one request to a sequence model (its configuration
    has ``sequence_batching``): ``id`` the correlation id (a non-zero int, or a non-empty
    str), ``start`` the first request of the sequence, ``end`` its last one.

    Example::

        client.infer("seq_sum", {"VALUE": value}, sequence=SequenceControl(42, start=True))
        client.infer("seq_sum", {"VALUE": value}, sequence=SequenceControl(42, end=True))
    """

    id: Union[int, str]
    start: bool = False
    end: bool = False

    def keywords(self) -> Dict[str, Any]:
        """tritonclient's ``infer`` keywords for these controls."""
        return {"sequence_id": self.id, "sequence_start": self.start, "sequence_end": self.end}


class RequestOptions(TypedDict, total=False):
    """The keyword options of :meth:`InferClient.infer` (those of
    :meth:`InferClient.infer_with_parameters`)."""

    signature: Optional[ModelSignature]
    parameters: Optional[Mapping[str, Any]]
    sequence: Optional[SequenceControl]
    version: str


class InferClient:
    """A tritonclient (HTTP or gRPC) with the few calls the CLI needs.

    Example::

        client = InferClient("localhost:8001")
        sig = client.signature("add_sub")
        outs = client.infer("add_sub", {"INPUT0": np.ones(4, np.float32), ...})
    """

    def __init__(
        self,
        url: str = "localhost:8001",
        protocol: Optional[WireProtocol] = None,
        *,
        timeout: float = 60.0,
    ) -> None:
        self.endpoint = parse_endpoint(url, protocol)
        self.timeout = timeout
        name = f"tritonclient.{self.endpoint.protocol}"
        require(name, extra="client", feature=f"InferClient ({self.endpoint.protocol})")
        module = importlib.import_module(name)
        self._module: Any = module
        if self.endpoint.protocol == "grpc":
            self._client: Any = module.InferenceServerClient(
                url=self.endpoint.address, ssl=self.endpoint.ssl
            )
        else:
            self._client = module.InferenceServerClient(
                url=self.endpoint.address,
                ssl=self.endpoint.ssl,
                connection_timeout=timeout,
                network_timeout=timeout,
            )

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from tritonclient.utils import InferenceServerException

        try:
            return fn(*args, **kwargs)
        except InferenceServerException as exc:
            raise request_error(exc) from exc
        except OSError as exc:
            raise ServerError(
                f"{what}: cannot reach the server at {self.endpoint.address} "
                f"({self.endpoint.protocol}): {exc}. Is it running (tritonpy serve REPO)? Is "
                "the port the right one for the protocol (HTTP 8000, gRPC 8001 by default)?"
            ) from exc

    def model_config(self, model: str, version: str = "") -> Dict[str, Any]:
        """The model's configuration as the server completed it (JSON form); ``version``: of
        that version (default: the one the server's version policy picks)."""
        what = f"model {model!r}" + (f" version {version}" if version else "")
        if self.endpoint.protocol == "grpc":
            reply = self._call(
                what, self._client.get_model_config, model, model_version=version, as_json=True
            )
            config: Dict[str, Any] = reply.get("config", reply)
        else:
            config = self._call(what, self._client.get_model_config, model, model_version=version)
        return config

    def signature(self, model: str) -> ModelSignature:
        """The model's configuration as a :class:`ModelSignature`."""
        config = self.model_config(model)
        try:
            return ModelSignature.from_config(config)
        except (DeclarationError, KeyError, ValueError) as exc:
            raise ServerError(f"model {model!r}: unreadable configuration: {exc}") from exc

    def infer(
        self,
        model: str,
        inputs: Mapping[str, NDArray[Any]],
        outputs: Optional[Sequence[str]] = None,
        **options: Unpack[RequestOptions],
    ) -> List[OutputTensor]:
        """Send one request; return the outputs in the order of ``outputs`` (default: the
        model's declared outputs). ``parameters``: the request parameters (``{str: bool |
        int | str}``), which a model's ``infer(parameters=...)`` receives; ``signature``: the
        model's, when known (else read from the server once); ``sequence``: a
        :class:`SequenceControl` (correlation id, START/END) for a sequence model;
        ``version``: the model version to ask (default: the one the server's version policy
        picks). An error response raises :class:`tritonpy.TritonRequestError`."""
        return self.infer_with_parameters(model, inputs, outputs, **options)[0]

    def infer_with_parameters(
        self,
        model: str,
        inputs: Mapping[str, NDArray[Any]],
        outputs: Optional[Sequence[str]] = None,
        *,
        signature: Optional[ModelSignature] = None,
        parameters: Optional[Mapping[str, Any]] = None,
        sequence: Optional[SequenceControl] = None,
        version: str = "",
    ) -> Tuple[List[OutputTensor], Dict[str, Any]]:
        """:meth:`infer`, also returning the response parameters (``{}`` when it has none).
        ``sequence``: the correlation id and START/END flags of a request to a sequence model.

        Example::

            outs, params = client.infer_with_parameters("m", {"X": x}, parameters={"k": 1})
        """
        sig = signature or self.signature(model)
        wanted = list(outputs) if outputs else list(sig.outputs)
        request_inputs = []
        for name, array in inputs.items():
            spec = sig.inputs.get(name)
            datatype = spec.datatype if spec else ("BYTES" if array.dtype == np.object_ else "")
            if not datatype:
                raise ServerError(
                    f"model {model!r} has no input {name!r}; its inputs are "
                    f"{', '.join(sig.inputs) or 'none'}."
                )
            tensor = self._module.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            request_inputs.append(tensor)
        requested = [self._module.InferRequestedOutput(name) for name in wanted]
        result = self._call(
            f"model {model!r}",
            self._client.infer,
            model,
            request_inputs,
            outputs=requested,
            model_version=version,
            parameters=dict(parameters) if parameters else None,
            **(sequence.keywords() if sequence is not None else {}),
            **({"client_timeout": self.timeout} if self.endpoint.protocol == "grpc" else {}),
        )
        found: List[OutputTensor] = []
        for name in wanted:
            array = result.as_numpy(name)
            if array is None:
                continue
            meta = result.get_output(name)
            datatype = meta["datatype"] if isinstance(meta, dict) else meta.datatype
            found.append(OutputTensor(name, str(datatype), array))
        return found, self._response_parameters(result)

    def _response_parameters(self, result: Any) -> Dict[str, Any]:
        response = result.get_response()
        if isinstance(response, dict):  # HTTP: the JSON body
            return dict(response.get("parameters") or {})
        found: Dict[str, Any] = {}
        for key, value in response.parameters.items():
            kind = value.WhichOneof("parameter_choice")
            found[key] = getattr(value, kind) if kind else None
        return found

    def close(self) -> None:
        self._client.close()


def infer_once(
    model: str,
    values: Mapping[str, str],
    *,
    url: str = "localhost:8001",
    protocol: Optional[WireProtocol] = None,
    outputs: Optional[Sequence[str]] = None,
    timeout: float = 60.0,
) -> List[OutputTensor]:
    """Send one request built from command-line strings (see :func:`parse_input_value`).

    Example::

        infer_once("echo_text", {"TEXT": "hello"}, url="http://127.0.0.1:8000")
    """
    client = InferClient(url, protocol, timeout=timeout)
    try:
        sig = client.signature(model)
        arrays = request_arrays(sig, values, outputs)
        return client.infer(model, arrays, outputs, signature=sig)
    finally:
        client.close()
