"""Sequence rules (TP7xx): Triton's sequence batcher and stateful Python models.

==========  ========  ==============================================================
TP701       warning   control inputs a tp.Model does not declare (it cannot read them)
TP702       error     implicit state (``sequence_batching.state``) on a Python model
TP703       error     max_sequence_idle_microseconds differs from the declared idle_timeout_s
TP704       warning   the oldest strategy with max_batch_size 0
TP705       warning   a decoupled model under the oldest strategy without preserve_ordering
TP706       error     a tp.Model declaring tp.Sequence whose config has no sequence_batching
TP707       error     dynamic_batching together with sequence_batching
TP708       warning   sequence_batching on a tp.Model that declares no tp.Sequence
TP709       error     the strategy (or iterative_sequence, preserve_ordering,
                      max_candidate_sequences) differs from the declared tp.Sequence
TP710       error     a control input that is also one of the model's inputs
TP711       error     an oldest preferred_batch_size not in 1..max_batch_size
TP712       error     a CONTROL_SEQUENCE_CORRID data type Triton refuses
==========  ========  ==============================================================

A tritonpy model's declaration is read from ``declared_config()["sequence_batching"]`` (what
``tritonpy config`` writes), so a model imported inside its own environment is judged the
same way.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Optional

from .._tooling.pbtxt import data_type_name
from ..config import declared_message
from ._context import ModelEntry, Repository, error
from ._report import ERROR, WARNING, Finding

#: every rule code of this family (tests/tooling/test_check.py counts their golden repositories)
CODES = tuple(f"TP7{number:02d}" for number in range(1, 13))

#: Triton's default max_sequence_idle_microseconds (an unset or 0 value means it)
DEFAULT_IDLE_US = 1_000_000
_CORRID_TYPES = ("TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32", "TYPE_STRING")
_ONEOF = 'another member of oneof "scheduling_choice"'
_DOCS = "docs/stateful.md"


def check_sequences(repo: Repository) -> Iterator[Finding]:
    """Yield the sequence findings of every model."""
    for entry in repo:
        if entry.config is None:
            yield from _both_schedulers(entry)
            continue
        if entry.is_ensemble or not entry.is_python:
            continue
        cls = entry.model_class
        declared = declared_sequence(entry, cls) if cls is not None else None
        if cls is not None:
            yield from _tritonpy_model(entry, cls, declared)
        config = entry.effective_config
        if config is not None and config.HasField("sequence_batching"):
            yield from _batcher(entry, config)


def declared_sequence(entry: ModelEntry, cls: Any) -> Optional[Any]:
    """The ``ModelSequenceBatching`` a tritonpy class declares (its ``tp.Sequence``, as
    ``tritonpy config`` writes it), or None when it declares none."""
    declared = declared_message(cls, entry.name)
    return declared.sequence_batching if declared.HasField("sequence_batching") else None


def _owner(entry: ModelEntry, cls: Any) -> str:
    return f"{cls.__name__} in {entry.name}/{entry.model_file}"


def strategy(batching: Any) -> str:
    """``direct`` or ``oldest`` (a sequence_batching without either is direct)."""
    return batching.WhichOneof("strategy_choice") or "direct"


def idle_us(batching: Any) -> int:
    """The idle timeout the server applies, in microseconds (unset or 0: 1 s)."""
    return int(batching.max_sequence_idle_microseconds) or DEFAULT_IDLE_US


def _seconds(microseconds: int) -> str:
    return f"{microseconds / 1e6:g} s"


def _tritonpy_model(entry: ModelEntry, cls: Any, declared: Optional[Any]) -> Iterator[Finding]:
    """The rules comparing config.pbtxt with a tp.Model's declarations."""
    config = entry.config
    owner = _owner(entry, cls)
    configured = config.HasField("sequence_batching")
    if declared is None:
        if configured:
            yield _undeclared_sequence(entry, config.sequence_batching, owner)
        return
    if not configured:
        yield _missing_batcher(entry, config, declared, owner)
        return
    batching = config.sequence_batching
    yield from _strategy_differs(entry, batching, declared, owner)
    yield from _idle_differs(entry, batching, declared, owner)
    yield from _undeclared_controls(entry, batching, declared, owner)


def _undeclared_sequence(entry: ModelEntry, batching: Any, owner: str) -> Finding:
    """TP708: a sequence batcher in front of a model that ignores sequences."""
    controls = [c.name for c in batching.control_input]
    dropped = f"; the control inputs {controls} are dropped" if controls else ""
    return entry.finding(
        "TP708",
        WARNING,
        "sequence_batching",
        f"config.pbtxt has sequence_batching but {owner} declares no sequence = "
        f"tp.Sequence(...): infer() never sees the correlation id or the START/END flags and "
        f"no state is kept per sequence (each request is answered alone){dropped}",
        f"declare sequence = tp.Sequence(strategy={strategy(batching)!r}, idle_timeout_s="
        f"{idle_us(batching) / 1e6:g}) on the class and take an argument named 'sequence' "
        f"in infer ({_DOCS}), or remove sequence_batching",
    )


