"""Ready-made model directories (the repository's ``model_templates/``) and tools that render
them into a model repository under new names.

Templates: ``image_preprocess``, ``classification_postprocess``, ``detection_postprocess``,
``torch_model``, ``ensemble_classifier``, ``text_stream`` (a streaming model) and
``bls_router`` (a BLS pipeline; see each one's README.md).

A template may bring the models it calls: each ``members/<role>/`` directory of a template is
rendered with it as ``<name>_<role>``, and a config.pbtxt parameter of the template whose value
is ``<template>_<role>`` becomes ``<name>_<role>`` (``tritonpy new reviews --template
bls_router`` writes ``reviews``, ``reviews_short`` and ``reviews_long``).

Example, a grayscale 8x8 preprocess model in ``model_repository/``::

    from pathlib import Path
    from tritonpy.templates import render_template

    render_template("image_preprocess", "my_preprocess", Path("model_repository"),
                    parameters={"size": "8x8", "color": "GRAY", "mean": "0.5", "std": "0.5"})

the ensemble_classifier template with its three members, ready to check and serve (the
classifier's weights untrained unless ``train=True``)::

    from tritonpy.templates import render_classifier_ensemble

    rendered = render_classifier_ensemble("digits", Path("model_repository"))
    rendered.models      # ['digits', 'digits_preprocess', 'digits_classifier', ...]

and the whole digits ensemble with trained weights and the held-out digits to send::

    from tritonpy.templates import render_digits_ensemble

    digits = render_digits_ensemble(Path("model_repository"))
    digits.ensemble, digits.images[0], digits.labels[0]   # "digits", PNG bytes, 7

Templates are looked up in the directory named by ``$TRITONPY_TEMPLATES`` when set, otherwise
among the files shipped with tritonpy (the wheel carries ``model_templates/``; a source
checkout or an editable install reads the repository's). Rendering needs
``tritonclient[grpc]`` (``pip install 'tritonpy[config]'``); the ensemble's classifier
weights need torch, and training them scikit-learn and OpenCV as well.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ._runtime._optional import require
from ._runtime.errors import ToolError
from ._tooling.pbtxt import ConfigError, format_config, load_config
from ._tooling.resources import ResourceNotFoundError, resource

__all__ = [
    "ENSEMBLE_TEMPLATE",
    "TEMPLATES_ENV",
    "ClassifierEnsemble",
    "DigitsEnsemble",
    "TemplateError",
    "TemplateExistsError",
    "TemplateNotFoundError",
    "describe_template",
    "digits_holdout",
    "list_templates",
    "render_classifier_ensemble",
    "render_digits_ensemble",
    "render_template",
    "template_dir",
    "templates_root",
]

#: environment variable naming a directory of templates (overrides the built-in lookup)
TEMPLATES_ENV = "TRITONPY_TEMPLATES"
#: the ensemble template whose members render_classifier_ensemble renders with it
ENSEMBLE_TEMPLATE = "ensemble_classifier"
#: the directory of a template holding the models rendered with it, one per role
_MEMBERS_DIR = "members"

_SKIPPED_DIRS = ("tests", "__pycache__", ".pytest_cache", _MEMBERS_DIR)
_SKIPPED_FILES = ("README*", "train_*.py", "*.pyc")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
ParameterValue = Union[str, int, float]


class TemplateError(ToolError):
    """A template could not be found, read or rendered."""


class TemplateNotFoundError(TemplateError):
    """No template of that name (or no template directory at all)."""


class TemplateExistsError(TemplateError):
    """The target model directory exists and ``overwrite`` was not given."""


# -- finding templates -----------------------------------------------------------------------


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
    return sorted(p.name for p in root.iterdir() if (p / "config.pbtxt").is_file())


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
    if not _NAME.match(name) or not (path / "config.pbtxt").is_file():
        raise TemplateNotFoundError(
            f"no template named {name!r} in {templates_root()}; expected one of {list_templates()}"
        )
    return path


# -- rendering -------------------------------------------------------------------------------


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
    (the file is parsed and printed with protobuf). Tests, ``__pycache__``, training scripts
    and READMEs are not copied. The template's members (``members/<role>/``) are rendered
    beside it as ``name_<role>`` (see the module documentation). An existing model directory
    is refused unless ``overwrite``; each new directory appears complete or not at all.
    """
    source = template_dir(template)
    _check_name(name)
    members = _members(source)
    renamed = {f"{template}_{role}": f"{name}_{role}" for role in members}
    for model in (name, *renamed.values()):
        _check_name(model)
        if (Path(repo) / model).exists() and not overwrite:
            raise TemplateExistsError(
                f"cannot render template {template!r} as {name!r}: {Path(repo) / model} "
                f"already exists; choose another name, remove it, or pass overwrite=True "
                f"(--force on the command line)"
            )
    config = _read_config(source / "config.pbtxt")
    config.name = name
    for entry in config.parameters.values():
        entry.string_value = renamed.get(entry.string_value, entry.string_value)
    for key, value in (parameters or {}).items():
        config.parameters[key].string_value = _parameter_text(template, key, value)
    if models:
        _rename_steps(template, config, models)
    for role, member in members.items():
        member_config = _read_config(member / "config.pbtxt")
        member_config.name = f"{name}_{role}"
        _write_model(template, member, member_config, Path(repo) / f"{name}_{role}")
    return _write_model(template, source, config, Path(repo) / name)


