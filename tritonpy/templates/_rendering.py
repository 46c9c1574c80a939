"""Rendering a template into a model repository under a new name, with its members."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from .._tooling.model_dirs import CONFIG_FILE
from .._tooling.pbtxt import ConfigError, format_config, load_config
from ._finding import (
    MODEL_NAME,
    TemplateError,
    TemplateExistsError,
    check_model_name,
    template_dir,
)

#: the directory of a template holding the models rendered with it, one per role
MEMBERS_DIR = "members"

_SKIPPED_DIRS = ("tests", "__pycache__", ".pytest_cache", MEMBERS_DIR)
_SKIPPED_FILES = ("README*", "train_*.py", "*.pyc")
ParameterValue = Union[str, int, float]


def render_template(
    template: str,
    name: str,
    repo: Union[str, os.PathLike[str]],
    *,
    parameters: Optional[Mapping[str, ParameterValue]] = None,
    models: Optional[Mapping[str, str]] = None,
    overwrite: bool = False,
) -> Path:
    """Copy ``template`` into ``repo/name`` and return that model directory.

    In the copy's config.pbtxt, ``name`` becomes ``name``, ``parameters`` are set (added or
    replaced, values as strings) and, for an ensemble, ``models`` renames the steps'
    ``model_name`` (``{"old name": "new name"}``). Every other field is kept; comments are not
    (the file is parsed and printed with protobuf). The ``tests/`` folder, ``__pycache__``,
    training scripts and READMEs are not copied; a test beside config.pbtxt named
    ``test_<template>.py`` (the minimal template's) is, as ``test_<name>.py``. The template's
    members (``members/<role>/``) are rendered beside it as ``name_<role>`` (see the module
    documentation). An existing model directory is refused unless ``overwrite``; each new
    directory appears complete or not at all.
    """
    source = template_dir(template)
    check_model_name(name)
    members = _members(source)
    renamed = {f"{template}_{role}": f"{name}_{role}" for role in members}
    what = f"template {template!r} as {name!r}"
    check_targets(what, Path(repo), [name, *renamed.values()], overwrite=overwrite)
    config = read_config(source / CONFIG_FILE)
    config.name = name
    for entry in config.parameters.values():
        entry.string_value = renamed.get(entry.string_value, entry.string_value)
    for key, value in (parameters or {}).items():
        config.parameters[key].string_value = _parameter_text(template, key, value)
    if models:
        _rename_steps(template, config, models)
    for role, member in members.items():
        member_config = read_config(member / CONFIG_FILE)
        member_config.name = f"{name}_{role}"
        _write_model(template, member, member_config, Path(repo) / f"{name}_{role}")
    return _write_model(template, source, config, Path(repo) / name)


def check_targets(what: str, repo: Path, models: Sequence[str], *, overwrite: bool) -> None:
    """Refuse unusable model names, and existing model directories unless ``overwrite``
    (``what`` says what was being rendered, for the message)."""
    for model in models:
        check_model_name(model)
        if (repo / model).exists() and not overwrite:
            raise TemplateExistsError(
                f"cannot render {what}: {repo / model} already exists; choose another name, "
                f"remove it, or pass overwrite=True (--force on the command line)"
            )


def _members(source: Path) -> Dict[str, Path]:
    """Role -> directory of the models a template brings (``members/<role>/``)."""
    folder = source / MEMBERS_DIR
    if not folder.is_dir():
        return {}
    return {
        path.name: path
        for path in sorted(folder.iterdir())
        if (path / CONFIG_FILE).is_file() and MODEL_NAME.match(path.name)
    }


def _write_model(template: str, source: Path, config: Any, target: Path) -> Path:
    """Copy the model directory ``source`` to ``target`` with ``config`` as its config.pbtxt;
    ``target`` appears complete or not at all."""
    name = target.name
    text = f"# Rendered by tritonpy.templates from the template {template!r}.\n" + format_config(
        config
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.rendering-", dir=target.parent))
    try:
        fresh = staging / "model"
        shutil.copytree(
            source, fresh, ignore=shutil.ignore_patterns(*_SKIPPED_DIRS, *_SKIPPED_FILES)
        )
        (fresh / CONFIG_FILE).write_text(text, encoding="utf-8")
        _rename_own_test(fresh, template, name)
        if target.exists():
            target.rename(staging / "previous")
        fresh.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def own_test_name(model: str) -> str:
    """The file name of the test a template brings beside its config.pbtxt, for a model named
    ``model`` (``test_<model>.py``, the name's other characters as ``_``): one name per model,
    so that pytest can collect the tests of several rendered models in one run."""
    return "test_" + "".join(c if c.isalnum() else "_" for c in model) + ".py"


def _rename_own_test(model_dir: Path, template: str, name: str) -> None:
    """A template's own test (``test_<template>.py`` beside its config.pbtxt) is rendered
    with the model as ``test_<name>.py``."""
    own = model_dir / own_test_name(template)
    if own.is_file():
        own.rename(model_dir / own_test_name(name))


def _parameter_text(template: str, key: str, value: Any) -> str:
    if not isinstance(key, str) or not key:
        raise TemplateError(f"template {template!r}: parameter keys must be non-empty strings")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TemplateError(
            f"template {template!r}: parameter {key!r} must be a string or a number, got "
            f"{type(value).__name__} {value!r}; config.pbtxt parameters are strings"
        )
    return str(value)


def _rename_steps(template: str, config: Any, models: Mapping[str, str]) -> None:
    steps = list(config.ensemble_scheduling.step)
    present = [step.model_name for step in steps]
    unknown = sorted(set(models) - set(present))
    if not steps or unknown:
        raise TemplateError(
            f"template {template!r}: cannot rename models {unknown or sorted(models)}: its "
            f"ensemble steps use {present}; pass models={{old: new}} with those names"
        )
    for new in models.values():
        check_model_name(new)
    for step in steps:
        step.model_name = models.get(step.model_name, step.model_name)


def read_config(path: Path) -> Any:
    """A template's parsed config.pbtxt (:class:`TemplateError` when unusable)."""
    try:
        return load_config(path)
    except ConfigError as exc:
        raise TemplateError(f"template configuration unusable: {exc}; fix the template") from None
