"""Checks of a Model subclass's declarations, at class definition and at load time.

Private: :class:`tritonpy.Model` calls these; each raises :class:`~tritonpy.DeclarationError`
with the class, what was declared, what the configuration says and how to fix it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Collection, Dict, Literal, Mapping, Optional, Tuple, Union

from ._sequence import SEQUENCE_ARGUMENT, check_sequence_declaration
from ._torch_threads import check_torch_threads, check_tune_malloc
from .codecs.base import Codec, shape_matches
from .errors import DeclarationError
from .metrics import check_metric_declarations

if TYPE_CHECKING:
    from .model import Model


#: what kind of callable ``infer`` is (``InferFacts.kind``)
INFER_SYNC = "sync"
INFER_ASYNC = "async"
INFER_GENERATOR = "generator"
INFER_ASYNC_GENERATOR = "async generator"
#: the name of infer's argument that receives the request parameters (never an input)
PARAMETERS_ARGUMENT = "parameters"


#: the model configuration fields that schedule requests (one of them at most)
SCHEDULERS = ("dynamic_batching", "sequence_batching", "ensemble_scheduling")


@dataclass(frozen=True)
class Completion:
    """What Triton's auto-complete fills in from a class's declarations (one rule, applied
    by ``Model.auto_complete_config`` at load time and by the config tooling offline)."""

    #: the declared max_batch_size when the configuration has none (0), else None: keep it
    max_batch_size: Optional[int]
    #: add an empty ``dynamic_batching`` (batching declared, no scheduler configured)
    dynamic_batching: bool
    #: the declared input and output entries, in the JSON form of ``ModelConfig``
    inputs: Tuple[Dict[str, Any], ...]
    outputs: Tuple[Dict[str, Any], ...]
    #: set ``model_transaction_policy { decoupled: true }``
    decoupled: bool


def completion(cls: Any, configured_batch_size: int, configured: Collection[str]) -> Completion:
    """The auto-complete of ``cls`` for a configuration with ``configured_batch_size`` and
    the top-level fields ``configured`` (to see whether a scheduler is set)."""
    declared = cls.declared_config()
    batching = int(declared["max_batch_size"])
    return Completion(
        max_batch_size=batching if batching > 0 and configured_batch_size == 0 else None,
        dynamic_batching="dynamic_batching" in declared
        and not any(field in configured for field in SCHEDULERS),
        inputs=tuple(declared["input"]),
        outputs=tuple(declared["output"]),
        decoupled="model_transaction_policy" in declared,
    )


def infer_kind(infer: Any) -> str:
    """Which of the four kinds of ``infer`` a function is (a generator streams)."""
    if inspect.isasyncgenfunction(infer):
        return INFER_ASYNC_GENERATOR
    if inspect.isgeneratorfunction(infer):
        return INFER_GENERATOR
    if inspect.iscoroutinefunction(infer):
        return INFER_ASYNC
    return INFER_SYNC


def wants_parameters(infer: Any) -> bool:
    """Whether ``infer`` names an argument ``parameters`` (it then gets the request's)."""
    return names_argument(infer, PARAMETERS_ARGUMENT)


def names_argument(infer: Any, name: str) -> bool:
    """Whether ``infer`` has an argument called ``name``."""
    try:
        return name in inspect.signature(infer).parameters
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class InferFacts:
    """What the class definition found out about ``infer`` (kept by ``Model`` in a
    name-mangled class attribute, out of the way of the user's names)."""

    #: which of the four kinds of callable ``infer`` is (INFER_SYNC...)
    kind: str
    #: ``infer`` names an argument ``parameters`` (it then gets the request's)
    wants_parameters: bool
    #: ``decoupled`` was set True because ``infer`` yields, not by the class
    decoupled_implied: bool
    #: ``infer`` names an argument ``sequence`` (a stateful model's: it gets the sequence)
    wants_sequence: bool = False


#: the facts of ``Model`` itself (a plain ``infer``)
BASE_INFER_FACTS = InferFacts(INFER_SYNC, wants_parameters=False, decoupled_implied=False)


def check_streaming(cls: type, inherited: InferFacts) -> InferFacts:
    """A generator ``infer`` streams: the class becomes decoupled, unless it says otherwise
    (an error). Sets ``decoupled`` on the class and returns the facts of its ``infer``
    (``inherited``: its base's)."""
    infer = getattr(cls, "infer", None)
    kind = infer_kind(infer)
    declared = cls.__dict__.get("decoupled", getattr(cls, "decoupled", None))
    if inherited.decoupled_implied and "decoupled" not in cls.__dict__:
        declared = None  # inherited from a streaming base whose infer this class replaced
    if declared is not None and not isinstance(declared, bool):
        raise DeclarationError(f"{cls.__name__}.decoupled must be True or False, got {declared!r}")
    streaming = kind in (INFER_GENERATOR, INFER_ASYNC_GENERATOR)
    if streaming and declared is False:
        raise DeclarationError(
            f"{cls.__name__}.infer is {'an' if kind.startswith('a') else 'a'} {kind} function "
            f"(it yields one response per part), which needs Triton's decoupled transaction "
            f"policy, but the class sets decoupled = False; remove 'decoupled = False', or "
            f"return one dict instead of yielding"
        )
    cls.decoupled = True if streaming else declared  # type: ignore[attr-defined]
    return InferFacts(
        kind,
        wants_parameters(infer),
        streaming and declared is None,
        wants_sequence=names_argument(infer, SEQUENCE_ARGUMENT),
    )


#: ``Model.check_cancellation``: always, never, or "auto" (while infer() is slow)
CancellationSetting = Union[bool, Literal["auto"]]


def cancellation_policy(cls: type, value: Any) -> Optional[bool]:
    """True/False from a check_cancellation ``value`` (the instance's), or None for "auto"."""
    if value == "auto":
        return None
    if isinstance(value, bool):
        return value
    raise DeclarationError(
        f"{cls.__name__}.check_cancellation must be True, False or 'auto', got {value!r}"
    )


def check_batch_size(cls: type, configured: int, *, auto_completing: bool) -> None:
    declared = getattr(cls, "max_batch_size", 0)
    where = "config.pbtxt" if auto_completing else "the model configuration"
    if declared == 0 and configured > 0:
        raise DeclarationError(
            f"{cls.__name__}: {where} sets max_batch_size {configured}, but the class declares "
            f"max_batch_size = 0 (no batching, so infer() expects values without a batch "
            f"dimension); set max_batch_size on the class or remove it from config.pbtxt"
        )
    if declared > 0 and configured > declared:
        raise DeclarationError(
            f"{cls.__name__}: {where} sets max_batch_size {configured}, above the class's "
            f"max_batch_size = {declared}; lower it in config.pbtxt or raise it on the class"
        )
    if declared > 0 and configured == 0 and not auto_completing:
        raise DeclarationError(
            f"{cls.__name__}: the model configuration has max_batch_size 0, but the class "
            f"declares max_batch_size = {declared}; set max_batch_size in config.pbtxt, or "
            f"let auto-complete fill it (do not start tritonserver with "
            f"--disable-auto-complete-config)"
        )


def check_config_tensors(cls: type, config: Mapping[str, Any]) -> None:
    for section, declared in (("input", cls.inputs), ("output", cls.outputs)):  # type: ignore[attr-defined]
        configured = {entry["name"]: entry for entry in config.get(section, [])}
        for name, codec in declared.items():
            entry = configured.get(name)
            if entry is None:
                raise DeclarationError(
                    f"{cls.__name__}: {section} {name!r} is declared on the class but missing "
                    f"from the model configuration; add it to config.pbtxt or let "
                    f"auto-complete fill it"
                )
            data_type = entry.get("data_type", "")
            if data_type != codec.dtype.config_name:
                raise DeclarationError(
                    f"{cls.__name__}: {section} {name!r} is {codec.dtype.config_name} on the "
                    f"class ({codec!r}) but {data_type} in the model configuration; make them "
                    f"agree"
                )
            dims = [int(d) for d in entry.get("dims", [])]
            if "reshape" not in entry and not shape_matches(dims, codec.dims):
                raise DeclarationError(
                    f"{cls.__name__}: {section} {name!r} has dims {list(codec.dims)} on the "
                    f"class but {dims} in the model configuration; make them agree"
                )
        extra = sorted(set(configured) - set(declared))
        if extra:
            raise DeclarationError(
                f"{cls.__name__}: the model configuration has {section}s {extra} that the class "
                f"does not declare; declare them in {section}s = {{...}} or remove them from "
                f"config.pbtxt"
            )


def check_instance_codecs(cls: type, model: Model) -> None:
    for section in ("inputs", "outputs"):
        declared: Mapping[str, Codec] = getattr(cls, section)
        actual: Mapping[str, Codec] = getattr(model, section)
        if actual is declared:
            continue
        if list(actual) != list(declared):
            raise DeclarationError(
                f"{cls.__name__}.setup() changed the {section} names from {list(declared)} to "
                f"{list(actual)}; setup may replace a codec, not add or remove one"
            )
        for name, codec in actual.items():
            before = declared[name]
            if not isinstance(codec, Codec) or (codec.dtype, codec.dims, codec.optional) != (
                before.dtype,
                before.dims,
                before.optional,
            ):
                raise DeclarationError(
                    f"{cls.__name__}.setup() replaced {section[:-1]} {name!r} ({before!r}) "
                    f"with {codec!r}; the replacement must keep the data type, dims and "
                    f"optional flag Triton was configured with"
                )


def validate_declarations(cls: type, inherited: InferFacts) -> InferFacts:
    """Check a new subclass's declarations; the facts of its ``infer`` (see
    :func:`check_streaming`)."""
    for section in ("inputs", "outputs"):
        declared = getattr(cls, section)
        if not isinstance(declared, Mapping):
            raise DeclarationError(
                f"{cls.__name__}.{section} must be a dict {{name: codec}}, got "
                f"{type(declared).__name__}"
            )
        for name, codec in declared.items():
            if not isinstance(name, str) or not name:
                raise DeclarationError(
                    f"{cls.__name__}.{section}: names must be non-empty strings, got {name!r}"
                )
            if not isinstance(codec, Codec):
                raise DeclarationError(
                    f"{cls.__name__}.{section}[{name!r}] must be a codec such as "
                    f"tp.Tensor('FP32', [4]) or tp.Text(), got {codec!r}"
                )
            if section == "outputs":
                codec.check_output_declaration(name)
    if PARAMETERS_ARGUMENT in cls.inputs:  # type: ignore[attr-defined]
        raise DeclarationError(
            f"{cls.__name__}.inputs declares an input named {PARAMETERS_ARGUMENT!r}, the name "
            f"of infer's argument that receives the request parameters; rename the input "
            f"(for example 'PARAMETERS' or 'params')"
        )
    both = set(cls.inputs) & set(cls.outputs)  # type: ignore[attr-defined]
    if both:
        raise DeclarationError(
            f"{cls.__name__}: {sorted(both)} are declared as both inputs and outputs; Triton "
            f"needs distinct names"
        )
    max_batch_size = getattr(cls, "max_batch_size", 0)
    if (
        not isinstance(max_batch_size, int)
        or isinstance(max_batch_size, bool)
        or max_batch_size < 0
    ):
        raise DeclarationError(
            f"{cls.__name__}.max_batch_size must be an integer >= 0, got {max_batch_size!r}"
        )
    infer = cls.__dict__.get("infer")
    if infer is not None:
        _check_infer_signature(cls, infer)
    facts = check_streaming(cls, inherited)
    check_sequence_declaration(
        cls,
        wants_sequence=facts.wants_sequence,
        streaming=facts.kind in (INFER_GENERATOR, INFER_ASYNC_GENERATOR),
        asynchronous=facts.kind in (INFER_ASYNC, INFER_ASYNC_GENERATOR),
    )
    check_metric_declarations(cls)
    check_torch_threads(cls)
    check_tune_malloc(cls)
    return facts


def _check_infer_signature(cls: type, infer: Any) -> None:
    try:
        signature = inspect.signature(infer)
    except (TypeError, ValueError):  # builtins, C extensions: nothing to check
        return
    parameters = list(signature.parameters.values())[1:]  # drop self
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = {
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    declared = set(cls.inputs)  # type: ignore[attr-defined]
    missing = sorted(declared - accepted)
    if missing:
        raise DeclarationError(
            f"{cls.__name__}.infer does not accept the declared inputs {missing}; name its "
            f"parameters after the inputs (def infer(self, {', '.join(sorted(declared))})) or "
            f"add **inputs"
        )
    required = sorted(
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        and p.name not in declared
        and p.name not in (PARAMETERS_ARGUMENT, SEQUENCE_ARGUMENT)
    )
    if required:
        raise DeclarationError(
            f"{cls.__name__}.infer requires parameters {required} that are not declared "
            f"inputs; declare them in inputs = {{...}} or give them defaults"
        )
