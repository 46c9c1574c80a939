"""What Triton's sequence batcher does to a request before a stateful model sees it.

A model whose configuration has ``sequence_batching`` gets each request of a sequence with
the control tensors its ``control_input`` entries name (``CONTROL_SEQUENCE_START``, ``_END``,
``_READY`` with their ``int32_false_true``/``fp32_false_true``/``bool_false_true`` values, and
``CONTROL_SEQUENCE_CORRID`` of its ``data_type``). The server's rules, in its order (release
24.10's ``SequenceBatchScheduler::Enqueue``), each measured in
tests/integration/test_conformance_sequence.py and test_conformance_qa_sequences.py:

- a request of batch size > 1 is refused (INVALID_ARG, "must specify batch-size 1");
- a request without a correlation id is refused, except with ``iterative_sequence``, where it
  starts a sequence of its own under an id of the server's counter;
- a sequence idle longer than ``max_sequence_idle_microseconds`` (default 1 s) is ended by the
  batcher (its slot freed; the model is not told), so its next request without START is
  refused as a request of an unknown sequence;
- the first request of a sequence must carry START; a START on an open sequence continues in
  its slot (the server logs a conflict); END frees the slot;
- a new sequence takes the lowest free slot of ``max(1, max_batch_size)`` slots per instance
  (``max_candidate_sequences`` for ``oldest``); with none free it waits in the backlog, which
  a synchronous harness cannot do: :class:`HarnessError` says so.

Each control is one element, shaped ``[1, 1]`` for a batching model and ``[1]`` otherwise;
the request's inputs follow the server's map order, the controls inserted after the client's.
Idle time is read from ``clock`` (the harness's :class:`~tritonpy.testing.ManualClock`).

Example::

    rules = SequenceRules.from_config(config)          # None without sequence_batching
    admitted = rules.admit("seq_sum", 7, SEQUENCE_START, batch_size=1, batched=True)
    admitted.tensors["START"]                          # array([[1]], dtype=int32)
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from .._runtime.errors import TritonRequestError
from ._errors import HarnessError

#: request flags (a bitmask: a one-request sequence carries both)
SEQUENCE_START = 1
SEQUENCE_END = 2
#: Triton's default max_sequence_idle_microseconds
DEFAULT_IDLE_US = 1_000_000

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


def normalize_sequence_batching(config: Dict[str, Any]) -> None:
    """Fill ``sequence_batching`` as the server's normalized configuration shows it (what
    ``args["model_config"]`` and the model-config endpoint give; measured, r24.10): the idle
    timeout (1 s when unset), every control's kind, value lists and data type, no state, the
    oldest strategy's preferred batch size ``[max_batch_size]``."""
    batching = config.get("sequence_batching")
    if batching is None:
        return
    if not int(batching.get("max_sequence_idle_microseconds", 0) or 0):
        batching["max_sequence_idle_microseconds"] = DEFAULT_IDLE_US
    for entry in batching.setdefault("control_input", []):
        for control in entry.setdefault("control", []):
            control.setdefault("kind", "CONTROL_SEQUENCE_START")
            for key in _FALSE_TRUE:
                control.setdefault(key, [])
            control.setdefault("data_type", "TYPE_INVALID")
    batching.setdefault("state", [])
    batching.setdefault("iterative_sequence", False)
    oldest = batching.get("oldest")
    if oldest is not None:
        oldest.setdefault("max_candidate_sequences", 0)
        if not oldest.get("preferred_batch_size"):
            oldest["preferred_batch_size"] = [int(config.get("max_batch_size", 0))]
        oldest.setdefault("max_queue_delay_microseconds", 0)
        oldest.setdefault("preserve_ordering", False)
    direct = batching.get("direct")
    if direct is not None:
        direct.setdefault("max_queue_delay_microseconds", 0)
        direct.setdefault("minimum_slot_utilization", 0.0)


def _instances(config: Mapping[str, Any]) -> int:
    """How many instances the server makes: each group's count, once per GPU it names."""
    total = 0
    for group in config.get("instance_group", []) or []:
        count = int(group.get("count", 1))
        gpus = group.get("gpus") or []
        total += count * len(gpus) if group.get("kind") == "KIND_GPU" and gpus else count
    return max(total, 1)


