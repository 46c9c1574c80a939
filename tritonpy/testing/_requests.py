"""Requests as the harness handles them: client-side conversion of inputs and outputs (what a
client library sends and receives), the server-side validation that rejects a request with
INVALID_ARG before the model sees it, and the pb_utils request built from what passes."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import json
from typing import (
    Any,
    Collection,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
)

import numpy as np

from .._runtime.codecs.base import shape_matches
from .._runtime.dtypes import DTYPES, cast_exactly, dtype_of_numpy, preview_values
from .._runtime.errors import TritonRequestError
from . import fake_pb_utils as pb
from ._config import CONFIG_TO_WIRE
from ._errors import HarnessError
from ._hash_order import server_input_order
from ._sequences import SequenceRules

NDArray = Any  # numpy arrays (kept loose: the harness runs on numpy 1.21+)


def _wire_dtype(array: NDArray) -> str:
    found = dtype_of_numpy(array.dtype)
    if found is None:
        raise HarnessError(f"numpy dtype {array.dtype} has no Triton data type")
    return found.name


def _shape_str(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def to_client_array(value: Any, name: str, declared: Optional[str] = None) -> NDArray:
    """Convert a value the way a client library would before sending it.

    numpy arrays are sent as they are (a wrong dtype is the server's INVALID_ARG, as with a
    real client). Python values (lists, tuples, scalars) carry no Triton data type, so they
    are cast to ``declared``, the input's wire data type (``"FP32"``), as a client does when
    it is told the input's datatype: ``[[1, 2]]`` for an FP32 input is sent as float32, lists
    of ``str``/``bytes`` for a BYTES input as an object array.
    """
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, (bytes, str)):
        array = np.array([value], dtype=np.object_)
    elif isinstance(value, (list, tuple)):
        array = np.array(value)
        if array.dtype.kind in ("U", "S") or (declared == "BYTES" and array.size == 0):
            # built again as objects: an "S" array would drop trailing NUL bytes
            array = np.array(value, dtype=np.object_)
        else:
            array = _cast_to_declared(array, name, declared)
    else:
        array = _cast_to_declared(np.asarray(value), name, declared)
    if array.dtype.kind == "U":
        array = array.astype(np.object_)
    if array.dtype.kind == "O":
        flat = [v.encode("utf-8") if isinstance(v, str) else v for v in array.reshape(-1).tolist()]
        for v in flat:
            if not isinstance(v, bytes):
                raise HarnessError(
                    f"input '{name}': BYTES elements must be bytes or str, got {type(v).__name__}"
                )
        converted = np.empty(len(flat), dtype=np.object_)
        converted[:] = flat
        array = converted.reshape(array.shape)
    elif array.dtype.kind == "S":
        converted = np.empty(array.size, dtype=np.object_)
        converted[:] = list(array.reshape(-1).tolist())
        array = converted.reshape(array.shape)
    # np.ascontiguousarray would turn a 0-d array into a 1-d one
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def _cast_to_declared(array: NDArray, name: str, declared: Optional[str]) -> NDArray:
    """A numeric array built from Python values, cast to the input's declared numeric type;
    a cast that would change a value (2.5 to INT32, -1 to UINT8) is refused."""
    dtype = DTYPES.get(declared or "")
    if dtype is None or dtype.numpy is None or dtype.is_bytes or array.dtype.kind not in "biuf":
        return array  # nothing to cast to, or not numbers: the server's checks decide
    if array.dtype == dtype.numpy:
        return array
    cast = cast_exactly(array, dtype.numpy)
    if cast is not None:
        return cast
    wanted = f"{dtype.name} ({dtype.numpy})"
    raise HarnessError(
        f"input '{name}': the values {preview_values(array)} do not fit the declared data type "
        f"{wanted}; send values that do, or pass a numpy array of the dtype you mean"
    )


def client_view(array: NDArray) -> NDArray:
    """What a client receives for an output tensor."""
    if array.dtype.kind in ("O", "S"):
        flat = array.reshape(-1).tolist()
        out = np.empty(len(flat), dtype=np.object_)
        out[:] = [v if type(v) is bytes else str(v).encode("utf-8") for v in flat]
        return out.reshape(array.shape)
    return np.array(array, copy=True)


def validate_request(
    config: Dict[str, Any], name: str, arrays: Dict[str, NDArray], request_id: str
) -> None:
    """Reject a request the way tritonserver does before the model sees it."""
    prefix = f"[request id: {request_id or '<id_unknown>'}] "
    inputs: Dict[str, Dict[str, Any]] = {io["name"]: io for io in config.get("input", [])}
    _check_input_names(inputs, list(arrays), name, prefix)
    mbs = int(config.get("max_batch_size", 0))
    batch_size: Optional[int] = None
    # in the order the server walks its map of inputs: with several wrong, it names the first
    for input_name in server_input_order(arrays):
        array = arrays[input_name]
        io = inputs.get(input_name)
        if io is None:
            raise TritonRequestError(
                "INVALID_ARG",
                f"unexpected inference input '{input_name}' for model '{name}'",
            )
        expected_dtype = CONFIG_TO_WIRE.get(io["data_type"], io["data_type"])
        got_dtype = _wire_dtype(array)
        if got_dtype != expected_dtype:
            raise TritonRequestError(
                "INVALID_ARG",
                f"{prefix}inference input '{input_name}' data-type is '{got_dtype}', but "
                f"model '{name}' expects '{expected_dtype}'",
            )
        where = f"for model '{name}'"
        batch_size, item_shape = _batch_and_item(array, mbs, batch_size, input_name, name, prefix)
        dims = [int(d) for d in io["dims"]]
        if not shape_matches(item_shape, dims):
            raise _shape_error(prefix, input_name, where, mbs, dims, array.shape)
        if mbs > 0 and batch_size == 0 and got_dtype != "BYTES":
            row = int(np.prod([max(d, 0) for d in item_shape])) * array.dtype.itemsize
            raise TritonRequestError(
                "INVALID_ARG",
                f"{prefix}input byte size mismatch for input '{input_name}' {where}. "
                f"Expected {row}, got 0",
            )


def _check_input_names(
    inputs: Dict[str, Dict[str, Any]], given: List[str], name: str, prefix: str
) -> None:
    """The server's refusal of a request with too few or too many inputs."""
    required = [n for n, io in inputs.items() if not io.get("optional", False)]
    missing = [n for n in required if n not in given]
    unknown = [n for n in given if n not in inputs]
    if not (len(given) > len(inputs) or len(given) < len(required) or (missing and not unknown)):
        return
    # The server lists the inputs from a hash map, in reverse order of arrival here.
    got = "[" + ",".join(f"'{n}'" for n in reversed(given)) + "]"
    missing_txt = ("[" + ",".join(f"'{n}'" for n in missing) + "]") if missing else "]"
    if len(inputs) == len(required):
        head = f"expected {len(inputs)} inputs but got {len(given)} inputs"
    else:
        head = (
            f"expected number of inputs between {len(required)} and {len(inputs)} but "
            f"got {len(given)} inputs"
        )
    raise TritonRequestError(
        "INVALID_ARG",
        f"{prefix}{head} for model '{name}'. Got input(s) {got}, but missing required "
        f"input(s) {missing_txt}. Please provide all required input(s).",
    )


