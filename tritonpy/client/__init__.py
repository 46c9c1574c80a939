"""Talk to a running Triton server as a client: one request (:class:`InferClient`, over
tritonclient's gRPC or HTTP), a decoupled model's stream (:func:`stream_infer`,
:func:`open_stream`), what kind of model a configuration describes and how to reach it
(:func:`model_kind`: plain, decoupled, sequence), a request built from ``NAME=VALUE`` strings
(:func:`request_arrays`, :func:`infer_once`, :func:`infer_events`), and whether the server and
its models are ready (:func:`health_ready`, :func:`repository_index`, stdlib HTTP only).

``tritonpy infer``, ``tritonpy probe`` and ``tritonpy perf`` talk to the server through this
package, and :class:`tritonpy.server.TritonServer` waits for readiness with it.

Example::

    import numpy as np
    from tritonpy.client import InferClient, stream_infer

    client = InferClient("localhost:8001")
    outputs = client.infer("add_sub", {"INPUT0": np.ones(4, np.float32),
                                       "INPUT1": np.ones(4, np.float32)})
    result = stream_infer("localhost:8001", "tokens", {"TEXT": np.array([b"hi"], object)})

The names in ``__all__`` are the public API. The other names imported here are this package's
face for tritonpy's own tooling packages (they meet only at each other's ``__init__``); they
may change without notice.
"""

from __future__ import annotations

from .._runtime._public_names import publish as _publish
from ._infer import InferClient, RequestOptions, SequenceControl, infer_once
from ._infer_kinds import InferEnd as InferEnd
from ._infer_kinds import InferEvent as InferEvent
from ._infer_kinds import InferNote as InferNote
from ._infer_kinds import InferResponse as InferResponse
from ._infer_kinds import SequenceOptions as SequenceOptions
from ._infer_kinds import infer_events as infer_events
from ._infer_kinds import sequence_control as sequence_control
from ._model_kind import ConfigReader as ConfigReader
from ._model_kind import IdChoice as IdChoice
from ._model_kind import Mode as Mode
from ._model_kind import ModelKind, model_kind
from ._model_kind import configs_reader as configs_reader
from ._model_kind import fresh_sequence_id as fresh_sequence_id
from ._model_kind import sequence_id_from_text as sequence_id_from_text
from ._readiness import ModelStatus, health_ready, repository_index
from ._readiness import model_inputs as model_inputs
from ._signature import ModelSignature, OutputTensor, TensorSpec, format_output
from ._streaming import UNKNOWN_CODE as UNKNOWN_CODE
from ._streaming import ResponseStream, StreamResponse, StreamResult, open_stream, stream_infer
from ._values import parse_input_value, request_arrays
from ._values import split_assignment as split_assignment
from ._wire import Endpoint, WireProtocol, parse_endpoint
from ._wire import request_error as request_error

__all__ = [
    "Endpoint",
    "InferClient",
    "ModelKind",
    "ModelSignature",
    "ModelStatus",
    "OutputTensor",
    "RequestOptions",
    "ResponseStream",
    "SequenceControl",
    "StreamResponse",
    "StreamResult",
    "TensorSpec",
    "WireProtocol",
    "format_output",
    "health_ready",
    "infer_once",
    "model_kind",
    "open_stream",
    "parse_endpoint",
    "parse_input_value",
    "repository_index",
    "request_arrays",
    "stream_infer",
]

_publish(__name__, globals())
