"""Config parameters a model declares, resolved from ``config.pbtxt`` at ``initialize``.

A declaration names its ``parameters { key: ... }`` entry once, where the value is used: a
class attribute (``top_k = tp.config_parameter("top_k", 5, cast=...)``) or a codec argument
(``tp.Image(size=tp.config_parameter("size", (224, 224), cast=...))``). The class is checked
and its codecs built with the defaults when it is defined; ``Model.initialize`` calls
:func:`resolve_config_parameters`, which reads every declared key from the instance's
configuration, checks it and sets the resolved values on the instance (the attribute, or a
codec rebuilt with them) before ``setup()``. The three runtime knobs (``torch_threads``,
``tune_malloc``, ``check_cancellation``) are overridden the same way, from the keys
``tritonpy.torch_threads``, ``tritonpy.tune_malloc`` and ``tritonpy.check_cancellation``.
"""

from __future__ import annotations

import copy
from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    overload,
)

from ..parameters import boolean, positive_int
from .errors import DeclarationError

T = TypeVar("T")
D = TypeVar("D")
S = TypeVar("S", bound=str)

#: the attribute on a codec (or a ``tp.vision.Normalize``) built from declared parameters:
#: (the ``__init__`` that recorded them, its arguments as given)
_RECORD = "_config_arguments"
#: the record while the declaration-time object is built from the defaults
_BUILDING = "building"


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: the default of a parameter that ``config.pbtxt`` must set
REQUIRED: Any = _Required()


class ConfigParameter(Generic[T]):
    """A ``config.pbtxt`` parameter a model declares (made by :func:`config_parameter`): its
    ``key``, the ``default`` used when the key is absent (:data:`REQUIRED`: none), ``cast``
    (str -> value) and the allowed ``choices``."""

    def __init__(
        self,
        key: str,
        default: Any = REQUIRED,
        cast: Callable[[str], T] = str,  # type: ignore[assignment]
        choices: Optional[Sequence[Any]] = None,
    ) -> None:
        if not isinstance(key, str) or not key.strip():
            raise DeclarationError(
                f"config_parameter: the key must be a non-empty string, got {key!r}"
            )
        if not callable(cast):
            raise DeclarationError(
                f"config_parameter({key!r}): cast must be a function str -> value such as "
                f"tp.parameters.positive_int, got {cast!r}"
            )
        if choices is not None and default is not REQUIRED and default not in choices:
            raise DeclarationError(
                f"config_parameter({key!r}): the default {default!r} is not one of the choices "
                f"{list(choices)}"
            )
        self.key = key
        self.default = default
        self.cast = cast
        self.choices = tuple(choices) if choices is not None else None
        #: where it is declared, for messages: "Class.attribute" once set on a class
        self.declared_as = f"config_parameter({key!r})"

    def __repr__(self) -> str:
        return f"config_parameter({self.key!r}, default={self.default!r})"

    # a class attribute: reads as the resolved value on an instance (initialize sets it in the
    # instance's __dict__, which wins over this non-data descriptor), as itself on the class
    def __set_name__(self, owner: type, name: str) -> None:
        self.declared_as = f"{owner.__name__}.{name}"

    def __get__(self, instance: Any, owner: Optional[type] = None) -> Any:
        if instance is None:
            return self
        if self.default is REQUIRED:  # read before initialize resolved it
            raise DeclarationError(
                f"{self.declared_as} (config.pbtxt parameter {self.key!r}) is read before the "
                f"model was initialized; read it in setup() or infer()"
            )
        return self.default

    def resolve(
        self, config: Mapping[str, Any], model_name: str, declared_as: str = ""
    ) -> Tuple[T, Optional[str]]:
        """The value for ``config`` (a model configuration dict) and the text found there
        (None when the key is absent and the default is used); ``declared_as`` says where
        the declaration is, for messages."""
        return read_parameter(
            config,
            model_name,
            self.key,
            self.default,
            self.cast,
            self.choices,
            declared_as=declared_as or self.declared_as,
        )