@dataclass(frozen=True)
class Layout:
    """The sequence batcher's shape for one model: its strategy, idle timeout and slots.

    ``slots_per_instance`` is ``max(1, max_batch_size)``, or the oldest strategy's
    ``max_candidate_sequences`` when set; ``batch`` the most requests one ``execute()`` gets
    (one per sequence)."""

    strategy: str
    idle_timeout_s: float
    slots_per_instance: int
    instances: int
    batch: int
    iterative: bool

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Layout:
        batching = config.get("sequence_batching") or {}
        strategy = "oldest" if "oldest" in batching else "direct"
        mbs = int(config.get("max_batch_size", 0))
        slots = max(1, mbs)
        if strategy == "oldest":
            candidates = int((batching.get("oldest") or {}).get("max_candidate_sequences", 0))
            slots = candidates if candidates > 0 else slots
        # JSON writes a uint64 as a string; 0 (or none) is Triton's default
        idle_us = int(batching.get("max_sequence_idle_microseconds", 0) or DEFAULT_IDLE_US)
        return cls(
            strategy,
            idle_us / 1e6,
            slots,
            _instances(config),
            max(1, mbs),
            bool(batching.get("iterative_sequence", False)),
        )

    @property
    def slots(self) -> int:
        return self.slots_per_instance * self.instances


class Backlogged(HarnessError):
    """A new sequence finds every slot held: the server would keep it in its backlog."""


@dataclass
class _Open:
    slot: int
    last_seen: float


@dataclass
class Admitted:
    """One request as the sequence batcher passes it on: the correlation id and flags the
    model sees, the control tensors, and the sequence slot it runs in."""

    correlation_id: CorrelationId
    flags: int
    tensors: Dict[str, NDArray[Any]]
    slot: int


