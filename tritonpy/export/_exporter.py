"""``export_repository``: a model repository made deployable on the user's own Triton.

Everything is built in a hidden folder inside ``OUT`` and moved into place only once the
exported repository checks clean, so a failure or Ctrl-C leaves ``OUT`` as it was.

Example::

    result = export_repository("model_repository", "deploy", triton_version="24.10")
    result.repository        # deploy/model_repository
    [m.environment for m in result.models]   # ['kept', 'packed', ...]
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from .._runtime._optional import require
from .._tooling.model_dirs import model_directories
from .._tooling.options import changed
from .._tooling.pbtxt import CONFIG_MODULES, ConfigError, load_config
from .._tooling.progress import Reporter, step
from .._tooling.releases import TritonRelease
from ..check import WARNING, Report, check_repository
from ..envs import BUILDERS, Builder, BuiltEnv, model_name_problems
from ._deploy import publish_export, sized_settings, storage_settings, write_deployment_files
from ._files import ENVS_DIR, REPOSITORY_DIR, WHEELS_DIR, EnvsInImage, default_base_image
from ._manifests import DeploySettings
from ._models import (
    DEFAULT_ENV_ROOT,
    ENV_LAYOUTS,
    EnvLayout,
    ExportError,
    ModelExport,
    Prepared,
    copy_model,
    prepare_model,
)
from ._options import ExportOptions
from ._resources import memory_bytes
from ._validate import ModelPlan, build_missing, plan_model, raise_problems, validate_now

PathLike = Union[str, "os.PathLike[str]"]

#: what an export writes into OUT (``--force`` replaces these, and only these)
OUTPUTS = (
    REPOSITORY_DIR,
    ENVS_DIR,
    WHEELS_DIR,
    "Dockerfile",
    ".dockerignore",
    "k8s",
    "README.md",
)
_STAGING_PREFIX = ".tritonpy-export-"
#: warnings the shared and image layouts cause by design: TP502 (outside the model directory),
#: TP501 (an absolute path only the image has), TP109 (so the check imports such a model in
#: this Python, where a package may be missing: it was imported inside its environment first)
_LAYOUT_CODES = ("TP501", "TP502", "TP109")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass
class ExportResult:
    """What :func:`export_repository` wrote: ``out``, the ``repository`` inside it, one
    :class:`~tritonpy.export.ModelExport` per model, the other ``files`` written, the
    clean check ``report`` of the exported repository and the time taken."""

    out: Path
    release: str
    base_image: str
    models: List[ModelExport] = field(default_factory=list)
    files: List[Path] = field(default_factory=list)
    report: Optional[Report] = None
    seconds: float = 0.0
    env_layout: str = "per-model"
    #: the environments built (or found in the cache) for this export, one per distinct spec
    environments: List[BuiltEnv] = field(default_factory=list)
    #: with ``to``: the URL tritonserver serves, and the storage's ``PublishResult``
    url: Optional[str] = None
    published: Any = None

    @property
    def repository(self) -> Path:
        """The exported model repository, ``out/model_repository``."""
        return self.out / REPOSITORY_DIR


def _purge_caches(repo: Path) -> None:
    # importing model.py (the environment's verification, the check) writes bytecode caches
    for cache in sorted(repo.rglob("__pycache__"), reverse=True):
        shutil.rmtree(cache, ignore_errors=True)


def _prepare_out(repo: Path, out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ExportError(f"OUT {out} is a file; pass a directory (it is created if missing)")
    repo_abs, out_abs = repo.resolve(), out.resolve()
    if out_abs == repo_abs or repo_abs in out_abs.parents:
        raise ExportError(
            f"OUT {out} is inside the model repository {repo}; Triton would take it for a "
            "model. Pass a directory outside the repository"
        )
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise ExportError(
                f"OUT {out} is not empty; pass an empty or new directory, or --force to "
                f"replace the export's files there ({', '.join(OUTPUTS)})"
            )
        for stale in out.glob(f"{_STAGING_PREFIX}*"):  # left by a killed export
            shutil.rmtree(stale, ignore_errors=True)


def _check_name(name: str, replicas: int) -> None:
    if not _DNS_LABEL.match(name):
        raise ExportError(
            f"--name {name!r} is not a Kubernetes name: expected lower-case letters, digits "
            "and '-', starting and ending with a letter or digit, at most 63 characters "
            "(e.g. image-classifier)"
        )
    if replicas < 1:
        raise ExportError(f"--replicas {replicas}: expected 1 or more")


def _finding_lines(report: Report, allow_warnings: bool, shared: Sequence[str] = ()) -> List[str]:
    """The findings that fail the export; the warnings about the shared and image layouts'
    own parameters (``shared``: those models; see ``_LAYOUT_CODES``) are what those layouts
    mean, not a failure."""
    bad = report.errors if allow_warnings else report.findings
    return [
        finding.render()
        for finding in bad
        if not (finding.code in _LAYOUT_CODES and finding.file.split("/")[0] in shared)
        or finding.severity != WARNING
    ]


def export_repository(
    repo: PathLike,
    out: PathLike,
    options: Optional[ExportOptions] = None,
    *,
    reporter: Optional[Reporter] = None,
    **changes: Any,
) -> ExportResult:
    """Write a deployable copy of the model repository ``repo`` into ``out``, as ``options``
    (an :class:`ExportOptions`; ``triton_version`` is required) with the keyword arguments
    replacing its fields say.

    ``out/model_repository`` holds every model (no caches, ``__pycache__`` or ``tests/``), each
    tritonpy model with its full config.pbtxt and an environment archive for release
    ``triton_version`` (kept when the existing one fits, else packed with ``builder``; with
    ``pack=False`` a missing one is an error), and a stub where the environment's Python is not
    the release's. ``out`` also gets a ``Dockerfile`` (``base_image``, default the release's
    NGC container; it installs ``wheels/``, the running tritonpy, for the liveness check
    ``tritonpy probe``), ``.dockerignore``, ``k8s/deployment.yaml`` (Deployment + Service named
    ``name``, running ``image``), ``k8s/inferenceservice.yaml`` (KServe) and ``README.md``.

    Every model is validated first (its import inside the environment it will run in; all
    problems at once, :class:`ExportError`); built environments stay in the build cache and
    models of one spec share one. ``env_layout``: ``"per-model"`` (a copy in every model
    directory, works everywhere), ``"shared"`` (one archive per environment in ``out/envs/``;
    not for object storage) or ``"image"`` (those archives unpacked by the Dockerfile into
    ``env_root``; the image only). See docs/deploy.md.

    ``to`` (an ``s3://`` URL; ``per-model`` layout only): once the export is in ``out``, its
    repository is published there (:func:`tritonpy.storage.publish`; ``result.published``),
    and the manifests serve that URL with credentials from a Secret (``k8s/secret-template.yaml``).

    The exported repository must pass ``tritonpy check --triton-version`` without findings
    (errors only, with ``allow_warnings``); otherwise :class:`ExportError` lists them and
    ``out`` is left as it was. A non-empty ``out`` is refused unless ``force``.

    Example::

        result = export_repository("model_repository", "deploy", triton_version="24.10")
        export_repository("model_repository", "deploy", ExportOptions("24.10", replicas=2))
    """
    began = time.monotonic()
    chosen = changed(ExportOptions, options, changes)
    require(*CONFIG_MODULES, "yaml", extra="config", feature="tritonpy export")
    source, target = Path(repo), Path(out)
    release = TritonRelease.parse(chosen.triton_version)
    models = _check_options(source, target, chosen, release)
    result = ExportResult(
        target, release.name, chosen.base_image or default_base_image(release.name)
    )
    result.env_layout = chosen.env_layout
    settings = _deploy_settings(chosen, release)
    how = _ModelOptions(release, chosen.pack, chosen.builder, reporter or Reporter(),
                        chosen.env_layout, chosen.env_root)  # fmt: skip
    _export(source, models, settings, how, result, chosen)
    if chosen.to is not None:
        result.url = settings.repository
        result.published = publish_export(result.repository, settings.repository, how.reporter)
    result.seconds = time.monotonic() - began
    return result


def _deploy_settings(chosen: ExportOptions, release: TritonRelease) -> DeploySettings:
    """The manifests' settings from the options (sized from the models later)."""
    settings = DeploySettings(
        name=chosen.name,
        image=chosen.image or f"{chosen.name}:{release.name}",
        release=release.name,
        replicas=chosen.replicas,
        cpu=chosen.cpu,
        memory=chosen.memory,
        cpu_limit=chosen.cpu_limit,
        memory_limit=chosen.memory_limit,
        exit_timeout=chosen.exit_timeout,
        max_replicas=chosen.max_replicas,
        queue_time_us=chosen.queue_time_us,
    )
    return storage_settings(settings, chosen.to)


def _check_options(
    source: Path, target: Path, options: ExportOptions, release: TritonRelease
) -> List[Path]:
    """Refuse what cannot be exported (before anything is written), names ``release``
    refuses included; the model directories."""
    if options.env_layout not in ENV_LAYOUTS:
        raise ExportError(
            f"--env-layout {options.env_layout!r}: expected one of {', '.join(ENV_LAYOUTS)}"
        )
    if options.to is not None and options.env_layout == "shared":
        raise ExportError(
            f"--to {options.to} with --env-layout shared: a repository in object storage is "
            "copied model directory by model directory, so $$TRITON_MODEL_DIRECTORY/../../envs "
            "is lost (tritonpy check TP502). Export with --env-layout per-model (the default: "
            "each model folder holds its archive) or image (the environments unpacked in the "
            "image, the bucket holding the models alone)"
        )
    if not options.env_root.startswith("/"):
        raise ExportError(
            f"--env-root {options.env_root!r}: expected an absolute path in the image"
        )
    if not source.is_dir():
        raise ExportError(
            f"model repository {source} is not a directory; pass the directory holding one "
            "subdirectory per model"
        )
    if options.builder not in BUILDERS:
        raise ExportError(f"--builder {options.builder!r}: expected one of {', '.join(BUILDERS)}")
    _check_name(options.name, options.replicas)
    for flag, quantity in (
        ("--memory", options.memory),
        ("--memory-limit", options.memory_limit),
        ("--shm-size", options.shm_size),
    ):
        if quantity is not None:
            memory_bytes(quantity, flag)  # a malformed one fails before anything is built
    _prepare_out(source, target, options.force)
    models = model_directories(source)
    if not models:
        raise ExportError(
            f"model repository {source} has no model directory; expected "
            f"{source}/<model>/config.pbtxt and {source}/<model>/1/model.py"
        )
    _check_model_names(models, release)
    return models


def _check_model_names(models: List[Path], release: TritonRelease) -> None:
    """Refuse, before anything is copied or built, the Python models whose names the
    release refuses (shell characters, from 25.08): every one at once."""
    problems: List[str] = []
    for model in models:
        path = model / "config.pbtxt"
        try:
            config = load_config(path) if path.is_file() else None
        except ConfigError:
            config = None  # the check reports it; the directory name still counts
        if config is not None and config.backend != "python":
            continue  # only the Python backend's stub launcher checks names
        found = model_name_problems(model.name, config, release)
        problems.extend(f"model {model.name!r}: {problem}" for problem in found)
    raise_problems(problems, phase="found before anything was copied or built")


@dataclass(frozen=True)
class _ModelOptions:
    """How each model is prepared: for which release, and how a missing environment is made."""

    release: TritonRelease
    pack: bool
    builder: Builder
    reporter: Reporter
    layout: EnvLayout = "per-model"
    env_root: str = DEFAULT_ENV_ROOT


def _export(
    source: Path,
    models: List[Path],
    settings: DeploySettings,
    options: _ModelOptions,
    result: ExportResult,
    chosen: ExportOptions,
) -> None:
    """Build the export in a hidden folder of ``result.out`` and move it into place once it
    checks clean; ``result`` gets the models, the report and the files written."""
    target, release, reporter = result.out, options.release, options.reporter
    target.mkdir(parents=True, exist_ok=True)
    staging = target / f"{_STAGING_PREFIX}{secrets.token_hex(4)}"
    staged_repo = staging / REPOSITORY_DIR
    try:
        staged_repo.mkdir(parents=True)
        plans = _validate(models, staged_repo, options)
        result.environments = _built_environments(plans)
        result.models = [_export_model(plan, staging, options) for plan in plans]
        result.report = _check_export(staged_repo, source, result, options, chosen.allow_warnings)
        _purge_caches(staged_repo)
        settings = sized_settings(settings, staged_repo, shm_size=chosen.shm_size)
        names = [m.name for m in result.models]
        envs = (
            EnvsInImage(options.layout, options.env_root) if (staging / ENVS_DIR).is_dir() else None
        )
        written = write_deployment_files(
            staging, settings, release, result.base_image, names, reporter, envs=envs
        )
        _replace_outputs(staging, target)
        result.files = [target / p.relative_to(staging) for p in written]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _validate(models: List[Path], staged_repo: Path, options: _ModelOptions) -> List[ModelPlan]:
    """Copy every model, import each in its environment (building the missing ones only
    when nothing else failed); every problem at once."""
    release, reporter = options.release, options.reporter
    plans = []
    with step(reporter, f"validating {len(models)} model(s)"):
        for model in models:
            copy_model(model, staged_repo / model.name)
            plans.append(plan_model(model, staged_repo / model.name))
        problems = [
            problem
            for plan in plans
            for problem in validate_now(plan, release, pack=options.pack, builder=options.builder)
        ]
    raise_problems(problems, phase="found before building any environment")
    raise_problems(build_missing(plans, release, reporter), phase="found")
    return plans


def _built_environments(plans: List[ModelPlan]) -> List[BuiltEnv]:
    """One :class:`BuiltEnv` per distinct environment, shared by the plans that use it."""
    found: Dict[str, BuiltEnv] = {}
    for plan in plans:
        if plan.built is not None:
            plan.built = found.setdefault(plan.built.plan.key, plan.built)
    return list(found.values())


def _export_model(plan: ModelPlan, staging: Path, options: _ModelOptions) -> ModelExport:
    prepared = Prepared(
        found=plan.found,
        built=plan.built,
        layout=options.layout,
        shared_dir=staging / ENVS_DIR,
        env_root=options.env_root,
    )
    with step(options.reporter, f"exporting {plan.name}"):
        return prepare_model(
            plan.source,
            plan.target,
            release=options.release,
            pack=options.pack,
            builder=options.builder,
            reporter=options.reporter,
            prepared=prepared,
        )


def _check_export(
    staged_repo: Path,
    source: Path,
    result: ExportResult,
    options: _ModelOptions,
    allow_warnings: bool,
) -> Report:
    """The staged repository's check report; :class:`ExportError` with the findings when it
    is not clean (warnings allowed with ``allow_warnings``)."""
    release = options.release
    with step(options.reporter, f"tritonpy check --triton-version {release}"):
        report = check_repository(staged_repo, triton_version=release.name)
    shared = [m.name for m in result.models if m.shared]
    bad = _finding_lines(report, allow_warnings, shared)
    if bad:
        raise ExportError(
            f"the exported repository does not pass 'tritonpy check --triton-version "
            f"{release}' ({report.summary().split(': ', 1)[1]}); nothing was written to "
            f"{result.out}. Fix these in {source} and export again"
            + ("" if allow_warnings else " (--allow-warnings accepts warnings)")
            + ":\n"
            + "\n".join(bad)
        )
    for finding in report.warnings:
        if finding.code not in _LAYOUT_CODES or finding.file.split("/")[0] not in shared:
            options.reporter.note(f"check: {finding.render()}")
    return report


def _replace_outputs(staging: Path, target: Path) -> None:
    """Move the staged files into ``target``, replacing a previous export's (and nothing
    else: --force)."""
    for entry in OUTPUTS:
        previous = target / entry
        if previous.is_dir() and not previous.is_symlink():
            shutil.rmtree(previous)
        elif previous.exists() or previous.is_symlink():
            previous.unlink()
    for entry in OUTPUTS:
        if (staging / entry).exists():
            os.replace(staging / entry, target / entry)