# Typing: a declaration reads as its value (as dataclasses.field does): the default or what
# cast gives. Without cast the value is the text, typed as the default is, so that in a codec
# argument typed with literals (tp.Image's color) the default is checked against them.
@overload
def config_parameter(key: str, *, choices: Optional[Sequence[str]] = None) -> str: ...
@overload
def config_parameter(key: str, default: S, *, choices: Optional[Sequence[S]] = None) -> S: ...
@overload
def config_parameter(
    key: str, default: D, cast: Callable[[str], T], *, choices: Optional[Sequence[Any]] = None
) -> Union[D, T]: ...
@overload
def config_parameter(
    key: str, *, cast: Callable[[str], T], choices: Optional[Sequence[T]] = None
) -> T: ...
def config_parameter(
    key: str,
    default: Any = REQUIRED,
    cast: Callable[[str], Any] = str,
    *,
    choices: Optional[Sequence[Any]] = None,
) -> Any:
    """Declare a ``parameters { key: KEY value { string_value: ... } }`` entry of
    ``config.pbtxt``, as a class attribute of a model or as a codec argument. At
    ``initialize`` (before ``setup``) the text is converted by ``cast`` (see
    :mod:`tritonpy.parameters`) and checked against ``choices``; without the key, ``default``
    is used (without a default the key is required). On the instance the attribute reads as
    the value; a codec is rebuilt with it. A bad value fails the model's load with a
    :class:`~tritonpy.DeclarationError` naming the model, the key, the value and what was
    expected. The defaults are checked when the class is defined. On a model built by hand
    (no ``initialize``) the attribute reads as its default.

    Type checkers see the value's type (``int`` for ``cast=tp.parameters.positive_int``),
    as with ``dataclasses.field``; at run time it is a :class:`ConfigParameter`. Without
    ``cast`` the text is given as it is (``tp.Image`` upper-cases and checks its ``color``
    itself).

    Example, with ``parameters { key: "top_k" value { string_value: "3" } }``::

        class Postprocess(tp.Model):
            top_k = tp.config_parameter("top_k", 5, cast=tp.parameters.positive_int)  # 3
            inputs = {"IMAGE": tp.Image(
                color=tp.config_parameter("color", "RGB", choices=("RGB", "BGR")),
                size=tp.config_parameter("size", (224, 224), cast=tp.parameters.size))}
    """
    return ConfigParameter(key, default, cast, choices)


def read_parameter(
    config: Mapping[str, Any],
    model_name: str,
    key: str,
    default: Any,
    cast: Callable[[str], Any],
    choices: Optional[Sequence[Any]],
    *,
    declared_as: str = "",
) -> Tuple[Any, Optional[str]]:
    """``(value, text)`` of the parameter ``key`` of the model configuration ``config``:
    ``cast(text)`` checked against ``choices``, or ``(default, None)`` when the key is absent
    (a DeclarationError when ``default`` is :data:`REQUIRED`). The one rule behind
    ``Model.parameter`` and the declared parameters."""
    entry = (config.get("parameters") or {}).get(key)
    text = entry.get("string_value") if isinstance(entry, Mapping) else entry
    needs = f" ({declared_as})" if declared_as else ""
    if text is None:
        if default is REQUIRED:
            raise DeclarationError(
                f"{model_name}: config.pbtxt has no parameter {key!r}{needs}; add "
                f'parameters {{ key: "{key}" value {{ string_value: "..." }} }}'
            )
        return default, None
    try:
        value = cast(str(text))
    except (TypeError, ValueError) as exc:
        raise DeclarationError(
            f"{model_name}: parameter {key!r} is {text!r}{needs}: {exc}; fix it in config.pbtxt"
        ) from None
    if choices is not None and value not in choices:
        raise DeclarationError(
            f"{model_name}: parameter {key!r} is {text!r}{needs}, expected one of "
            f"{list(choices)}; fix it in config.pbtxt"
        )
    return value, str(text)