@dataclass
class SequenceRules:
    """The sequence batcher's checks, slots and control tensors for one model (see the module
    docstring); it remembers which sequences are open, in which slot, and since when."""

    controls: List[_Control]
    layout: Layout
    #: seconds, as time.monotonic gives them; the harness sets its ManualClock
    clock: Callable[[], float] = time.monotonic
    #: the open sequences: their slot and when their last request came
    open: Dict[CorrelationId, _Open] = field(default_factory=dict)
    #: the sequences the idle timeout ended, oldest first
    timed_out: List[CorrelationId] = field(default_factory=list)
    #: the slot each request in flight was admitted to (the harness orders a batch by it)
    slot_of: weakref.WeakKeyDictionary[Any, int] = field(default_factory=weakref.WeakKeyDictionary)
    _next_id: int = field(default=1, init=False)  # the iterative sequencer's, as core's counter

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any], clock: Callable[[], float] = time.monotonic
    ) -> Optional[SequenceRules]:
        """The rules of a configuration with ``sequence_batching`` (idle time read from
        ``clock``), else None."""
        batching = config.get("sequence_batching")
        if batching is None:
            return None
        return cls(_controls(batching), Layout.from_config(config), clock)

    @property
    def iterative(self) -> bool:
        return self.layout.iterative

    @property
    def control_names(self) -> List[str]:
        return [c.name for c in self.controls]

    def reap(self) -> List[CorrelationId]:
        """End the sequences idle for the timeout or longer, as the batcher's reaper does;
        returns their ids."""
        now = self.clock()
        idle = [
            cid
            for cid, seq in self.open.items()
            if now - seq.last_seen >= self.layout.idle_timeout_s
        ]
        for cid in idle:
            del self.open[cid]
        self.timed_out.extend(idle)
        return idle

    def admit(
        self,
        model: str,
        correlation_id: CorrelationId,
        flags: int,
        *,
        batch_size: int,
        batched: bool,
        busy: Collection[int] = (),
    ) -> Admitted:
        """Check one request as the server does and return what the model gets; an END request
        frees its slot. Raises :class:`TritonRequestError` (INVALID_ARG, the server's words)
        for a request the server refuses, :class:`Backlogged` for one it would hold in the
        backlog (``busy``: slots taken by requests not yet executed, besides the open ones)."""
        if batch_size > 1:
            raise TritonRequestError(
                "INVALID_ARG",
                f"inference request to model '{model}' must specify batch-size 1 due to "
                "requirements of sequence batcher",
            )
        counter = self._next_id
        correlation_id, flags = self._identified(model, correlation_id, flags)
        self.reap()
        start, end = bool(flags & SEQUENCE_START), bool(flags & SEQUENCE_END)
        known = self.open.get(correlation_id)
        if not start and known is None:
            raise TritonRequestError(
                "INVALID_ARG",
                f"inference request for sequence {correlation_id} to model '{model}' must "
                "specify the START flag on the first request of the sequence",
            )
        try:
            slot = known.slot if known is not None else self._free_slot(model, correlation_id, busy)
        except Backlogged:
            self._next_id = counter  # the id is the server's only once the request runs
            raise
        if end:
            self.open.pop(correlation_id, None)
        else:
            self.open[correlation_id] = _Open(slot, self.clock())
        tensors = self.control_tensors(correlation_id, start, end, batched=batched)
        return Admitted(correlation_id, flags, tensors, slot)

    def _identified(
        self, model: str, correlation_id: CorrelationId, flags: int
    ) -> Tuple[CorrelationId, int]:
        if correlation_id not in (0, ""):
            return correlation_id, flags
        if self.iterative:
            # core's IterativeSequencer: a request outside a sequence starts its own, under
            # an id of the server's counter, its flags replaced by START
            assigned, self._next_id = self._next_id, self._next_id + 1
            return assigned, SEQUENCE_START
        raise TritonRequestError(
            "INVALID_ARG",
            f"inference request to model '{model}' must specify a non-zero or non-empty "
            "correlation ID",
        )

    def _free_slot(self, model: str, correlation_id: CorrelationId, busy: Collection[int]) -> int:
        taken = {seq.slot for seq in self.open.values()} | set(busy)
        for slot in range(self.layout.slots):
            if slot not in taken:
                return slot
        layout = self.layout
        holders = ", ".join(repr(cid) for cid in self.open)
        raise Backlogged(
            f"sequence {correlation_id!r} of model '{model}' would wait in the sequence "
            f"batcher's backlog: all {layout.slots} sequence slots ({layout.slots_per_instance} "
            f"per instance, {layout.strategy} strategy, {layout.instances} instance(s)) hold "
            f"open sequences ({holders}). Triton runs it once one of them ends: send END to "
            f"one, or let its idle timeout pass (harness.clock.advance("
            f"{layout.idle_timeout_s:g})); or give the model more slots (max_batch_size, "
            "max_candidate_sequences, instance count)"
        )

    def release(self, correlation_id: CorrelationId) -> None:
        """End a sequence without a request (an iterative sequence's released request)."""
        self.open.pop(correlation_id, None)

    def control_tensors(
        self,
        correlation_id: CorrelationId,
        start: bool,
        end: bool,
        *,
        batched: bool,
        ready: bool = True,
    ) -> Dict[str, NDArray[Any]]:
        """The control tensors of one request (a null request: not ready, CORRID 0)."""
        shape = (1, 1) if batched else (1,)
        tensors: Dict[str, NDArray[Any]] = {}
        for control in self.controls:
            if control.kind == "CONTROL_SEQUENCE_CORRID":
                tensors[control.name] = _corrid(control, correlation_id, shape)
                continue
            on = {
                "CONTROL_SEQUENCE_START": start,
                "CONTROL_SEQUENCE_END": end,
                "CONTROL_SEQUENCE_READY": ready,
            }.get(control.kind, False)
            value = control.values[1] if on else control.values[0]
            tensors[control.name] = np.full(shape, value, dtype=control.dtype)
        return tensors


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
    # the server keeps the low bytes of the 64-bit id (measured: 2**33 + 5 is 5 as UINT32,
    # 2**31 + 5 negative as INT32); numpy 2 refuses such a cast, so it is done by hand
    dtype = np.dtype(control.dtype)
    low = np.array([int(correlation_id) % (1 << (8 * dtype.itemsize))], f"<u{dtype.itemsize}")
    return np.full(shape, low.view(dtype.newbyteorder("<"))[0], dtype=dtype)
