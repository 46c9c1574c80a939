"""What Triton's sequence batcher does to a request before a stateful model sees it.

A model whose configuration has ``sequence_batching`` gets each request of a sequence with
the control tensors its ``control_input`` entries name (``CONTROL_SEQUENCE_START``, ``_END``,
``_READY`` with their ``int32_false_true``/``fp32_false_true``/``bool_false_true`` values, and
``CONTROL_SEQUENCE_CORRID`` of its ``data_type``), and the server refuses a request without a
correlation id, or the first request of a sequence without the START flag, before any model
runs. Measured on tritonserver 24.10 (tests/integration/test_conformance_sequence.py): each
control is one element, shaped ``[1, 1]`` for a batching model and ``[1]`` otherwise; the
request's inputs follow the server's map order, the controls inserted after the client's.

Example::

    rules = SequenceRules.from_config(config)          # None without sequence_batching
    corrid, flags, tensors = rules.admit("seq_sum", 7, SEQUENCE_START, batched=True)
    tensors["START"]                                   # array([[1]], dtype=int32)
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from .._runtime.errors import TritonRequestError

#: request flags (a bitmask: a one-request sequence carries both)
SEQUENCE_START = 1
SEQUENCE_END = 2

CorrelationId = Union[int, str]

_FALSE_TRUE = {
    "int32_false_true": np.int32,
    "fp32_false_true": np.float32,
    "bool_false_true": np.bool_,
}
_CORRID_DTYPES = {
    "TYPE_UINT64": np.uint64,
    "TYPE_INT64": np.int64,
    "TYPE_UINT32": np.uint32,
    "TYPE_INT32": np.int32,
    "TYPE_STRING": np.object_,
}


@dataclass(frozen=True)
class _Control:
    """One control input: ``kind`` (``CONTROL_SEQUENCE_START`` ...) and, for the flags, the
    (false, true) values, for CORRID the numpy dtype."""

    name: str
    kind: str
    values: Tuple[Any, Any] = (0, 1)
    dtype: Any = np.int32


def _controls(batching: Mapping[str, Any]) -> List[_Control]:
    found: List[_Control] = []
    for entry in batching.get("control_input", []) or []:
        for control in entry.get("control", []) or []:
            # JSON leaves out an enum's first value: no "kind" is CONTROL_SEQUENCE_START
            kind = str(control.get("kind", "CONTROL_SEQUENCE_START"))
            if kind == "CONTROL_SEQUENCE_CORRID":
                corrid = _CORRID_DTYPES.get(str(control.get("data_type", "")), np.uint64)
                found.append(_Control(str(entry["name"]), kind, dtype=corrid))
                continue
            for key, dtype in _FALSE_TRUE.items():
                pair = control.get(key)
                if pair:
                    values = (pair[0], pair[1])
                    found.append(_Control(str(entry["name"]), kind, values, dtype))
    return found


class SequenceRules:
    """The sequence batcher's checks and control tensors for one model (see the module
    docstring); it remembers which sequences are open, as the server's slots do."""

    def __init__(self, controls: List[_Control], iterative: bool = False) -> None:
        self.controls = controls
        self.iterative = iterative
        self.open: Set[CorrelationId] = set()
        self._next_id = 1  # the iterative sequencer's own ids, as core's counter

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Optional[SequenceRules]:
        """The rules of a configuration with ``sequence_batching``, else None."""
        batching = config.get("sequence_batching")
        if batching is None:
            return None
        return cls(_controls(batching), bool(batching.get("iterative_sequence", False)))

    @property
    def control_names(self) -> List[str]:
        return [c.name for c in self.controls]

    def admit(
        self, model: str, correlation_id: CorrelationId, flags: int, *, batched: bool
    ) -> Tuple[CorrelationId, int, Dict[str, NDArray[Any]]]:
        """Check one request as the server does and return the correlation id and flags the
        model sees, and the control tensors; an END request closes its sequence. Raises
        :class:`TritonRequestError` (INVALID_ARG, the server's words) for a request the
        server refuses."""
        if correlation_id in (0, "") and self.iterative:
            # core's IterativeSequencer: a request outside a sequence starts its own, under
            # an id of the server's counter, its flags replaced by START
            correlation_id, flags = self._next_id, SEQUENCE_START
            self._next_id += 1
        if correlation_id in (0, ""):
            raise TritonRequestError(
                "INVALID_ARG",
                f"inference request to model '{model}' must specify a non-zero or non-empty "
                "correlation ID",
            )
        start = bool(flags & SEQUENCE_START)
        if not start and correlation_id not in self.open:
            raise TritonRequestError(
                "INVALID_ARG",
                f"inference request for sequence {correlation_id} to model '{model}' must "
                "specify the START flag on the first request of the sequence",
            )
        end = bool(flags & SEQUENCE_END)
        if end:
            self.open.discard(correlation_id)
        else:
            self.open.add(correlation_id)
        shape = (1, 1) if batched else (1,)
        tensors: Dict[str, NDArray[Any]] = {}
        for control in self.controls:
            if control.kind == "CONTROL_SEQUENCE_CORRID":
                tensors[control.name] = _corrid(control, correlation_id, shape)
                continue
            on = {
                "CONTROL_SEQUENCE_START": start,
                "CONTROL_SEQUENCE_END": end,
                "CONTROL_SEQUENCE_READY": True,
            }.get(control.kind, False)
            value = control.values[1] if on else control.values[0]
            tensors[control.name] = np.full(shape, value, dtype=control.dtype)
        return correlation_id, flags, tensors


def _corrid(
    control: _Control, correlation_id: CorrelationId, shape: Tuple[int, ...]
) -> NDArray[Any]:
    if control.dtype is np.object_:
        # release 24.10 pads a string CORRID to 128 bytes and then reads two elements from
        # it: every request to such a model fails before the model runs
        raise TritonRequestError(
            "INVALID_ARG",
            f"unexpected number of string elements 2 for inference input '{control.name}', "
            "expecting 1 (Triton 24.10 cannot pass a TYPE_STRING CORRID control to a Python "
            "model: drop the control and read request.correlation_id() instead)",
        )
    if isinstance(correlation_id, str):
        # measured on 24.10: a string id meets a numeric CORRID as the first bytes of its
        # serialised form (a 4-byte little-endian length, then the UTF-8 text), zero padded
        dtype = np.dtype(control.dtype)
        text = correlation_id.encode("utf-8")
        raw = (len(text).to_bytes(4, "little") + text + bytes(dtype.itemsize))[: dtype.itemsize]
        return np.full(shape, np.frombuffer(raw, dtype=dtype.newbyteorder("<"))[0], dtype=dtype)
    return np.full(shape, correlation_id, dtype=control.dtype)
