"""Options declared once: each field of an entry point's options dataclass carries its
command-line flag and help in its metadata (:func:`option`), so the library's default, the
CLI's default and the help text that states it are one fact; and how error messages name the
caller's options: ``--http-port 8000`` for a user of ``tritonpy serve``, ``http_port=8000``
for a caller of :class:`~tritonpy.server.TritonServer`.

Example::

    @dataclass(frozen=True)
    class GreetOptions:
        times: int = option(1, help="how often (default {default})")
        shout: bool = option(False, help="in capitals")
        on_line: Optional[Callable[[str], None]] = library_only(None)

    changed(GreetOptions, None, {"times": 3})        # GreetOptions(times=3, ...)
    OptionNames(cli=True).option("http_port", "PORT")     # '--http-port PORT'
    OptionNames().option("http_port")                     # 'http_port='
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Type, TypeVar

T = TypeVar("T")


class _LibraryDefault:
    def __repr__(self) -> str:
        return "LIBRARY_DEFAULT"


#: ``Option.cli_default`` when the command's default is the library's (nearly always)
LIBRARY_DEFAULT: Any = _LibraryDefault()

#: the metadata key of a field's :class:`Option` (``None``: the field has no flag)
OPTION_KEY = "tritonpy.option"


@dataclass(frozen=True)
class Flag:
    """Another spelling of an option, with its own help (``--requirements`` beside ``--env``,
    both setting ``spec``): the spellings are mutually exclusive on the command line."""

    names: Tuple[str, ...]
    help: str
    metavar: Optional[str] = None


@dataclass(frozen=True)
class Option:
    """How one options field appears on the command line.

    - ``help``: its help text; ``{default}`` in it is replaced by the CLI's default, so the
      help cannot state another default than the one in effect;
    - ``flags``: its spellings (default ``--<name-with-dashes>``); a bool whose default is
      true is a ``--no-...`` switch that turns it off;
    - ``metavar``, ``choices`` (default: the values of a ``Literal`` annotation), ``parse``
      (the argparse ``type``; default from the annotation), ``convert`` (applied to the
      parsed value when the options object is built: a list of texts into a mapping);
    - ``cli_default``: the command's own default where it deliberately differs from the
      library's (``serve`` checks the repository first, a ``TritonServer`` does not);
    - ``alternatives``: other spellings with their own help, mutually exclusive;
    - ``group``: the title of the help section it is listed under;
    - ``skip``: for a field holding a nested options object, its fields left off this
      command's line.
    """

    help: str
    flags: Tuple[str, ...] = ()
    metavar: Optional[str] = None
    choices: Optional[Sequence[Any]] = None
    parse: Optional[Callable[[str], Any]] = None
    convert: Optional[Callable[[Any], Any]] = None
    cli_default: Any = LIBRARY_DEFAULT
    alternatives: Tuple[Flag, ...] = ()
    group: Optional[str] = None
    skip: Tuple[str, ...] = ()


def option(
    default: Any = MISSING,
    *,
    help: str,
    default_factory: Any = MISSING,
    flags: Sequence[str] = (),
    **details: Any,
) -> Any:
    """A dataclass field with its default and its command-line declaration (the keyword
    arguments of :class:`Option`). Without a default the option is required.

    Example::

        compress_level: int = option(4, help="gzip level (default {default})", metavar="0-9")
    """
    spec = Option(help=help, flags=tuple(flags), **details)
    return field(default=default, default_factory=default_factory, metadata={OPTION_KEY: spec})


def library_only(default: Any = MISSING, *, default_factory: Any = MISSING) -> Any:
    """A dataclass field that only library callers set (a callback, a test hook): no flag."""
    return field(default=default, default_factory=default_factory, metadata={OPTION_KEY: None})


def declared_option(item: dataclasses.Field[Any]) -> Optional[Option]:
    """The :class:`Option` of dataclass field ``item``; ``None`` for a library-only one."""
    spec = item.metadata.get(OPTION_KEY)
    return spec if isinstance(spec, Option) else None


def changed(cls: Type[T], options: Optional[T], changes: Mapping[str, Any]) -> T:
    """``options`` (default ``cls()``) with the fields named in ``changes`` replaced: how an
    entry point takes both an options object and keyword arguments. A name that is a field of
    a nested options object (``TuneOptions.measure``'s ``duration``) changes that object; one
    that is no field raises TypeError listing the fields, as a misspelled keyword does.

    Example::

        changed(PackOptions, None, {"python": "3.10"}).python    # '3.10'
    """
    names = [item.name for item in dataclasses.fields(cls)]  # type: ignore[arg-type]
    own = {name: value for name, value in changes.items() if name in names}
    rest = {name: value for name, value in changes.items() if name not in names}
    made: Any = cls(**own) if options is None else dataclasses.replace(options, **own)  # type: ignore[type-var]
    for name in names if rest else ():
        nested = getattr(made, name)
        if dataclasses.is_dataclass(nested) and not isinstance(nested, type):
            inner = {item.name for item in dataclasses.fields(nested)}
            routed = {key: rest.pop(key) for key in list(rest) if key in inner}
            if routed:
                made = dataclasses.replace(made, **{name: dataclasses.replace(nested, **routed)})
    if rest:
        raise TypeError(
            f"{cls.__name__}: no option {', '.join(map(repr, sorted(rest)))}; "
            f"expected one of {', '.join(names)}"
        )
    return made  # type: ignore[no-any-return]


def cli_flags(cls: type) -> Dict[str, str]:
    """Each declared field of options dataclass ``cls`` and its first flag."""
    flags: Dict[str, str] = {}
    for item in dataclasses.fields(cls):
        spec = declared_option(item)
        if spec is not None:
            flags[item.name] = (spec.flags or ("--" + item.name.replace("_", "-"),))[0]
    return flags


@dataclass(frozen=True)
class OptionNames:
    """Names options the way the caller typed them: CLI flags when ``cli`` is true (``flags``
    maps the keyword arguments whose flag is not simply ``--<name-with-dashes>``), Python
    keyword arguments otherwise."""

    cli: bool = False
    flags: Mapping[str, str] = field(default_factory=dict)

    def option(self, name: str, value: str = "") -> str:
        """``name`` (a keyword argument of TritonServer) as the caller writes it, with an
        optional placeholder ``value``."""
        if self.cli:
            flag = self.flags.get(name, "--" + name.replace("_", "-"))
            return f"{flag} {value}" if value else flag
        return f"{name}={value}"

    def options(self, *names: str) -> str:
        """Several options, comma-separated: ``--http-port, --grpc-port``."""
        return ", ".join(self.option(name) for name in names)


PYTHON_NAMES = OptionNames(cli=False)
#: flags spelled ``--<name-with-dashes>`` (a command's own names: ``OptionNames(cli=True,
#: flags=cli_flags(ItsOptions))``, as ``tritonpy serve``'s ``SERVE_NAMES``)
CLI_NAMES = OptionNames(cli=True)
