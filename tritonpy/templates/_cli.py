"""``tritonpy new``: render a model template into a repository under a new name (thin command
over :func:`tritonpy.templates.render_template` and
:func:`tritonpy.templates.render_classifier_ensemble`).

Example::

    tritonpy new my_model --template image_preprocess --repo model_repository
    tritonpy new digits --template ensemble_classifier --train
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Optional, Sequence

from .._runtime.errors import ToolError
from .._tooling import cli as shared

if TYPE_CHECKING:
    from ._ensembles import ClassifierEnsemble


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``new`` subcommand on ``subparsers``."""
    summary = "render a model template into a repository under a new name"
    parser = shared.add_command(subparsers, "new", cmd_new, help=summary)
    parser.add_argument("name", metavar="NAME", nargs="?", help="the new model's name")
    parser.add_argument(
        "--template",
        "-t",
        help="template to start from (default: minimal, a text-in text-out model with its "
        "own test)",
    )
    parser.add_argument("--repo", default="model_repository", help="model repository directory")
    for flag, metavar, text in (
        ("--param", "KEY=VALUE", "set a config.pbtxt parameter (repeatable)"),
        (
            "--model",
            "OLD=NEW",
            "ensemble only: point step OLD at your model NEW and render the ensemble alone "
            "(repeatable)",
        ),
    ):
        parser.add_argument(flag, action="append", default=[], metavar=metavar, help=text)
    parser.add_argument(
        "--train",
        action="store_true",
        help="ensemble_classifier: train the classifier on scikit-learn's digits (a few "
        "seconds) instead of starting from untrained weights",
    )
    shared.add_force(parser, "replace existing model directories")
    parser.add_argument("--list", action="store_true", help="list the templates and exit")


def _pairs(items: Sequence[str], what: str) -> Dict[str, str]:
    pairs: Dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ToolError(f"{what} {item!r}: expected KEY=VALUE")
        pairs[key] = value
    return pairs


def cmd_new(args: argparse.Namespace) -> int:
    """Copy template TEMPLATE (default: minimal, a one-input one-output model with its own test)
    into REPO/NAME, renaming the model in its config.pbtxt. The ensemble_classifier template
    comes with its three members (NAME_preprocess, NAME_classifier, NAME_postprocess), so the
    repository checks clean and serves. --list shows the templates."""
    from . import ENSEMBLE_TEMPLATE
    from ._finding import DEFAULT_TEMPLATE

    if args.list:
        _print_templates()
        return 0
    if not args.name:
        raise shared.UsageError(
            "new needs NAME, the new model's name (and --template T to start from another "
            "template than minimal; see tritonpy new --list)"
        )
    args.template = args.template or DEFAULT_TEMPLATE
    parameters = _pairs(args.param, "--param") or None
    models = _pairs(args.model, "--model") or None
    if args.template == ENSEMBLE_TEMPLATE and not models:
        _new_ensemble(args, parameters)
    else:
        _new_model(args, parameters, models)
    return 0


def _print_templates() -> None:
    from . import describe_template, list_templates

    names = list_templates()
    width = max((len(name) for name in names), default=0)
    for name in names:
        print(f"{name:<{width}}  {describe_template(name)}".rstrip())


def _new_ensemble(args: argparse.Namespace, parameters: Optional[Dict[str, str]]) -> None:
    from . import ENSEMBLE_TEMPLATE, render_classifier_ensemble

    if parameters:
        raise ToolError(
            f"--param: template {ENSEMBLE_TEMPLATE!r} has no parameters (an ensemble "
            f"config has none); set them on the members after rendering"
        )
    rendered = render_classifier_ensemble(
        args.name, Path(args.repo), train=args.train, overwrite=args.force
    )
    _print_ensemble_next_steps(args, rendered)


def _new_model(
    args: argparse.Namespace,
    parameters: Optional[Dict[str, str]],
    models: Optional[Dict[str, str]],
) -> None:
    from . import ENSEMBLE_TEMPLATE, render_template

    if args.train:
        raise ToolError(
            f"--train: only the {ENSEMBLE_TEMPLATE!r} template (without --model) trains "
            f"weights; template {args.template!r} has none to train"
        )
    target = render_template(
        args.template,
        args.name,
        Path(args.repo),
        parameters=parameters,
        models=models,
        overwrite=args.force,
    )
    print(f"created {target} from template {args.template!r}")
    _print_model_next_steps(args, target)


def _print_model_next_steps(args: argparse.Namespace, target: Path) -> None:
    from ._rendering import own_test_name

    model_py = target / "1" / "model.py"
    if model_py.is_file():
        print(f"next: edit {model_py}")
        if "model.pt" in model_py.read_text(encoding="utf-8"):
            print(f"      put its weights (a torch state_dict) at {target / '1' / 'model.pt'}")
        if (target / own_test_name(target.name)).is_file():
            print(f"      test it:  python -m pytest {target}")
        else:
            print(f"      test it:  tritonpy.testing.ModelHarness({str(target)!r}) in pytest")
    else:  # an ensemble rendered alone (--model): its steps name models of the repository
        print(f"next: add the models its steps run to {args.repo} (or fix them with --model)")
    print(f"      check it: tritonpy check {args.repo}")
    print(f"      serve it: tritonpy serve {args.repo}")


def _print_ensemble_next_steps(args: argparse.Namespace, rendered: ClassifierEnsemble) -> None:
    members = ", ".join(path.name for path in rendered.members.values())
    print(f"created the ensemble {rendered.ensemble} and its members {members}")
    if rendered.trained:
        print(
            f"the classifier is trained on scikit-learn's digits (held-out accuracy "
            f"{rendered.holdout_accuracy:.3f})"
        )
    else:
        print(
            f"the classifier's weights ({rendered.weights}) are untrained: it answers, with "
            f"arbitrary classes"
        )
    print(f"next: check it: tritonpy check {args.repo}")
    print(f"      serve it: tritonpy serve {args.repo}")
    print(f"      query it: tritonpy infer {rendered.ensemble.name} --input IMAGE=@digit.png")
    if not rendered.trained:
        print(
            f"      train it: tritonpy new {args.name} --template {args.template} "
            f"--repo {args.repo} --train --force  (needs scikit-learn and OpenCV)"
        )