def _missing_batcher(entry: ModelEntry, config: Any, declared: Any, owner: str) -> Finding:
    """TP706: a declared tp.Sequence that the config does not schedule as a sequence."""
    instead = config.WhichOneof("scheduling_choice")
    found = f"sets {instead} in its place" if instead else "has no sequence_batching"
    return error(
        entry,
        "TP706",
        "sequence_batching",
        f"{owner} declares tp.Sequence(strategy={strategy(declared)!r}) but config.pbtxt "
        f"{found}: auto-complete cannot add sequence_batching (Triton's auto-complete API has "
        f"no setter for it), so the model refuses to load",
        f"run 'tritonpy config REPO/{entry.name}' to write sequence_batching {{ "
        f"{strategy(declared)} {{ }} max_sequence_idle_microseconds: {idle_us(declared)} }}"
        + (f" in place of {instead}" if instead else ""),
    )


def _strategy_differs(
    entry: ModelEntry, batching: Any, declared: Any, owner: str
) -> Iterator[Finding]:
    """TP709: the declared strategy and its options against config.pbtxt's (an error where
    the model refuses to load, a warning for the settings it leaves to the server)."""
    wanted, found = strategy(declared), strategy(batching)
    refused: List[str] = []
    if wanted != found:
        refused.append(f"strategy {found!r} (declared {wanted!r})")
    if declared.iterative_sequence != batching.iterative_sequence:
        refused.append(
            f"iterative_sequence: {str(batching.iterative_sequence).lower()} (declared "
            f"iterative={declared.iterative_sequence})"
        )
    settings: List[str] = []
    if wanted == found == "oldest":
        mine, theirs = declared.oldest, batching.oldest
        if mine.preserve_ordering != theirs.preserve_ordering:
            settings.append(
                f"preserve_ordering: {str(theirs.preserve_ordering).lower()} (declared "
                f"preserve_ordering={mine.preserve_ordering})"
            )
        if mine.max_candidate_sequences and (
            mine.max_candidate_sequences != theirs.max_candidate_sequences
        ):
            settings.append(
                f"max_candidate_sequences: {theirs.max_candidate_sequences or 'unset'} "
                f"(declared {mine.max_candidate_sequences})"
            )
    if not refused and not settings:
        return
    effect = "the model refuses to load" if refused else "the server follows config.pbtxt"
    yield entry.finding(
        "TP709",
        ERROR if refused else WARNING,
        "sequence_batching",
        f"config.pbtxt's sequence_batching has {'; '.join(refused + settings)}, which "
        f"disagrees with the tp.Sequence of {owner}: {effect}",
        f"make them agree: change the declaration, or run 'tritonpy config "
        f"REPO/{entry.name}' to write the declared sequence_batching",
    )


def _idle_differs(entry: ModelEntry, batching: Any, declared: Any, owner: str) -> Iterator[Finding]:
    """TP703: the server's idle timeout against the model's own eviction."""
    server, model = idle_us(batching), idle_us(declared)
    if server == model:
        return
    if server < model:
        effect = (
            "the server would end an idle sequence first and refuse its next request "
            "without START, while tritonpy kept its state"
        )
    else:
        effect = (
            "tritonpy would evict the state first, and the next request of a sequence the "
            "server still holds would get INVALID_ARG from the model"
        )
    told = "" if batching.max_sequence_idle_microseconds else " (unset: Triton's default)"
    yield error(
        entry,
        "TP703",
        "sequence_batching.max_sequence_idle_microseconds",
        f"config.pbtxt's idle timeout is {server} us ({_seconds(server)}){told} but {owner} "
        f"evicts a sequence's state after tp.Sequence(idle_timeout_s={model / 1e6:g}): the "
        f"model refuses to load, since {effect}",
        f"set max_sequence_idle_microseconds: {model} (run 'tritonpy config "
        f"REPO/{entry.name}'), or change idle_timeout_s on the class",
    )


def _undeclared_controls(
    entry: ModelEntry, batching: Any, declared: Any, owner: str
) -> Iterator[Finding]:
    """TP701: control tensors the server adds and the tp.Model cannot read."""
    known = {c.name for c in declared.control_input}
    unread = [c.name for c in batching.control_input if c.name not in known]
    if unread:
        yield entry.finding(
            "TP701",
            WARNING,
            "sequence_batching.control_input",
            f"config.pbtxt names control inputs {unread} that {owner} does not declare: the "
            f"server adds them to every request and tritonpy drops them (infer cannot read "
            f"them); tritonpy reads the correlation id and the START/END flags from each "
            f"request itself (sequence.id, sequence.start, sequence.end)",
            "remove them from control_input: infer's sequence argument gives the id and the "
            "flags (a model that needs the control tensors themselves is a pb_utils model)",
        )


