"""The ensemble_classifier template rendered with its members, and the digits classifier: the
same ensemble with weights trained on scikit-learn's digits plus the held-out digits to send."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .._runtime._optional import require
from .._tooling.model_dirs import CONFIG_FILE
from ._finding import TemplateNotFoundError, template_dir
from ._rendering import check_targets, read_config, render_template

#: the ensemble template whose members render_classifier_ensemble renders with it
ENSEMBLE_TEMPLATE = "ensemble_classifier"
#: the template each member of that ensemble is rendered from, by role, in step order
MEMBER_TEMPLATES: Dict[str, str] = {
    "preprocess": "image_preprocess",
    "classifier": "torch_model",
    "postprocess": "classification_postprocess",
}
MEMBER_ROLES: Tuple[str, ...] = tuple(MEMBER_TEMPLATES)


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
        return {"ensemble": self.ensemble, **{role: getattr(self, role) for role in MEMBER_ROLES}}


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
    roles = {role: f"{name}_{role}" for role in MEMBER_ROLES}
    what = f"the {ENSEMBLE_TEMPLATE} ensemble {name!r} into {repo}"
    check_targets(what, repo, [name, *roles.values()], overwrite=overwrite)
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
    parameters = {"preprocess": trainer.PREPROCESS_PARAMETERS, "postprocess": {"top_k": top_k}}
    members = {
        role: render_template(
            template, roles[role], repo, parameters=parameters.get(role), overwrite=overwrite
        )
        for role, template in MEMBER_TEMPLATES.items()
    }
    os.replace(weights, members["classifier"] / "1" / "model.pt")
    labels = "\n".join(trainer.LABELS) + "\n"
    (members["postprocess"] / "labels.txt").write_text(labels, encoding="utf-8")
    return members


def _template_steps() -> List[str]:
    """The model names of the ensemble template's steps, in order (preprocess, classifier,
    postprocess)."""
    config = read_config(template_dir(ENSEMBLE_TEMPLATE) / CONFIG_FILE)
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
