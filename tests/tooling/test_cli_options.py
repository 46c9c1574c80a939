"""Each command's options are declared once, on its entry point's options dataclass: every
field has a flag with help text, and the command's default is the library's."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

from tritonpy._tooling.cli_options import add_options, cli_default, options_from
from tritonpy._tooling.options import LIBRARY_DEFAULT, Flag, changed, declared_option, option
from tritonpy.cli import build_parser
from tritonpy.envs import PackOptions
from tritonpy.export import ExportOptions
from tritonpy.perf import PerfOptions, TuneOptions
from tritonpy.probe import ProbeOptions
from tritonpy.server import ServerOptions

#: command, the options dataclass its flags come from, the required arguments
COMMANDS: List[Tuple[str, type, List[str]]] = [
    ("pack-env", PackOptions, ["m"]),
    ("export", ExportOptions, ["repo", "out", "--triton-version", "24.10"]),
    ("serve", ServerOptions, ["repo"]),
    ("probe", ProbeOptions, []),
    ("perf", PerfOptions, ["model"]),
    ("tune", TuneOptions, ["model_dir"]),
]


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = action.choices[command]
    return found


def _declared_fields(cls: type, defaults: Any = None) -> Dict[str, Tuple[Any, Any]]:
    """Each declared field of ``cls`` (nested objects' fields too): (its Option, its CLI
    default), as the library declares them."""
    found: Dict[str, Tuple[Any, Any]] = {}
    for item in dataclasses.fields(cls):
        spec = declared_option(item)
        if spec is None:
            continue
        default = cli_default(item, spec, defaults)
        if dataclasses.is_dataclass(default):
            nested = _declared_fields(type(default), default)
            found.update({k: v for k, v in nested.items() if k not in spec.skip})
        else:
            found[item.name] = (spec, default)
    return found


@pytest.mark.parametrize(("command", "cls", "required"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_field_has_a_flag_with_help_and_the_library_default(
    command: str, cls: type, required: List[str]
) -> None:
    parser = _subparser(command)
    actions = {a.dest: a for a in parser._actions}
    parsed = vars(parser.parse_args(required))
    for name, (spec, default) in _declared_fields(cls).items():
        assert name in actions, f"{command}: field {name} has no flag"
        action = actions[name]
        assert action.option_strings and action.help, f"{command} {name}: a flag with help"
        assert "{default}" not in action.help
        if default is dataclasses.MISSING:
            assert action.required, f"{command} {name}: no library default, so required"
            continue
        shown = tuple(parsed[name]) if isinstance(parsed[name], list) else parsed[name]
        if spec.convert is not None:  # repeated texts made a mapping (perf's --input)
            shown = spec.convert(shown)
        assert shown == default, f"{command} {name}: CLI {shown!r} != library {default!r}"
        if spec.cli_default is LIBRARY_DEFAULT:
            assert default == _library_default(cls, name), f"{command} {name}"


def _library_default(cls: type, name: str) -> Any:
    """The default the library gives field ``name`` (of ``cls`` or of a nested object)."""
    made = _made(cls)
    for item in dataclasses.fields(cls):
        value = getattr(made, item.name, None)
        if item.name == name:
            return value
        if dataclasses.is_dataclass(value) and any(
            f.name == name for f in dataclasses.fields(value)
        ):
            return getattr(value, name)
    raise AssertionError(name)


def _made(cls: type) -> Any:
    required = {
        f.name: "24.10"
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    return cls(**required)


@pytest.mark.parametrize(("command", "cls", "required"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_the_parsed_defaults_build_the_library_default_object(
    command: str, cls: type, required: List[str]
) -> None:
    parsed = _subparser(command).parse_args(required)
    built = options_from(parsed, cls)
    library = _made(cls)
    overridden = {n for n, (spec, _) in _declared_fields(cls).items() if spec.cli_default
                  is not LIBRARY_DEFAULT}  # fmt: skip
    for item in dataclasses.fields(cls):
        if item.name not in overridden:
            assert getattr(built, item.name) == getattr(library, item.name), item.name


# -------------------------------------------------------------- the generator on its own
@dataclasses.dataclass(frozen=True)
class _Example:
    level: int = option(4, help="level (default {default})", metavar="N")
    mode: Optional[str] = option(
        None, flags=["--env"], help="a file", alternatives=(Flag(("--reqs",), "reqs", "F"),)
    )
    keep: bool = option(True, flags=["--no-keep"], help="drop it")
    names: Tuple[str, ...] = option((), flags=["--name", "-n"], help="names (repeatable)")
    size: int = option(0, help="size", convert=lambda v: v * 2)
    hook: Optional[Sequence[int]] = dataclasses.field(default=None)


def test_the_generated_options_parse_into_the_options_object() -> None:
    parser = argparse.ArgumentParser()
    add_options(parser, _Example)
    assert "level (default 4)" in parser.format_help()
    args = parser.parse_args(["--reqs", "r.txt", "--no-keep", "-n", "a", "--name", "b"])
    built = options_from(args, _Example, hook=[1])
    assert built == _Example(4, "r.txt", False, ("a", "b"), 0, [1])
    assert options_from(parser.parse_args(["--size", "3"]), _Example).size == 6
    with pytest.raises(SystemExit):
        parser.parse_args(["--env", "a", "--reqs", "b"])  # alternatives exclude each other


def test_changed_replaces_fields_and_refuses_unknown_names() -> None:
    assert changed(_Example, None, {"level": 2}).level == 2
    assert changed(_Example, _Example(level=3), {"keep": False}) == _Example(3, keep=False)
    with pytest.raises(TypeError, match=r"_Example: no option 'levl'; expected one of level, "):
        changed(_Example, None, {"levl": 1})


def test_keywords_of_a_nested_options_object_change_it() -> None:
    # tune(model, duration=0.5, max_minutes=1): duration is a field of TuneOptions.measure
    options = changed(TuneOptions, None, {"duration": 0.5, "max_minutes": 1.0})
    assert options.max_minutes == 1.0 and options.measure.duration == 0.5
    assert options.measure.warmup == TuneOptions().measure.warmup == 0.5  # the rest kept
    with pytest.raises(TypeError, match=r"TuneOptions: no option 'durations'"):
        changed(TuneOptions, None, {"durations": 0.5})
