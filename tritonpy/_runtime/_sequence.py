"""Stateful models: ``tp.Sequence`` (the declaration of Triton's sequence batcher) and
``tp.SequenceInfo`` (one sequence, as ``infer`` and the hooks see it).

A model whose class sets ``sequence = tp.Sequence(...)`` is served by Triton's sequence
batcher: every request belongs to a sequence named by its correlation id, and the first request
of a sequence carries the START flag, the last one END. tritonpy keeps a state per sequence
(what ``start_sequence`` returns), hands it to ``infer`` in its ``sequence`` argument, and
frees it at END or after ``idle_timeout_s`` without a request (Triton sends no idle callback,
so tritonpy evicts it itself at the next ``execute()``).

Example::

    class RunningSum(tp.Model):
        inputs = {"VALUE": tp.Tensor("INT32", [1])}
        outputs = {"SUM": tp.Tensor("INT32", [1])}
        max_batch_size = 8
        sequence = tp.Sequence(strategy="oldest", idle_timeout_s=60)

        def start_sequence(self, sequence):
            return {"sum": 0}

        def infer(self, VALUE, sequence):
            sequence.state["sum"] += int(VALUE.sum())
            return {"SUM": np.array([[sequence.state["sum"]]], np.int32)}

Runtime module: stdlib only (it runs inside Triton's stub, Python 3.8 and later).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Union

from .errors import DeclarationError

#: the request flags of a sequence (``request.flags()`` is a bitmask: a one-request sequence
#: carries both)
SEQUENCE_START = 1
SEQUENCE_END = 2
#: the name of infer's argument that receives the sequence (never an input)
SEQUENCE_ARGUMENT = "sequence"
#: the strategies of Triton's sequence batcher
STRATEGIES = ("direct", "oldest")
#: Triton's max_sequence_idle_microseconds when a configuration leaves it out (or 0)
DEFAULT_IDLE_MICROSECONDS = 1_000_000

#: a correlation id: a number, or a string (``request.correlation_id()`` gives either)
CorrelationId = Union[int, str]


@dataclass(frozen=True)
class Sequence:
    """The declaration of a stateful model (``sequence = tp.Sequence(...)`` on the class): how
    Triton's sequence batcher schedules its requests, written to config.pbtxt's
    ``sequence_batching`` by ``tritonpy config`` and checked at load time.

    * ``strategy``: ``"direct"`` (each sequence keeps a batch slot of its own; Triton's default)
      or ``"oldest"`` (requests of the oldest sequences are gathered into one ``execute()``;
      tritonpy still computes each request on its own, with its sequence's state);
    * ``idle_timeout_s``: a sequence without a request for this long is ended by the server,
      and its state freed by tritonpy (``max_sequence_idle_microseconds``; Triton's default
      is 1 s);
    * ``max_candidate_sequences`` (oldest): how many sequences the batcher keeps at once
      (None: Triton's default);
    * ``preserve_ordering`` (oldest): the responses of a decoupled model go out in the order
      of their requests;
    * ``iterative``: ``iterative_sequence`` (a generator ``infer`` runs one step per
      ``execute()``, its request rescheduled between the steps).

    Example::

        sequence = tp.Sequence(strategy="direct", idle_timeout_s=30)
    """

    strategy: str = "direct"
    idle_timeout_s: float = 1.0
    max_candidate_sequences: Optional[int] = None
    preserve_ordering: bool = False
    iterative: bool = False

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise DeclarationError(
                f"tp.Sequence(strategy={self.strategy!r}): expected 'direct' or 'oldest'"
            )
        timeout = self.idle_timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise DeclarationError(
                f"tp.Sequence(idle_timeout_s={timeout!r}): expected a number of seconds > 0 "
                f"(Triton's default is 1.0)"
            )
        if self.idle_microseconds < 1:
            raise DeclarationError(
                f"tp.Sequence(idle_timeout_s={timeout!r}): below one microsecond, the unit of "
                f"max_sequence_idle_microseconds; give at least 1e-6"
            )
        self._check_oldest_fields()

    def _check_oldest_fields(self) -> None:
        candidates = self.max_candidate_sequences
        if candidates is not None and (
            isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1
        ):
            raise DeclarationError(
                f"tp.Sequence(max_candidate_sequences={candidates!r}): expected an integer "
                f">= 1, or None for Triton's default"
            )
        if self.strategy == "direct" and (candidates is not None or self.preserve_ordering):
            raise DeclarationError(
                "tp.Sequence(strategy='direct'): max_candidate_sequences and "
                "preserve_ordering belong to the 'oldest' strategy; set strategy='oldest' or "
                "leave them out"
            )
        for name in ("preserve_ordering", "iterative"):
            if not isinstance(getattr(self, name), bool):
                raise DeclarationError(
                    f"tp.Sequence({name}={getattr(self, name)!r}): expected True or False"
                )

    @property
    def idle_microseconds(self) -> int:
        """``idle_timeout_s`` as config.pbtxt's ``max_sequence_idle_microseconds``."""
        return round(self.idle_timeout_s * 1_000_000)

    def config_entry(self) -> Dict[str, Any]:
        """``sequence_batching`` in the JSON form of Triton's ``ModelConfig``.

        >>> Sequence("oldest", 60, max_candidate_sequences=4).config_entry()
        {'oldest': {'max_candidate_sequences': 4}, 'max_sequence_idle_microseconds': 60000000}
        """
        strategy: Dict[str, Any] = {}
        if self.max_candidate_sequences is not None:
            strategy["max_candidate_sequences"] = self.max_candidate_sequences
        if self.preserve_ordering:
            strategy["preserve_ordering"] = True
        entry: Dict[str, Any] = {
            self.strategy: strategy,
            "max_sequence_idle_microseconds": self.idle_microseconds,
        }
        if self.iterative:
            entry["iterative_sequence"] = True
        return entry


def configured_strategy(batching: Mapping[str, Any]) -> str:
    """The strategy of a configuration's ``sequence_batching`` (direct when it names none,
    as Triton does)."""
    return "oldest" if "oldest" in batching else "direct"


def configured_idle_microseconds(batching: Mapping[str, Any]) -> int:
    """A configuration's ``max_sequence_idle_microseconds`` (Triton's 1 s when 0 or absent;
    the JSON form writes a uint64 as text)."""
    return int(batching.get("max_sequence_idle_microseconds", 0) or 0) or (
        DEFAULT_IDLE_MICROSECONDS
    )


def check_sequence_config(cls: type, config: Mapping[str, Any]) -> None:
    """Refuse a model configuration that does not schedule ``cls``'s sequences as declared
    (initialize time): no ``sequence_batching``, another strategy or idle timeout, or
    ``iterative_sequence`` set differently."""
    declared: Optional[Sequence] = getattr(cls, "sequence", None)
    if declared is None:
        return
    batching = config.get("sequence_batching")
    fix = (
        f"run 'tritonpy config MODEL_DIR' to write it, or write sequence_batching "
        f"{_pbtxt(declared)} in config.pbtxt (Triton's auto-complete cannot add it)"
    )
    if batching is None:
        raise DeclarationError(
            f"{cls.__name__} declares sequence = {declared!r}, but the model configuration "
            f"has no sequence_batching; {fix}"
        )
    found = {
        "strategy": configured_strategy(batching),
        "max_sequence_idle_microseconds": configured_idle_microseconds(batching),
        "iterative_sequence": bool(batching.get("iterative_sequence", False)),
    }
    wanted = {
        "strategy": declared.strategy,
        "max_sequence_idle_microseconds": declared.idle_microseconds,
        "iterative_sequence": declared.iterative,
    }
    for field, value in wanted.items():
        if found[field] != value:
            raise DeclarationError(
                f"{cls.__name__}: sequence_batching has {field} {found[field]!r} in the model "
                f"configuration but {value!r} from the declaration sequence = {declared!r}; "
                f"make them agree ({fix})"
            )


def _pbtxt(declared: Sequence) -> str:
    """The declaration's ``sequence_batching`` as config.pbtxt text, for messages."""
    entry = declared.config_entry()
    fields = "".join(f"{k}: {str(v).lower()} " for k, v in entry[declared.strategy].items())
    text = f"{{ {declared.strategy} {{ {fields}}} "
    text += f"max_sequence_idle_microseconds: {declared.idle_microseconds} "
    if declared.iterative:
        text += "iterative_sequence: true "
    return text + "}"


def check_sequence_declaration(
    cls: type, *, wants_sequence: bool, streaming: bool, asynchronous: bool
) -> None:
    """Check a class's ``sequence`` declaration against its ``infer`` (class definition):
    ``wants_sequence``, infer names an argument ``sequence``; ``streaming``, it yields;
    ``asynchronous``, it is ``async def``."""
    name = cls.__name__
    declared = getattr(cls, "sequence", None)
    inputs: Mapping[str, Any] = getattr(cls, "inputs", {})
    if declared is None:
        if wants_sequence and SEQUENCE_ARGUMENT not in inputs:
            raise DeclarationError(
                f"{name}.infer takes an argument {SEQUENCE_ARGUMENT!r}, which a stateful model "
                f"gets, but {name} declares no sequence = tp.Sequence(...); declare it "
                f"(sequence = tp.Sequence(strategy='oldest', idle_timeout_s=60)) or rename the "
                f"argument"
            )
        return
    if not isinstance(declared, Sequence):
        raise DeclarationError(
            f"{name}.sequence must be tp.Sequence(...) (or None for a model without state), "
            f"got {declared!r}"
        )
    if SEQUENCE_ARGUMENT in inputs:
        raise DeclarationError(
            f"{name}.inputs declares an input named {SEQUENCE_ARGUMENT!r}, the name of infer's "
            f"argument that receives the sequence; rename the input"
        )
    if asynchronous:
        raise DeclarationError(
            f"{name}.infer is async, which a stateful model cannot be yet (the requests of a "
            f"sequence must run in order); write 'def infer' instead of 'async def infer'"
        )
    if declared.iterative and not streaming:
        raise DeclarationError(
            f"{name}: sequence = {declared!r} is iterative, so infer must be a generator "
            f"(each yield is one step, sent as one response, the request rescheduled between "
            f"steps); yield the steps' outputs, or remove iterative=True"
        )


class SequenceInfo:
    """One sequence, as ``infer(..., sequence)``, ``start_sequence`` and ``end_sequence`` get
    it: ``id`` (the correlation id, a number or a string), ``start`` and ``end`` (the flags of
    the request being served: a one-request sequence has both), ``state`` (what
    ``start_sequence`` returned; settable) and ``evicted`` (True in ``end_sequence`` when the
    sequence ended without END: after ``idle_timeout_s`` without a request, or restarted by a
    new START under the same id).

    Example::

        def infer(self, VALUE, sequence):
            if sequence.end:
                self.logger.log_info(f"sequence {sequence.id} ends")
            sequence.state.append(VALUE)
    """

    __slots__ = ("end", "evicted", "id", "last_seen", "start", "state")

    def __init__(self, correlation_id: CorrelationId, now: float) -> None:
        self.id = correlation_id
        self.start = True
        self.end = False
        self.state: Any = None
        self.evicted = False
        #: the clock's time of the sequence's latest request (idle eviction)
        self.last_seen = now

    def __repr__(self) -> str:
        return (
            f"SequenceInfo(id={self.id!r}, start={self.start}, end={self.end}, "
            f"evicted={self.evicted}, state={self.state!r})"
        )