def _batcher(entry: ModelEntry, config: Any) -> Iterator[Finding]:
    """The rules on a Python model's sequence_batching itself (any Python model)."""
    batching = config.sequence_batching
    if batching.state:
        yield _implicit_state(entry, batching)
    yield from _control_rules(entry, config)
    if strategy(batching) == "oldest":
        yield from _oldest_rules(entry, config)


def _implicit_state(entry: ModelEntry, batching: Any) -> Finding:
    """TP702: implicit state, which the Python backend does not implement."""
    names = [s.input_name or s.output_name for s in batching.state]
    return error(
        entry,
        "TP702",
        "sequence_batching.state",
        f"sequence_batching declares implicit state {names}, which the Python backend does "
        f"not support (Triton implements it for the ONNX Runtime, TensorRT and PyTorch "
        f"backends only; server issues 8006 and 3580): the model never receives an updated "
        f"state",
        f"remove sequence_batching.state and keep the state in the model per correlation "
        f"id: a tp.Model declares sequence = tp.Sequence(...) and keeps it in "
        f"sequence.state ({_DOCS}); a pb_utils model keeps a dict keyed by "
        f"request.correlation_id(), freed when request.flags() & 2 (END)",
    )


def _control_rules(entry: ModelEntry, config: Any) -> Iterator[Finding]:
    """TP710 (a control input also listed as an input) and TP712 (CORRID's data type)."""
    inputs = {item.name for item in config.input}
    for index, control_input in enumerate(config.sequence_batching.control_input):
        field = f"sequence_batching.control_input[{index}]"
        if control_input.name in inputs:
            yield error(
                entry,
                "TP710",
                field,
                f"control input {control_input.name!r} is also an input of the model: a "
                f"client would have to send it, though the sequence batcher supplies it from "
                f"the request's sequence flags and correlation id",
                f"remove {control_input.name!r} from the inputs (a tp.Model: from inputs = "
                f"{{...}}; tritonpy reads the flags and the id itself: sequence.start, "
                f"sequence.end, sequence.id)",
            )
        for control in control_input.control:
            if control.kind != type(control).CONTROL_SEQUENCE_CORRID:
                continue
            found = data_type_name(control.data_type)
            if found not in _CORRID_TYPES:
                yield error(
                    entry,
                    "TP712",
                    f"{field}.control.data_type",
                    f"control {control_input.name!r} (CONTROL_SEQUENCE_CORRID) is {found}; "
                    f"Triton refuses the configuration (allowed: {', '.join(_CORRID_TYPES)})",
                    "use TYPE_UINT64 for numeric ids (TYPE_STRING for string ids)",
                )


def _oldest_rules(entry: ModelEntry, config: Any) -> Iterator[Finding]:
    """TP704, TP711 and TP705: the oldest strategy's batching and its ordering."""
    mbs, oldest = config.max_batch_size, config.sequence_batching.oldest
    if mbs == 0:
        yield entry.finding(
            "TP704",
            WARNING,
            "sequence_batching.oldest",
            "the oldest strategy batches requests of several sequences along the batch "
            "dimension, but max_batch_size is 0: every execute() gets one request",
            "set max_batch_size > 0 (on a tp.Model: max_batch_size = N), or use the direct "
            "strategy",
        )
    wrong = [size for size in oldest.preferred_batch_size if size <= 0 or size > mbs]
    if wrong:
        yield error(
            entry,
            "TP711",
            "sequence_batching.oldest.preferred_batch_size",
            f"preferred_batch_size {wrong} is not between 1 and max_batch_size {mbs}; Triton "
            f"refuses the configuration",
            f"use preferred sizes between 1 and {mbs}, or leave preferred_batch_size out",
        )
    if config.model_transaction_policy.decoupled and not oldest.preserve_ordering:
        yield entry.finding(
            "TP705",
            WARNING,
            "sequence_batching.oldest.preserve_ordering",
            "a decoupled model under the oldest strategy without preserve_ordering: a "
            "decoupled model may release a request before its last response, the "
            "sequence's next request then runs, and their responses can interleave",
            "set preserve_ordering: true in oldest { } (a tp.Model: tp.Sequence(strategy="
            "'oldest', preserve_ordering=True)) where the order of a sequence's responses "
            "matters",
        )


def _both_schedulers(entry: ModelEntry) -> Iterator[Finding]:
    """TP707: config.pbtxt sets dynamic_batching and sequence_batching (unparseable: the two
    are one choice of scheduler, so TP102 reports the parse error too)."""
    text = entry.config_error or ""
    if _ONEOF in text and "dynamic_batching" in text and "sequence_batching" in text:
        yield error(
            entry,
            "TP707",
            "sequence_batching",
            "config.pbtxt sets both dynamic_batching and sequence_batching: a model has one "
            "scheduler, and Triton refuses the configuration",
            "keep sequence_batching for a stateful model (its oldest strategy batches "
            "requests of several sequences) and remove dynamic_batching; keep "
            "dynamic_batching alone for a stateless one",
        )
