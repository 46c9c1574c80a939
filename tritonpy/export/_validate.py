"""The export's validation, before anything is packed: every model's config, declarations and
import inside the environment it will run in, every problem reported at once.

1. each copied model is planned (:func:`plan_model`): which environment it keeps (its
   ``EXECUTION_ENV_PATH``), or which it needs built (its spec; numpy + tritonpy without one),
   and it is imported where it can be already: in the tool's Python (no environment of its
   own), in its configured environment, or in a build the cache already holds;
2. only when that found no problem are the missing environments built (one per distinct spec,
   through the build cache) and the remaining models imported inside them.

Example::

    plans = [plan_model(source, target, options) for source, target in pairs]
    problems = [p for plan in plans for p in validate_now(plan)]
    raise_problems(problems)                 # ExportError listing all of them
    raise_problems(build_missing(plans, reporter))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from .._runtime.errors import ToolError
from .._tooling.env_archives import contents_python, resolve_env_path
from .._tooling.model_dirs import CONFIG_FILE, ENV_PARAMETER
from .._tooling.pbtxt import ConfigError, load_config
from .._tooling.progress import Reporter, step
from .._tooling.releases import TritonRelease
from ..check import (
    ModelEnvironment,
    configured_environment,
    import_failure,
    import_fix,
    imports_tritonpy,
)
from ..config import find_model_file
from ..envs import (
    Builder,
    BuiltEnv,
    EnvImport,
    EnvPlan,
    EnvStartError,
    build_environment,
    cached_environment,
    import_in_environment,
)
from ..envs import plan_environment as plan_env
from ._models import ExportError


@dataclass
class ModelPlan:
    """One model on its way through the export: ``source`` and its staged copy ``target``,
    the parsed ``config`` (None: unreadable or missing, the check reports it), the configured
    environment it may keep, the build it needs (``env_plan``/``built``) and what importing
    it inside its environment gave (``found``, with ``place``)."""

    source: Path
    target: Path
    config: Any = None
    needs_tritonpy: bool = False
    configured: Optional[ModelEnvironment] = None
    env_plan: Optional[EnvPlan] = None
    built: Optional[BuiltEnv] = None
    place: Optional[ModelEnvironment] = None
    found: Optional[EnvImport] = None
    problems: List[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def is_python(self) -> bool:
        config = self.config
        return (
            config is not None
            and config.backend == "python"
            and not (config.platform == "ensemble" or config.HasField("ensemble_scheduling"))
        )


def plan_model(source: Path, target: Path) -> ModelPlan:
    """Read the staged copy's config and find its configured environment."""
    plan = ModelPlan(source, target)
    try:
        plan.config = (
            load_config(target / CONFIG_FILE) if (target / CONFIG_FILE).is_file() else None
        )
    except ConfigError:
        return plan
    if not plan.is_python:
        return plan
    filename = plan.config.default_model_filename or "model.py"
    plan.needs_tritonpy = imports_tritonpy(target, filename)
    plan.configured = configured_environment(source, plan.config)
    return plan


def needs_build(plan: ModelPlan) -> bool:
    """True for a tritonpy model whose configured environment cannot be imported in (none,
    missing, or without an interpreter): export builds it one."""
    return (
        plan.is_python
        and plan.needs_tritonpy
        and plan.configured is None
        and (ENV_PARAMETER not in plan.config.parameters or not _has_python(plan))
    )


def _has_python(plan: ModelPlan) -> bool:
    """Whether the configured environment has a single libpython (a minimal layout that the
    check can read): such an environment is kept, imported in the tool's Python."""
    raw = plan.config.parameters[ENV_PARAMETER].string_value
    path = resolve_env_path(raw, plan.source).path
    return path.exists() and contents_python(path) is not None  # unreadable: rebuilt


def _import(plan: ModelPlan, place: ModelEnvironment, release: TritonRelease) -> List[str]:
    """Import the model inside ``place``; the problems (empty when it imported)."""
    filename = plan.config.default_model_filename or "model.py"
    try:
        model_file = find_model_file(plan.target, filename=filename)
        # started as the release starts the stub (no source bin/activate from 25.08)
        found = import_in_environment(
            place.path, model_file, sources_activate=release.facts.sources_env_activate
        )
    except ConfigError:
        return []  # no model file: the check reports it
    except (EnvStartError, ToolError) as exc:
        return [f"model {plan.name!r}: its environment {place.label} cannot be used: {exc}"]
    plan.place, plan.found = place, found
    if found.ok:
        return []
    return [
        f"model {plan.name!r} ({plan.name}/{model_file.parent.name}/{filename}): "
        f"{import_failure(place, found)}. Fix: "
        f"{import_fix(plan.name, place, found, release)}"
    ]


def validate_now(
    plan: ModelPlan, release: TritonRelease, *, pack: bool, builder: Builder
) -> List[str]:
    """Phase 1 for one model: its import where that needs no build; the plan of the build it
    needs (found in the cache: imported there too)."""
    if not plan.is_python:
        return []
    if plan.configured is not None:
        return _import(plan, plan.configured, release)
    if not needs_build(plan) or not pack:
        return []
    try:
        plan.env_plan = plan_env(plan.source, triton_version=release.name, builder=builder)
    except ToolError as exc:
        return [f"model {plan.name!r}: its environment spec cannot be read: {exc}"]
    plan.built = cached_environment(plan.env_plan)
    if plan.built is None:
        return []
    return _import(plan, _built_place(plan.env_plan, plan.built), release)


def _built_place(env_plan: EnvPlan, built: BuiltEnv) -> ModelEnvironment:
    return ModelEnvironment(built.archive, env_plan.label, "spec", env_plan.spec)


def build_missing(plans: List[ModelPlan], release: TritonRelease, reporter: Reporter) -> List[str]:
    """Phase 2: build each missing environment once (models of the same spec share it), then
    import the models waiting for it inside; the problems of all of them."""
    waiting: Dict[str, List[ModelPlan]] = {}
    for plan in plans:
        if plan.env_plan is not None and plan.built is None:
            waiting.setdefault(plan.env_plan.key, []).append(plan)
    problems: List[str] = []
    for group in waiting.values():
        first = group[0]
        assert first.env_plan is not None
        names = ", ".join(p.name for p in group)
        try:
            with step(reporter, f"building the environment of {names} ({first.env_plan.label})"):
                built = build_environment(first.env_plan, reporter)
        except ToolError as exc:
            problems.append(f"model(s) {names}: building the environment failed: {exc}")
            continue
        for plan in group:
            plan.built = built
            problems.extend(_import(plan, _built_place(first.env_plan, built), release))
    return problems


def raise_problems(problems: List[str], *, phase: str) -> None:
    """:class:`ExportError` with every problem (one alone as it is)."""
    if not problems:
        return
    if len(problems) == 1:
        raise ExportError(problems[0])
    raise ExportError(
        f"{len(problems)} problems {phase}; nothing was written. Fix them and export again "
        "(what was built is kept in the cache):\n- " + "\n- ".join(problems)
    )
