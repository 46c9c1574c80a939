"""A command's options generated from an entry point's options dataclass: every field declared
with :func:`~tritonpy._tooling.options.option` becomes one argparse option (its flags, help,
default, type and choices from the declaration and the annotation), and the parsed options
become the options object again, so the library and the CLI cannot disagree.

- ``bool``: a switch (``--force``; ``--no-pack`` when the default is true);
- ``Literal[...]``: its values are the choices; ``int``/``float``: parsed as such;
- ``Tuple[X, ...]``: repeatable (``action="append"``), a tuple in the options object;
- a field holding a nested options dataclass: its own fields, defaults from the nested
  default object.

Example::

    add_options(parser, PackOptions)
    options = options_from(args, PackOptions)       # PackOptions(python="3.10", ...)
"""

from __future__ import annotations

import argparse
import collections.abc
import dataclasses
import sys
import typing
from typing import Any, Dict, Mapping, Sequence, Tuple, Type, TypeVar, Union

from .options import LIBRARY_DEFAULT, Option, declared_option

T = TypeVar("T")

#: where options are declared: a parser or one of its groups
Options = argparse._ActionsContainer

_NONE = type(None)


def add_options(
    parser: argparse.ArgumentParser,
    cls: type,
    *,
    defaults: Any = None,
    skip: Sequence[str] = (),
) -> None:
    """Declare on ``parser`` an option for each declared field of dataclass ``cls`` (not in
    ``skip``); ``defaults`` is an instance whose values are the defaults (a nested object's)."""
    groups: Dict[str, Options] = {}
    for item, spec in _declared(cls, skip):
        default = cli_default(item, spec, defaults)
        if dataclasses.is_dataclass(default):
            add_options(parser, type(default), defaults=default, skip=spec.skip)
            continue
        where: Options = parser
        if spec.group is not None:
            if spec.group not in groups:
                groups[spec.group] = parser.add_argument_group(spec.group)
            where = groups[spec.group]
        _add(where, item.name, spec, _annotation(cls, item), default)


def options_from(
    args: argparse.Namespace,
    cls: Type[T],
    *,
    defaults: Any = None,
    skip: Sequence[str] = (),
    **extra: Any,
) -> T:
    """The ``cls`` object the parsed ``args`` say (the fields :func:`add_options` declared),
    with ``extra`` for the library-only fields the command sets itself."""
    values: Dict[str, Any] = {}
    for item, spec in _declared(cls, skip):
        default = cli_default(item, spec, defaults)
        if dataclasses.is_dataclass(default):
            values[item.name] = options_from(args, type(default), defaults=default, skip=spec.skip)
            continue
        value = getattr(args, item.name)
        if isinstance(value, list):
            value = tuple(value)
        values[item.name] = spec.convert(value) if spec.convert is not None else value
    values.update(extra)
    if defaults is not None:  # a nested object: the fields left off the line keep its values
        return dataclasses.replace(defaults, **values)  # type: ignore[no-any-return]
    return cls(**values)


def _declared(cls: type, skip: Sequence[str]) -> Sequence[Tuple[dataclasses.Field[Any], Option]]:
    found = []
    for item in dataclasses.fields(cls):
        spec = declared_option(item)
        if spec is not None and item.name not in skip:
            found.append((item, spec))
    return found


def cli_default(item: dataclasses.Field[Any], spec: Option, defaults: Any = None) -> Any:
    """The default of field ``item`` on the command line: the declared ``cli_default``, else
    the value in ``defaults``, else the field's own default (``MISSING``: required)."""
    if spec.cli_default is not LIBRARY_DEFAULT:
        return spec.cli_default
    if defaults is not None:
        return getattr(defaults, item.name)
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return item.default


def _annotation(cls: type, item: dataclasses.Field[Any]) -> Any:
    """The field's type (annotations are text under ``from __future__ import annotations``)."""
    if not isinstance(item.type, str):
        return item.type
    namespace = dict(vars(sys.modules[cls.__module__]))
    return eval(item.type, namespace)  # what typing.get_type_hints does, for one field


def _bare(annotation: Any) -> Any:
    """``annotation`` without ``Optional``."""
    if typing.get_origin(annotation) is Union:
        rest = [arg for arg in typing.get_args(annotation) if arg is not _NONE]
        return rest[0] if len(rest) == 1 else str
    return annotation


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def _add(where: Options, name: str, spec: Option, annotation: Any, default: Any) -> None:
    """One argparse option for field ``name``."""
    kind = _bare(annotation)
    flags = spec.flags or ("--" + name.replace("_", "-"),)
    settings: Dict[str, Any] = {
        "dest": name,
        "help": spec.help.replace("{default}", _shown(default)),
    }
    if default is dataclasses.MISSING:
        settings["required"] = True
    else:
        # argparse appends to a list (a tuple cannot grow); a mapping is built from the texts
        settings["default"] = [] if isinstance(default, Mapping) else default
        if isinstance(default, tuple):
            settings["default"] = list(default)
    if kind is bool:
        settings["action"] = "store_false" if default else "store_true"
    else:
        settings.update(_typed(kind, spec))
    if not spec.alternatives:
        where.add_argument(*flags, **settings)
        return
    exclusive = where.add_mutually_exclusive_group()
    exclusive.add_argument(*flags, **settings)
    for other in spec.alternatives:
        changed = {**settings, "help": other.help, "metavar": other.metavar}
        exclusive.add_argument(*other.names, **changed)


def _typed(kind: Any, spec: Option) -> Dict[str, Any]:
    """metavar, type, choices and action of an option that takes a value."""
    settings: Dict[str, Any] = {"metavar": spec.metavar}
    origin = typing.get_origin(kind)
    if spec.parse is not None:
        settings["type"] = spec.parse
    elif origin is tuple and typing.get_args(kind)[-1:] == (Ellipsis,):
        settings["action"] = "append"
        settings.update(_typed(typing.get_args(kind)[0], dataclasses.replace(spec, metavar=None)))
        settings["metavar"] = spec.metavar
    elif origin is collections.abc.Mapping:  # repeated texts, made a mapping by ``convert``
        settings["action"] = "append"
    elif origin is typing.Literal:
        settings["choices"] = typing.get_args(kind)
    elif kind in (int, float):
        settings["type"] = kind
    if spec.choices is not None:
        settings["choices"] = spec.choices
    return {key: value for key, value in settings.items() if value is not None}
