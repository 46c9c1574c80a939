"""pack_env's options: one typed options object, keyword arguments that change its fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonpy.envs import EnvError
from tritonpy.envs._pack import (
    BUILDERS,
    STUB_MODES,
    PackOptions,
    pack_env,
    parse_builder,
)


def test_keyword_arguments_are_the_options_fields(tmp_path: Path) -> None:
    # a keyword argument that is no PackOptions field is refused before anything is read
    with pytest.raises(TypeError, match=r"PackOptions: no option 'pyton'; expected one of spec, "):
        pack_env(tmp_path, pyton="3.10")


def test_closed_sets() -> None:
    assert BUILDERS == ("auto", "local", "conda")
    assert STUB_MODES == ("auto", "always", "never")
    assert parse_builder("conda") == "conda"
    with pytest.raises(EnvError, match=r"builder 'pip': expected one of auto, local, conda"):
        parse_builder("pip")


def test_unknown_builder_is_refused_naming_the_choices(tmp_path: Path) -> None:
    (tmp_path / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    with pytest.raises(EnvError, match=r"builder must be one of \('auto', 'local', 'conda'\)"):
        pack_env(tmp_path, PackOptions(builder="local"), builder="pip")  # type: ignore[arg-type]


def test_missing_config_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(EnvError, match=r"not a model directory: no config\.pbtxt"):
        pack_env(tmp_path, python="3.10")
