"""What kind of model a configuration describes, as a client must talk to it.

- **decoupled** (``model_transaction_policy { decoupled: true }``): only a stream reaches it (a
  gRPC bidirectional stream, or HTTP ``generate_stream``); a plain request is refused with
  ``UNSUPPORTED``. Triton 24.10 marks an ensemble with a decoupled member decoupled in the
  configuration it reports, so the flag of the model itself is enough.
- **sequence** (``sequence_batching``): every request needs a correlation id, and the first one
  of a sequence the START flag; the server refuses any other request (``INVALID_ARG``) before
  the model runs. An ensemble over a sequence model needs them too, although its own
  configuration has no ``sequence_batching``: :func:`model_kind` follows the steps.

Example::

    kind = model_kind(client.model_config("pipeline"), client.model_config)
    if kind.sequence:
        control = SequenceControl(fresh_sequence_id(kind), start=True, end=True)
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Union

#: the largest id of each CORRID data type the probe and ``infer`` draw fresh ids below
_ID_LIMITS = {"TYPE_INT32": 2**31, "TYPE_UINT32": 2**32, "TYPE_INT64": 2**63}
_DEFAULT_ID_LIMIT = 2**63  # UINT64 ids, and models without a CORRID control
_MAX_DEPTH = 8  # ensembles of ensembles: deeper than anyone nests them

ConfigReader = Callable[[str], Mapping[str, Any]]
#: how a load test drives a model: ``plain`` one request one response, ``streaming`` each
#: request on a gRPC stream until its final response, ``sequence`` sequences of requests
Mode = Literal["plain", "streaming", "sequence"]
#: the correlation ids asked for: ``auto`` follows the CORRID control's data type
IdChoice = Literal["auto", "numeric", "string"]


@dataclass(frozen=True)
class ModelKind:
    """The model ``name``'s kind. ``decoupled``: only a stream reaches it; ``sequence``: its
    requests need a correlation id (``sequence_model`` names the model whose
    ``sequence_batching`` asks for it: the model itself or an ensemble's member, and
    ``strategy`` that batcher's ``direct`` or ``oldest``); ``string_id``: that model's
    ``CONTROL_SEQUENCE_CORRID`` control is ``TYPE_STRING``; ``id_type`` the control's data
    type (``""`` without one)."""

    name: str = ""
    decoupled: bool = False
    sequence: bool = False
    sequence_model: str = ""
    string_id: bool = False
    id_type: str = ""
    strategy: str = ""

    @property
    def mode(self) -> Mode:
        """How a load test drives it: ``sequence`` for a sequence model (streamed too when
        decoupled), ``streaming`` for a decoupled model, else ``plain``."""
        if self.sequence:
            return "sequence"
        return "streaming" if self.decoupled else "plain"

    @property
    def via(self) -> str:
        """For an ensemble over a sequence model, that member; else ``""``."""
        return self.sequence_model if self.sequence_model != self.name else ""

    def uses_string_ids(self, choice: IdChoice) -> bool:
        """Whether a load test sends string ids: as ``choice`` says, or (``auto``) as the
        CORRID control's data type does (numeric without a control)."""
        return self.string_id if choice == "auto" else choice == "string"

    def phrase(self) -> str:
        """The kind in a sentence: ``a decoupled model``, ``a sequence model (oldest
        strategy)``, ``an ensemble over the sequence model 'q' (direct strategy)``."""
        if not self.sequence:
            return "a decoupled model" if self.decoupled else "a model"
        strategy = f"{self.strategy} strategy" if self.strategy else "sequence batching"
        if self.via:
            return f"an ensemble over the sequence model {self.via!r} ({strategy})"
        prefix = "a decoupled sequence model" if self.decoupled else "a sequence model"
        return f"{prefix} ({strategy})"

    def describe(self) -> str:
        """``decoupled``, ``sequence`` (with the member that makes it one), ``plain``."""
        parts: List[str] = []
        if self.decoupled:
            parts.append("decoupled")
        if self.sequence:
            parts.append(f"sequence (through {self.sequence_model})")
        return " ".join(parts) or "plain"


def _corrid_type(batching: Mapping[str, Any]) -> str:
    for entry in batching.get("control_input", []) or []:
        for control in entry.get("control", []) or []:
            if control.get("kind") == "CONTROL_SEQUENCE_CORRID":
                return str(control.get("data_type", ""))
    return ""


def _members(config: Mapping[str, Any]) -> List[str]:
    steps = (config.get("ensemble_scheduling") or {}).get("step", []) or []
    return [str(step.get("model_name", "")) for step in steps if step.get("model_name")]


def _sequence_of(
    config: Mapping[str, Any], read: Optional[ConfigReader], depth: int
) -> Optional[ModelKind]:
    batching = config.get("sequence_batching")
    if batching is not None:
        id_type = _corrid_type(batching)
        return ModelKind(
            sequence=True,
            sequence_model=str(config.get("name", "")),
            string_id=id_type == "TYPE_STRING",
            id_type=id_type,
            # no strategy written: Triton schedules the direct way
            strategy="oldest" if "oldest" in batching else "direct",
        )
    if read is None or depth >= _MAX_DEPTH:
        return None
    for member in _members(config):
        try:
            member_config = read(member)
        except Exception:  # a member the server does not describe: the ensemble stays as it is
            continue
        found = _sequence_of(member_config, read, depth + 1)
        if found is not None:
            return found
    return None


def model_kind(config: Mapping[str, Any], read: Optional[ConfigReader] = None) -> ModelKind:
    """The kind of the model whose configuration (JSON form, as the server reports it) is
    ``config``; ``read(name)`` returns another model's configuration, to follow an ensemble's
    steps (without it an ensemble over a sequence model is not seen as one).

    >>> model_kind({"name": "s", "model_transaction_policy": {"decoupled": True}}).decoupled
    True
    >>> model_kind({"name": "q", "sequence_batching": {"direct": {}}}).describe()
    'sequence (through q)'
    """
    name = str(config.get("name", ""))
    decoupled = bool((config.get("model_transaction_policy") or {}).get("decoupled", False))
    sequence = _sequence_of(config, read, 0)
    if sequence is None:
        return ModelKind(name, decoupled=decoupled)
    return ModelKind(
        name,
        decoupled=decoupled,
        sequence=True,
        sequence_model=sequence.sequence_model,
        string_id=sequence.string_id,
        id_type=sequence.id_type,
        strategy=sequence.strategy,
    )


def fresh_sequence_id(kind: ModelKind) -> Union[int, str]:
    """A correlation id no client is likely to use: a random positive number within the range
    of the CORRID control's data type, or ``tritonpy-<hex>`` for a ``TYPE_STRING`` one.

    >>> isinstance(fresh_sequence_id(ModelKind(sequence=True)), int)
    True
    >>> str(fresh_sequence_id(ModelKind(sequence=True, string_id=True))).startswith("tritonpy-")
    True
    """
    if kind.string_id:
        return f"tritonpy-{uuid.uuid4().hex}"
    limit = _ID_LIMITS.get(kind.id_type, _DEFAULT_ID_LIMIT)
    return 1 + secrets.randbelow(limit - 1)


def sequence_id_from_text(text: str) -> Union[int, str]:
    """A ``--sequence-id`` value: a number when it reads as one, else the text (a string id).

    >>> sequence_id_from_text("42"), sequence_id_from_text("user-7")
    (42, 'user-7')
    """
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    return text


def configs_reader(read: Callable[[str], Dict[str, Any]]) -> ConfigReader:
    """``read`` with each configuration fetched once (an ensemble may name a member twice)."""
    seen: Dict[str, Dict[str, Any]] = {}

    def cached(name: str) -> Mapping[str, Any]:
        if name not in seen:
            seen[name] = read(name)
        return seen[name]

    return cached
