"""What kind of model a load test drives, read from its served configuration: a plain model
(one request, one response), a decoupled one (``model_transaction_policy { decoupled: true }``:
its responses stream, over gRPC only) or a sequence model (``sequence_batching``: requests
carry a correlation id, START on a sequence's first request and END on its last), or both.

Example::

    kind = model_kind({"name": "m", "sequence_batching": {"oldest": {}}})
    kind.mode, kind.strategy, kind.string_ids           # ('sequence', 'oldest', False)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Literal, Mapping, Optional, Set

#: how a load test drives a model: ``plain`` one request one response, ``streaming`` each
#: request on a gRPC stream until its final response, ``sequence`` sequences of requests
Mode = Literal["plain", "streaming", "sequence"]
#: the correlation ids asked for: ``auto`` follows the CORRID control's data type
IdChoice = Literal["auto", "numeric", "string"]

_CORRID = "CONTROL_SEQUENCE_CORRID"


@dataclass(frozen=True)
class ModelKind:
    """The model's kind as a load test needs it: ``decoupled``, ``sequence``, the sequence
    batcher's ``strategy`` (``direct``, ``oldest``; empty when not a sequence model), the
    ``corrid_type`` of its CORRID control (e.g. ``TYPE_UINT64``; empty without one);
    ``via``: for an ensemble, the step whose sequence batcher makes it a sequence model."""

    name: str
    decoupled: bool = False
    sequence: bool = False
    strategy: str = ""
    corrid_type: str = ""
    via: str = ""

    @property
    def mode(self) -> Mode:
        """``sequence`` for a sequence model (streamed too when decoupled), ``streaming`` for a
        decoupled model, else ``plain``."""
        if self.sequence:
            return "sequence"
        return "streaming" if self.decoupled else "plain"

    @property
    def string_ids(self) -> bool:
        """Whether the CORRID control asks for string correlation ids (``TYPE_STRING``)."""
        return self.corrid_type == "TYPE_STRING"

    def uses_string_ids(self, choice: IdChoice) -> bool:
        """Whether the load test sends string ids: as ``choice`` says, or (``auto``) as the
        CORRID control's data type does (numeric without a control)."""
        return self.string_ids if choice == "auto" else choice == "string"

    def describe(self) -> str:
        """``a decoupled model``, ``a sequence model (oldest strategy)``..."""
        if not self.sequence:
            return "a decoupled model" if self.decoupled else "a model"
        strategy = f"{self.strategy} strategy" if self.strategy else "sequence batching"
        if self.via:
            return f"an ensemble over the sequence model {self.via!r} ({strategy})"
        prefix = "a decoupled sequence model" if self.decoupled else "a sequence model"
        return f"{prefix} ({strategy})"


def _corrid_type(batching: Mapping[str, Any]) -> str:
    for entry in batching.get("control_input") or []:
        for control in entry.get("control") or []:
            if str(control.get("kind", "")) == _CORRID:
                return str(control.get("data_type") or "TYPE_UINT64")
    return ""


#: the served configuration of a model by name (``InferClient.model_config``)
ConfigLookup = Callable[[str], Mapping[str, Any]]


def model_kind(config: Mapping[str, Any], lookup: Optional[ConfigLookup] = None) -> ModelKind:
    """The :class:`ModelKind` of the model whose configuration (JSON form, as the server's
    ``/config`` returns it) is ``config``. With ``lookup``, an ensemble one of whose steps
    (at any depth) is a sequence model is one too: the server wants correlation ids and
    START/END for it (a decoupled step already marks the ensemble decoupled in its served
    configuration)."""
    kind = _own_kind(config)
    if lookup is None or kind.sequence or "ensemble_scheduling" not in config:
        return kind
    step = _sequence_step(config, lookup, {kind.name})
    if step is None:
        return kind
    via = step.via or step.name
    return replace(kind, sequence=True, strategy=step.strategy, corrid_type=step.corrid_type,
                   via=via)  # fmt: skip


def _sequence_step(
    config: Mapping[str, Any], lookup: ConfigLookup, seen: Set[str]
) -> Optional[ModelKind]:
    """The first step of an ensemble that is (or runs) a sequence model, or None."""
    for step in (config.get("ensemble_scheduling") or {}).get("step") or []:
        name = str(step.get("model_name", ""))
        if not name or name in seen:
            continue
        seen.add(name)
        try:
            found = model_kind(lookup(name), lookup)
        except Exception:  # a step the server does not describe: the ensemble stays as it is
            continue
        if found.sequence:
            return found
    return None


def _own_kind(config: Mapping[str, Any]) -> ModelKind:
    policy = config.get("model_transaction_policy") or {}
    batching: Optional[Mapping[str, Any]] = config.get("sequence_batching")
    strategy = ""
    if batching is not None:
        # no strategy written: Triton schedules the direct way
        strategy = "oldest" if "oldest" in batching else "direct"
    return ModelKind(
        name=str(config.get("name", "")),
        decoupled=bool(policy.get("decoupled", False)),
        sequence=batching is not None,
        strategy=strategy,
        corrid_type=_corrid_type(batching or {}),
    )