class FromInstance:
    """A codec argument only the model instance knows (its device), read at ``initialize``
    like a declared parameter: ``read(model)`` gives it, ``default`` stands in before."""

    def __init__(self, what: str, default: Any, read: Callable[[Any], Any]) -> None:
        self.what = what
        self.default = default
        self.read = read

    def __repr__(self) -> str:
        return self.what


#: ``TorchTensor(device="instance")``: the instance's GPU (``torch_device``) for a
#: ``KIND_GPU`` instance; on a CPU instance tensors stay where Triton put them (None)
INSTANCE_DEVICE = FromInstance(
    "the instance's device",
    None,
    lambda model: model.torch_device if model.instance_kind == "GPU" else None,
)


# -- codec arguments -------------------------------------------------------------------------
def defer_config_arguments(
    owner: Any, init: Callable[..., None], arguments: Dict[str, Any]
) -> bool:
    """In a constructor whose arguments may be declared parameters: when some are (or hold
    some, as a ``tp.vision.Normalize`` given to ``tp.Image``), build ``owner`` with the
    defaults in their place (so the declaration is checked now), remember ``init`` and the
    arguments for :func:`resolve_config_parameters`, and return True: the constructor returns.

    ``arguments`` is the constructor's ``locals()`` taken first thing::

        def __init__(self, color="RGB", *, size=None):
            if defer_config_arguments(self, Image.__init__, locals()):
                return
            ...
    """
    if getattr(owner, _RECORD, None) is _BUILDING:  # the call below, with the defaults
        return False
    given = {name: value for name, value in arguments.items() if name not in ("self", "__class__")}
    if not any(_is_declared(value) for value in given.values()):
        return False
    object.__setattr__(owner, _RECORD, _BUILDING)  # a frozen dataclass too
    init(owner, **{name: _default_of(value) for name, value in given.items()})
    object.__setattr__(owner, _RECORD, (init, given))
    return True


def _is_declared(value: Any) -> bool:
    return isinstance(value, (ConfigParameter, FromInstance)) or isinstance(
        getattr(value, _RECORD, None), tuple
    )


def _default_of(value: Any) -> Any:
    """The declaration-time stand-in for an argument: a parameter's default, an object built
    from parameters as it was built (with the defaults)."""
    if isinstance(value, FromInstance):
        return value.default
    if not isinstance(value, ConfigParameter):
        return value
    if value.default is REQUIRED:
        raise DeclarationError(
            f"{value.declared_as}: a codec argument needs a default (the codec is built with "
            f"it when the class is defined); give config_parameter({value.key!r}, default=...)"
        )
    return value.default


class _Refused(DeclarationError):
    """An object rebuilt from the configured values refused them: its message, and the texts
    ``config.pbtxt`` gave for its parameters (by key)."""

    def __init__(self, reason: DeclarationError, found: Dict[str, str]) -> None:
        super().__init__(str(reason))
        self.found = found


def _resolved(value: Any, model: Any, where: str) -> Tuple[Any, Dict[str, str]]:
    """``value`` with its declared parameters read from ``model.model_config`` (a parameter's
    value, an object rebuilt with resolved arguments: a copy, its recorded ``__init__`` run
    again), and the texts ``config.pbtxt`` gave for them, by key; ``where`` names the codec
    for messages. A bad parameter raises its own error; an object that refuses the values,
    :class:`_Refused`."""
    if isinstance(value, ConfigParameter):
        resolved, text = value.resolve(model.model_config, model.model_name, where)
        return resolved, ({} if text is None else {value.key: text})
    if isinstance(value, FromInstance):
        return value.read(model), {}
    record = getattr(value, _RECORD, None)
    if not isinstance(record, tuple):
        return value, {}
    init, recorded = record
    arguments, found = {}, {}
    for name, argument in recorded.items():
        arguments[name], texts = _resolved(argument, model, where)
        found.update(texts)
    rebuilt = copy.copy(value)
    object.__setattr__(rebuilt, _RECORD, None)
    try:
        init(rebuilt, **arguments)
    except _Refused:
        raise
    except DeclarationError as exc:
        raise _Refused(exc, found) from None
    return rebuilt, found


