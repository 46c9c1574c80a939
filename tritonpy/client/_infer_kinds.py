"""``tritonpy infer`` for every kind of model: one request built from command-line strings, sent
the way the model's kind needs, its answer as a sequence of events the command prints as they
come.

- a plain model: one request, one :class:`InferResponse`;
- a decoupled model (``model_transaction_policy { decoupled: true }``, an ensemble over one
  included): a stream (gRPC bidirectional, or HTTP ``generate_stream``), one
  :class:`InferResponse` per response as it arrives;
- a sequence model (``sequence_batching``, an ensemble over one included): the request carries
  ``sequence`` (a :class:`~tritonpy.client.SequenceControl`); without one, a
  one-request sequence with a fresh correlation id (START and END), announced by an
  :class:`InferNote`.

Every run ends with an :class:`InferEnd` (how many responses, whether a stream ended with its
final flag); an error response raises :class:`~tritonpy.TritonRequestError` after the
responses that came before it.

Example::

    for event in infer_events("square", {"IN": "[3]"}, url="grpc://localhost:8001"):
        if isinstance(event, InferResponse):
            print(event.index, [format_output(o) for o in event.outputs])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from .._tooling.errors import ServerError
from ._infer import InferClient, SequenceControl
from ._model_kind import ModelKind, configs_reader, fresh_sequence_id, model_kind
from ._signature import ModelSignature, OutputTensor
from ._streaming import open_stream
from ._values import request_arrays
from ._wire import WireProtocol


@dataclass(frozen=True)
class SequenceOptions:
    """``--sequence-id`` (None: none given), ``--sequence-start``, ``--sequence-end``."""

    id: Optional[Union[int, str]] = None
    start: bool = False
    end: bool = False

    @property
    def given(self) -> bool:
        return self.id is not None or self.start or self.end


@dataclass(frozen=True)
class InferNote:
    """Something the command should tell the user before the answer (on stderr)."""

    text: str


@dataclass(frozen=True)
class InferResponse:
    """One response: ``index`` 0, 1, ... and its ``outputs``; ``streamed`` for a stream's."""

    index: int
    outputs: List[OutputTensor]
    streamed: bool = False


@dataclass(frozen=True)
class InferEnd:
    """The end of a run: ``count`` responses, ``streamed`` when it was a stream, ``final``
    whether that stream ended with its final flag, ``sequence`` the controls sent."""

    count: int
    streamed: bool
    final: bool
    sequence: Optional[SequenceControl]


InferEvent = Union[InferNote, InferResponse, InferEnd]


def sequence_control(
    model: str, kind: ModelKind, options: SequenceOptions
) -> Optional[SequenceControl]:
    """The controls a request to ``model`` carries: ``options`` on a sequence model (a fresh
    id with START and END when none is given), None on another one; a refusal
    (:class:`ServerError`) for options that do not fit the model.

    >>> sequence_control("m", ModelKind(), SequenceOptions()) is None
    True
    """
    if not kind.sequence:
        if options.given:
            raise ServerError(
                f"model {model!r} is no sequence model (its configuration has no "
                "sequence_batching, nor a member's): drop --sequence-id, --sequence-start and "
                "--sequence-end."
            )
        return None
    if options.id is None:
        if options.start or options.end:
            raise ServerError(
                f"model {model!r}: --sequence-start and --sequence-end need --sequence-id ID "
                "(the correlation id of the sequence the request belongs to)."
            )
        return SequenceControl(fresh_sequence_id(kind), start=True, end=True)
    if options.id in (0, ""):
        raise ServerError(
            f"model {model!r}: --sequence-id {options.id!r}: Triton needs a non-zero number or "
            "a non-empty string."
        )
    return SequenceControl(options.id, start=options.start, end=options.end)


def _note(model: str, kind: ModelKind, control: SequenceControl) -> InferNote:
    return InferNote(
        f"model {model!r} is a sequence model ({kind.describe()}): sent as a one-request "
        f"sequence, correlation id {control.id!r} with START and END; drive a sequence "
        "yourself with --sequence-id ID and --sequence-start (first request) / --sequence-end "
        "(last)."
    )


def infer_events(
    model: str,
    values: Mapping[str, str],
    *,
    url: str = "localhost:8001",
    protocol: Optional[WireProtocol] = None,
    outputs: Optional[Sequence[str]] = None,
    timeout: float = 60.0,
    sequence: SequenceOptions = SequenceOptions(),
    version: str = "",
) -> Iterator[InferEvent]:
    """Send one request to ``model`` built from ``values`` (``{input: command-line string}``,
    see :func:`~tritonpy.client.parse_input_value`) and yield what happens (see the
    module documentation). ``url``: a bare ``host:port`` is gRPC unless ``protocol`` says
    otherwise. ``version``: the model version to ask (default: the one the server's version
    policy picks). Nothing is sent until the iteration starts.

    Example::

        events = list(infer_events("seq_sum", {"VALUE": "[5]"},
                                   sequence=SequenceOptions(42, start=True)))
    """
    client = InferClient(url, protocol, timeout=timeout)
    try:
        config = client.model_config(model, version)
        kind = model_kind(config, configs_reader(client.model_config))
        sig = _signature(model, config)
        arrays = request_arrays(sig, values, outputs)
        control = sequence_control(model, kind, sequence)
        if control is not None and not sequence.given:
            yield _note(model, kind, control)
        if not kind.decoupled:
            found = client.infer(
                model, arrays, outputs, signature=sig, sequence=control, version=version
            )
            yield InferResponse(0, found)
            yield InferEnd(1, streamed=False, final=False, sequence=control)
            return
    finally:
        client.close()
    yield from _streamed(client, sig, arrays, outputs, control, version)


def _signature(model: str, config: Dict[str, Any]) -> ModelSignature:
    try:
        return ModelSignature.from_config(config)
    except (KeyError, ValueError) as exc:
        raise ServerError(f"model {model!r}: unreadable configuration: {exc}") from exc


def _streamed(
    client: InferClient,
    sig: ModelSignature,
    arrays: Mapping[str, Any],
    outputs: Optional[Sequence[str]],
    control: Optional[SequenceControl],
    version: str,
) -> Iterator[InferEvent]:
    endpoint = client.endpoint
    stream = open_stream(
        f"{endpoint.protocol}{'s' if endpoint.ssl else ''}://{endpoint.address}",
        sig.name,
        arrays,
        outputs=outputs,
        sequence=control,
        datatypes={n: spec.datatype for n, spec in sig.inputs.items()},
        timeout=client.timeout,
        version=version,
    )
    wanted = list(outputs) if outputs else list(sig.outputs)
    for part in stream:
        found = [
            OutputTensor(name, _datatype(sig, name), part.outputs[name])
            for name in wanted
            if name in part.outputs
        ]
        yield InferResponse(part.index, found, streamed=True)
    if stream.result.error is not None:
        raise stream.result.error
    yield InferEnd(stream.count, streamed=True, final=stream.result.final, sequence=control)


def _datatype(sig: ModelSignature, name: str) -> str:
    spec = sig.outputs.get(name)
    return spec.datatype if spec is not None else ""