def _batch_and_item(
    array: NDArray,
    mbs: int,
    batch_size: Optional[int],
    input_name: str,
    name: str,
    prefix: str,
) -> Tuple[Optional[int], List[int]]:
    """(the request's batch size, this input's shape without it); the server's refusal of
    a missing, too large or disagreeing batch dimension."""
    shape = [int(d) for d in array.shape]
    if mbs == 0:
        return batch_size, shape
    if not shape:
        raise TritonRequestError(
            "INVALID_ARG",
            f"{prefix}input '{input_name}' has no shape but model requires batch "
            f"dimension for '{name}'",
        )
    if batch_size is None:
        if shape[0] > mbs:
            raise TritonRequestError(
                "INVALID_ARG",
                f"{prefix}inference request batch-size must be <= {mbs} for '{name}'",
            )
    elif shape[0] != batch_size:
        raise TritonRequestError(
            "INVALID_ARG",
            f"{prefix}input '{input_name}' batch size does not match other inputs for '{name}'",
        )
    return shape[0], shape[1:]


def _shape_error(
    prefix: str, input_name: str, where: str, mbs: int, dims: List[int], shape: Sequence[int]
) -> TritonRequestError:
    expected = ([-1] if mbs > 0 else []) + dims
    message = (
        f"{prefix}unexpected shape for input '{input_name}' {where}. "
        f"Expected {_shape_str(expected)}, got {_shape_str(shape)}. "
    )
    if mbs > 0:
        message += (
            "NOTE: Setting a non-zero max_batch_size in the model config requires a "
            "batch dimension to be prepended to each input shape. If you want to "
            "specify the full shape including the batch dim in your input dims "
            "config, try setting max_batch_size to zero. See the model "
            "configuration docs for more info on max_batch_size."
        )
    return TritonRequestError("INVALID_ARG", message)