def _resolved_codecs(model: Any, section: str) -> None:
    """Rebuild, on the instance, the codecs of ``inputs`` or ``outputs`` whose arguments are
    declared parameters."""
    codecs: Mapping[str, Any] = getattr(model, section)
    if not any(_is_declared(codec) for codec in codecs.values()):
        return
    rebuilt = {}
    for name, codec in codecs.items():
        where = f"an argument of {type(model).__name__}.{section}[{name!r}]"
        try:
            rebuilt[name], _ = _resolved(codec, model, where)
        except _Refused as exc:
            given = ", ".join(f"{key}={text!r}" for key, text in exc.found.items())
            raise DeclarationError(
                f"{model.model_name}: {section[:-1]} {name!r} cannot be built from the "
                f"config.pbtxt parameters {given or '(none given)'}: {exc}; fix them in "
                f"config.pbtxt"
            ) from None
    setattr(model, section, rebuilt)


# -- runtime knobs -----------------------------------------------------------------------------
def _threads(text: str) -> Optional[int]:
    if text.strip().lower() == "default":
        return None
    try:
        return positive_int(text)
    except ValueError:
        raise ValueError(
            "expected a positive number of threads, or 'default' (torch's own)"
        ) from None


def _cancellation(text: str) -> Any:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return boolean(text)
    except ValueError:
        raise ValueError("expected true, false or auto") from None


#: ``config.pbtxt`` keys overriding a runtime knob of ``tp.Model``: key -> (attribute, cast)
KNOBS: Dict[str, Tuple[str, Callable[[str], Any]]] = {
    "tritonpy.torch_threads": ("torch_threads", _threads),
    "tritonpy.tune_malloc": ("tune_malloc", boolean),
    "tritonpy.check_cancellation": ("check_cancellation", _cancellation),
}
_PREFIX = "tritonpy."


def _resolve_knobs(model: Any) -> None:
    parameters: Mapping[str, Any] = model.model_config.get("parameters") or {}
    unknown = [key for key in parameters if key.startswith(_PREFIX) and key not in KNOBS]
    if unknown:
        raise DeclarationError(
            f"{model.model_name}: config.pbtxt parameter {unknown[0]!r} is not a tritonpy "
            f"setting; the 'tritonpy.' keys are {sorted(KNOBS)} (fix the spelling or remove it)"
        )
    for key, (attribute, cast) in KNOBS.items():
        if key in parameters:
            value, _ = read_parameter(
                model.model_config,
                model.model_name,
                key,
                None,
                cast,
                None,
                declared_as=f"overrides {type(model).__name__}.{attribute}",
            )
            setattr(model, attribute, value)


def declared_parameters(cls: type) -> List[Tuple[str, ConfigParameter[Any]]]:
    """``(attribute, parameter)`` for every class attribute of ``cls`` (and its bases) that is
    a declared parameter, in definition order."""
    seen: Dict[str, ConfigParameter[Any]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, ConfigParameter):
                seen[name] = value
            else:
                seen.pop(name, None)  # a subclass replaced it with a plain value
    return list(seen.items())


def resolve_config_parameters(model: Any) -> None:
    """Resolve and validate the parameters ``model``'s class declares, from
    ``model.model_config``, setting the values on the instance: declared attributes, codecs
    with declared arguments (rebuilt), and the runtime knobs the ``tritonpy.*`` keys
    override. A model that declares none, in a configuration without those keys, is left as
    it is. Called by ``Model.initialize`` once ``model_config`` and ``model_name`` are set,
    before ``setup()``."""
    for attribute, parameter in declared_parameters(type(model)):
        value, _ = parameter.resolve(model.model_config, model.model_name)
        setattr(model, attribute, value)  # the instance's __dict__ wins over the descriptor
    _resolved_codecs(model, "inputs")
    _resolved_codecs(model, "outputs")
    _resolve_knobs(model)
