"""Finding templates: where they live (``$TRITONPY_TEMPLATES`` or the shipped
``model_templates/``), their names, descriptions and directories; the errors of the package."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List

from .._runtime.errors import ToolError
from .._tooling.model_dirs import CONFIG_FILE
from .._tooling.resources import ResourceNotFoundError, resource

#: environment variable naming a directory of templates (overrides the built-in lookup)
TEMPLATES_ENV = "TRITONPY_TEMPLATES"
#: the template ``tritonpy new NAME`` renders when no other is named
DEFAULT_TEMPLATE = "minimal"
#: what a model (and template) directory name may be
MODEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


class TemplateError(ToolError):
    """A template could not be found, read or rendered."""


class TemplateNotFoundError(TemplateError):
    """No template of that name (or no template directory at all)."""


class TemplateExistsError(TemplateError):
    """The target model directory exists and ``overwrite`` was not given."""


def templates_root() -> Path:
    """The directory holding the templates: ``$TRITONPY_TEMPLATES``, else the
    ``model_templates/`` shipped with tritonpy."""
    configured = os.environ.get(TEMPLATES_ENV)
    if not configured:
        try:
            return resource("model_templates")
        except ResourceNotFoundError as exc:
            raise TemplateNotFoundError(str(exc)) from exc
    root = Path(configured)
    if not root.is_dir():
        raise TemplateNotFoundError(
            f"template directory {root} not found: ${TEMPLATES_ENV} is {configured!r}, which is "
            f"not a directory; point it at a directory of templates, or unset it to use the "
            f"templates shipped with tritonpy"
        )
    return root


def list_templates() -> List[str]:
    """Names of the available templates (directories with a config.pbtxt), sorted."""
    root = templates_root()
    return sorted(p.name for p in root.iterdir() if (p / CONFIG_FILE).is_file())


def describe_template(name: str) -> str:
    """A one-line description of template ``name``: the first sentence of its README.md
    ('' when it has none).

    >>> describe_template("torch_model")                             # doctest: +SKIP
    'A small PyTorch MLP classifier served through DLPack; weights in `1/model.pt`.'
    """
    readme = template_dir(name) / "README.md"
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError:
        return ""
    paragraph: List[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and not paragraph:
            continue  # the title
        if not stripped:
            if paragraph:
                break
            continue
        paragraph.append(stripped)
    sentence = " ".join(paragraph)
    end = re.search(r"\.(\s|$)", sentence)
    return sentence[: end.start() + 1] if end else sentence


def template_dir(name: str) -> Path:
    """The directory of template ``name``."""
    path = templates_root() / name
    if not MODEL_NAME.match(name) or not (path / CONFIG_FILE).is_file():
        raise TemplateNotFoundError(
            f"no template named {name!r} in {templates_root()}; expected one of {list_templates()}"
        )
    return path


def check_model_name(name: str) -> None:
    """Refuse a name that cannot be a model directory (:class:`TemplateError`)."""
    if not isinstance(name, str) or not MODEL_NAME.match(name):
        raise TemplateError(
            f"model name {name!r} is not usable as a model directory: expected letters, "
            f"digits, '_', '-' or '.', not starting with '.' or '-'"
        )
