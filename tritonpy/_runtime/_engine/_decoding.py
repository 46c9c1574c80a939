"""How the engine reads one request: its inputs decoded by their codecs, rows counted,
absent optional inputs filled in, the key that says which requests may merge, and the values
``infer`` gets for a request served alone.

The usual unbatched request (every declared input there once) takes one pass over its tensors;
everything else goes through the general path, which also produces the errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Hashable, List, Optional, Sequence, Tuple

from .._declarations import PARAMETERS_ARGUMENT
from ..codecs.base import Codec
from ..errors import InputError
from ._decoded import Decoded, request_parameters

if TYPE_CHECKING:
    from .engine import Engine

#: the group key of an optional input a request left out (its value is None)
_ABSENT = "<absent>"


def decode(engine: Engine, index: int, request: Any, keyed: bool = True) -> Decoded:
    """One request's inputs decoded (InputError for a bad one); ``keyed``: compute the
    key that says which requests may merge (not needed for a request served alone)."""
    inputs = request.inputs()
    decoded = engine.decode_present(inputs)
    if decoded is None:
        decoded = engine.decode_rows({tensor.name(): tensor for tensor in inputs})
    values, rows = decoded
    key: Hashable = ()
    if keyed and engine.merge and engine.key_inputs:
        # requests merge only when every input has the same group key (ragged shapes,
        # presence of an optional input without default)
        key = tuple(
            _ABSENT if values[name] is None else codec.group_key(values[name])
            for name, codec in engine.key_inputs
        )
    requested = engine.requested_of(request) if engine.may_request_fewer else None
    parameters = request_parameters(request) if engine.wants_parameters else None
    return Decoded(index, values, rows, requested, key, parameters)


def requested_of(engine: Engine, request: Any) -> Optional[FrozenSet[str]]:
    """The outputs a request asked for; None for every output (the usual case)."""
    names = request.requested_output_names()
    if names and len(names) < len(engine.output_plan):
        return frozenset(names)
    return None


def decode_present(engine: Engine, inputs: Sequence[Any]) -> Optional[Tuple[Dict[str, Any], int]]:
    """The usual request, every declared input there once (with the same number of rows),
    decoded in one pass over its tensors: (values, rows); None for anything else, which
    the general path decides (and words the errors of)."""
    entries = engine.input_entries
    if len(inputs) != len(entries):
        return None
    batched = engine.batched
    values: Dict[str, Any] = {}
    rows = -1
    for tensor in inputs:
        name = tensor.name()
        entry = entries.get(name)
        if entry is None or name in values:
            return None
        codec, plain = entry
        if plain is None:
            value = codec.decode(name, tensor, batched)
        else:  # a plain Tensor: what its decode() checks, without the call
            value = tensor.as_numpy()
            if not plain.fits(value, batched):
                value = codec.decode(name, tensor, batched)  # raises, saying what is wrong
        values[name] = value
        if batched:
            count = len(value) if plain is not None else codec.rows(value)
            if rows != count and rows != -1:
                return None
            rows = count
    return values, max(rows, 0)


def decode_rows(engine: Engine, tensors: Dict[str, Any]) -> Tuple[Dict[str, Any], int]:
    """Decode a request's inputs in the general case: (values, rows). Counts and checks
    rows, fills in absent optional inputs."""
    batched = engine.batched
    values: Dict[str, Any] = {}
    rows = -1
    absent: Optional[List[Tuple[str, Codec]]] = None
    for name, codec in engine.input_plan:
        tensor = tensors.get(name)
        if tensor is None:
            if not codec.optional:
                raise InputError(
                    f"input {name!r} is required but missing from the request; send it, "
                    f"or declare it with optional=True",
                    input_name=name,
                )
            absent = [*(absent or ()), (name, codec)]
            continue
        value = codec.decode(name, tensor, batched)
        if batched:
            count = codec.rows(value)
            if rows == -1:
                rows = count
            elif count != rows:
                first = next(iter(values))
                raise InputError(
                    f"inputs disagree on the batch size: {first!r} has {rows} rows, "
                    f"{name!r} has {count}; send the same number of rows for every input",
                    input_name=name,
                )
        values[name] = value
    if absent:
        for name, codec in absent:
            values[name] = codec.missing(max(rows, 1) if batched else None)
    return values, max(rows, 0)


def one_values(engine: Engine, item: Decoded) -> Dict[str, Any]:
    """The values ``infer`` gets for one request alone."""
    values = item.values
    if engine.batched:
        # the same types as a merged call (e.g. Padded for ragged="pad")
        if engine.merged_alone:
            values = dict(values)
            for name, codec in engine.merged_alone:
                if values[name] is not None:
                    values[name] = codec.merge([values[name]])
        if engine.builtin is not None:
            engine.builtin.batch_rows(item.rows)
    if engine.wants_parameters:
        # merged rows get one dict per row, a request alone its dict
        values = {
            **values,
            PARAMETERS_ARGUMENT: [item.parameters] * item.rows if engine.merge else item.parameters,
        }
    return values