def check_requested_outputs(
    config: Dict[str, Any], name: str, requested_outputs: Optional[Iterable[str]]
) -> List[str]:
    """The output names a request asks for (all declared ones when it names none); an unknown
    name is rejected as the server does."""
    declared = [o["name"] for o in config.get("output", [])]
    if requested_outputs is None:
        return declared
    names = list(requested_outputs)
    for out in names:
        if declared and out not in declared:
            raise TritonRequestError(
                "INVALID_ARG", f"unexpected inference output '{out}' for model '{name}'"
            )
    return names


class RequestedModel(Protocol):
    """What a request is built for (a ModelHarness): its name, version and configuration,
    whether it is decoupled, and its sequence batcher's rules (None without one)."""

    name: str
    instance_name: str
    version: int
    config: Dict[str, Any]
    decoupled: bool
    sequence_rules: Optional[SequenceRules]


def build_request(
    model: RequestedModel,
    inputs: Mapping[str, Any],
    requested_outputs: Optional[Iterable[str]],
    parameters: Optional[Dict[str, Any]],
    request_id: str,
    correlation_id: Union[int, str] = 0,
    flags: int = 0,
    busy: Collection[int] = (),
) -> pb.InferenceRequest:
    """The pb_utils request the server would hand ``model``'s ``execute`` for a client's
    ``inputs``, after the server's checks (TritonRequestError for what it refuses) and, for
    a sequence model, the sequence batcher's (with the control tensors it adds; ``busy``:
    the sequence slots of requests admitted with it, not yet executed)."""
    declared = {
        io["name"]: CONFIG_TO_WIRE.get(io.get("data_type", ""))
        for io in model.config.get("input", [])
    }
    arrays = {n: to_client_array(v, n, declared.get(n)) for n, v in inputs.items()}
    validate_request(model.config, model.name, arrays, request_id)
    requested = check_requested_outputs(model.config, model.name, requested_outputs)
    rules, slot = model.sequence_rules, None
    if rules is not None:  # the sequence batcher's checks and control tensors
        batched = int(model.config.get("max_batch_size", 0)) > 0
        batch_size = _batch_size(arrays) if batched else 0
        admitted = rules.admit(
            model.name, correlation_id, flags, batch_size=batch_size, batched=batched, busy=busy
        )
        correlation_id, flags, slot = admitted.correlation_id, admitted.flags, admitted.slot
        merged = {**arrays, **admitted.tensors}
        arrays = {n: merged[n] for n in server_input_order(merged)}
    request = new_request(model, arrays, requested, request_id, correlation_id, flags, parameters)
    if rules is not None and slot is not None:
        rules.slot_of[request] = slot
    return request


def _batch_size(arrays: Mapping[str, NDArray]) -> int:
    """A batching model's request batch size (validated: every input agrees)."""
    for array in arrays.values():
        return int(array.shape[0]) if array.ndim else 0
    return 0


def new_request(
    model: RequestedModel,
    arrays: Mapping[str, NDArray],
    requested: List[str],
    request_id: str,
    correlation_id: Union[int, str],
    flags: int,
    parameters: Optional[Dict[str, Any]],
) -> pb.InferenceRequest:
    """A pb_utils request of ``arrays`` (already checked) for ``model``."""
    params_json = json.dumps(parameters or {}, separators=(",", ":"))
    request = pb.InferenceRequest(
        request_id=request_id,
        correlation_id=correlation_id,
        inputs=[pb.Tensor(n, a) for n, a in arrays.items()],
        requested_output_names=requested,
        model_name=model.name,
        model_version=model.version,
        flags=flags,
        parameters=params_json,
    )
    request.set_decoupled(model.decoupled)
    return request