def _members(source: Path) -> Dict[str, Path]:
    """Role -> directory of the models a template brings (``members/<role>/``)."""
    folder = source / _MEMBERS_DIR
    if not folder.is_dir():
        return {}
    return {
        path.name: path
        for path in sorted(folder.iterdir())
        if (path / "config.pbtxt").is_file() and _NAME.match(path.name)
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
        (fresh / "config.pbtxt").write_text(text, encoding="utf-8")
        if target.exists():
            target.rename(staging / "previous")
        fresh.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise TemplateError(
            f"model name {name!r} is not usable as a model directory: expected letters, "
            f"digits, '_', '-' or '.', not starting with '.' or '-'"
        )


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
        _check_name(new)
    for step in steps:
        step.model_name = models.get(step.model_name, step.model_name)


def _read_config(path: Path) -> Any:
    try:
        return load_config(path)
    except ConfigError as exc:
        raise TemplateError(f"template configuration unusable: {exc}; fix the template") from None


# -- the digits ensemble ---------------------------------------------------------------------


@dataclass(frozen=True)
class DigitsEnsemble:
    """What :func:`render_digits_ensemble` rendered, and what to send to it.

    ``images`` are the held-out digits (never trained on) as PNG bytes, ``labels`` their true
    digits; ``holdout_accuracy`` is the trained network's accuracy on them, measured in torch.
    """

    repository: Path
    ensemble: str
    preprocess: str
    classifier: str
    postprocess: str
    holdout_accuracy: float
    images: List[bytes] = field(repr=False)
    labels: List[int] = field(repr=False)

    @property
    def models(self) -> Dict[str, str]:
        """Role -> model name, the ensemble included."""
        return {
            "ensemble": self.ensemble,
            "preprocess": self.preprocess,
            "classifier": self.classifier,
            "postprocess": self.postprocess,
        }


@dataclass(frozen=True)
class ClassifierEnsemble:
    """What :func:`render_classifier_ensemble` rendered: the ensemble's directory, its member
    model directories by role (``preprocess``, ``classifier``, ``postprocess``), whether the
    classifier's weights were trained, and their held-out accuracy when they were."""

    ensemble: Path
    members: Dict[str, Path]
    trained: bool
    holdout_accuracy: Optional[float] = None

    @property
    def models(self) -> List[str]:
        """The model names, the ensemble first."""
        return [self.ensemble.name, *(path.name for path in self.members.values())]

    @property
    def weights(self) -> Path:
        """The classifier's ``model.pt``."""
        return self.members["classifier"] / "1" / "model.pt"


def render_classifier_ensemble(
    name: str,
    repo: Union[str, os.PathLike[str]],
    *,
    train: bool = False,
    top_k: int = 3,
    epochs: int = 300,
    overwrite: bool = False,
) -> ClassifierEnsemble:
    """Render the ensemble_classifier template as ``name`` together with the members its
    steps run, so that the repository checks clean and serves: ``{name}_preprocess``
    (image_preprocess set for 8x8 grayscale), ``{name}_classifier`` (torch_model) and
    ``{name}_postprocess`` (classification_postprocess, labels "0".."9", top ``top_k``).

    The classifier gets a ``model.pt``: the network's seeded initial weights (valid, loads
    and answers, but its classes are arbitrary; needs torch), or with ``train`` weights
    trained on scikit-learn's digits (a few seconds; needs torch, scikit-learn, OpenCV).
    Nothing is written when one of the four directories exists and ``overwrite`` is not
    given.

    Example::

        rendered = render_classifier_ensemble("digits", "model_repository", train=True)
        rendered.holdout_accuracy      # about 0.97
    """
    repo = Path(repo)
    roles = {
        "preprocess": f"{name}_preprocess",
        "classifier": f"{name}_classifier",
        "postprocess": f"{name}_postprocess",
    }
    for model in (name, *roles.values()):
        _check_name(model)
        if (repo / model).exists() and not overwrite:
            raise TemplateExistsError(
                f"cannot render the {ENSEMBLE_TEMPLATE} ensemble {name!r} into {repo}: "
                f"{repo / model} already exists; choose another name, remove it, or pass "
                f"overwrite=True (--force on the command line)"
            )
    trainer = _digits_trainer(train=train)
    # weights first, into a scratch directory: an interrupted training leaves no model behind
    repo.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{name}.weights-", dir=repo))
    try:
        accuracy = _write_weights(trainer, scratch / "model.pt", train=train, epochs=epochs)
        members = _render_members(trainer, roles, repo, scratch / "model.pt", top_k, overwrite)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    steps = dict(zip(_template_steps(), roles.values()))
    ensemble = render_template(ENSEMBLE_TEMPLATE, name, repo, models=steps, overwrite=overwrite)
    return ClassifierEnsemble(ensemble, members, train, accuracy)


def _write_weights(trainer: Any, path: Path, *, train: bool, epochs: int) -> Optional[float]:
    if train:
        return float(trainer.train(path, epochs=epochs))
    trainer.untrained(path)
    return None


def _render_members(
    trainer: Any,
    roles: Mapping[str, str],
    repo: Path,
    weights: Path,
    top_k: int,
    overwrite: bool,
) -> Dict[str, Path]:
    members = {
        "preprocess": render_template(
            "image_preprocess",
            roles["preprocess"],
            repo,
            parameters=trainer.PREPROCESS_PARAMETERS,
            overwrite=overwrite,
        ),
        "classifier": render_template(
            "torch_model", roles["classifier"], repo, overwrite=overwrite
        ),
        "postprocess": render_template(
            "classification_postprocess",
            roles["postprocess"],
            repo,
            parameters={"top_k": top_k},
            overwrite=overwrite,
        ),
    }
    os.replace(weights, members["classifier"] / "1" / "model.pt")
    labels = "\n".join(trainer.LABELS) + "\n"
    (members["postprocess"] / "labels.txt").write_text(labels, encoding="utf-8")
    return members


def _template_steps() -> List[str]:
    """The model names of the ensemble template's steps, in order (preprocess, classifier,
    postprocess)."""
    config = _read_config(template_dir(ENSEMBLE_TEMPLATE) / "config.pbtxt")
    return [step.model_name for step in config.ensemble_scheduling.step]


def render_digits_ensemble(
    repo: Union[str, os.PathLike[str]],
    *,
    prefix: str = "digits",
    top_k: int = 3,
    epochs: int = 300,
    overwrite: bool = False,
) -> DigitsEnsemble:
    """Render the digits classifier into ``repo``: :func:`render_classifier_ensemble` named
    ``prefix`` with trained weights, plus the held-out digits to send to it. IMAGE (PNG
    bytes) in; LABELS, SCORES, CLASS_IDS (top ``top_k``) out.

    Nothing is written when one of the four model directories exists and ``overwrite`` is
    not given.
    """
    rendered = render_classifier_ensemble(
        prefix, repo, train=True, top_k=top_k, epochs=epochs, overwrite=overwrite
    )
    images, labels = _digits_trainer(train=True).holdout()
    return DigitsEnsemble(
        repository=Path(repo),
        ensemble=prefix,
        preprocess=rendered.members["preprocess"].name,
        classifier=rendered.members["classifier"].name,
        postprocess=rendered.members["postprocess"].name,
        holdout_accuracy=float(rendered.holdout_accuracy or 0.0),
        images=list(images),
        labels=[int(label) for label in labels],
    )


def digits_holdout() -> Tuple[List[bytes], List[int]]:
    """The held-out digits of the training split, as PNG bytes, and their labels."""
    images, labels = _digits_trainer(train=True).holdout()
    return list(images), [int(label) for label in labels]


def _digits_trainer(*, train: bool) -> Any:
    """The torch_model template's train_digits.py, imported by path; first checks that what
    it needs is installed (torch; for training and the held-out images also scikit-learn and
    OpenCV)."""
    if train:
        require("torch", "sklearn", "cv2", feature="training the digits classifier")
    else:
        require("torch", feature="the ensemble_classifier template's classifier weights")
    return _load_trainer()


@cache
def _load_trainer() -> Any:
    path = template_dir("torch_model") / "train_digits.py"
    spec = importlib.util.spec_from_file_location("tritonpy_template_train_digits", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise TemplateNotFoundError(f"{path} not found; the torch_model template is incomplete")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
