"""``pack_env``: one call from a model directory and a spec to a verified environment archive
named by ``EXECUTION_ENV_PATH``, plus the matching stub when the Pythons differ.

Example::

    result = pack_env("model_repository/preprocess", python="3.10", spec="envs/opencv.yml")
    result.archive      # model_repository/preprocess/preprocess_py3.10.tar.gz
    result.parameter    # '$$TRITON_MODEL_DIRECTORY/preprocess_py3.10.tar.gz'

    options = PackOptions(python="3.10", builder="local")
    pack_env("model_repository/preprocess", options, force=True)   # options, one changed
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import (
    TYPE_CHECKING,
    Any,
    Iterator,
    List,
    Optional,
    Tuple,
)

from .._tooling.archives import staging_file, write_archive
from .._tooling.env_archives import archive_name, build_key, is_up_to_date, write_record
from .._tooling.errors import EnvError
from .._tooling.options import changed
from .._tooling.pbtxt import load_config, set_parameter, write_config
from .._tooling.progress import Reporter, step
from .._tooling.releases import TritonRelease
from ._conda import build_conda_env, conda_pack_archive, find_conda
from ._interpreters import BaseInterpreter, find_interpreter
from ._local import build_local_env
from ._needs import CODEC_NEEDS, Addition, ModelScan, plan_additions, scan_model
from ._options import BUILDERS as BUILDERS
from ._options import STUB_MODES as STUB_MODES
from ._options import Builder as Builder
from ._options import PackOptions as PackOptions
from ._options import StubMode as StubMode
from ._release_rules import (
    hooks_message,
    inspect_archive,
    model_name_problems,
    stub_decision,
    unsafe_message,
)
from ._runtime import check_numpy_pin, runtime_requirements
from ._selfwheel import RunningTritonpy, running_tritonpy, self_wheel
from ._spec import (
    EnvSpec,
    PathLike,
    canonical_name,
    parse_requirement,
    read_spec,
    requirement_applies,
    requirement_name,
    resolve_spec,
)
from ._verify import VerifyReport, verify_archive

if TYPE_CHECKING:
    from ..stubs import StubResult

_SPEC_NAMES = ("environment.yml", "environment.yaml", "requirements.txt")


@dataclass
class PackResult:
    """What :func:`pack_env` produced."""

    archive: Path
    python: str
    builder: str  # "local" or the conda front-end's name ("micromamba")
    size: int
    seconds: float
    skipped: bool
    parameter: str  # the EXECUTION_ENV_PATH value written to config.pbtxt
    verify: Optional[VerifyReport] = None
    stub: Optional[StubResult] = None  # when a stub was placed
    added: List[str] = field(default_factory=list)  # requirements added for codecs and extras
    #: why spec lines were not listed nor verified (their marker is false for the environment)
    marker_skipped: List[str] = field(default_factory=list)
    #: what the target release will do differently that tritonpy cannot fix (also noted)
    warnings: List[str] = field(default_factory=list)


def parse_builder(value: str) -> Builder:
    """``value`` as a :data:`Builder`, or :class:`EnvError` naming the choices.

    >>> parse_builder("local")
    'local'
    """
    for builder in BUILDERS:
        if value == builder:
            return builder
    raise EnvError(f"builder {value!r}: expected one of {', '.join(BUILDERS)}")


def find_default_spec(model_dir: Path) -> Optional[Path]:
    """``environment.yml``/``.yaml`` or ``requirements.txt`` of the model directory."""
    return next((model_dir / n for n in _SPEC_NAMES if (model_dir / n).is_file()), None)


@contextlib.contextmanager
def _deferred_interrupt() -> Iterator[None]:
    """Hold Ctrl-C back while the final renames run (milliseconds), then deliver it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: List[int] = []

    def hold(signum: int, frame: Optional[FrameType]) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt


def _point_config(path: Path, config: Any, parameter: str, reporter: Reporter) -> None:
    """Set EXECUTION_ENV_PATH through the protobuf config (atomic write) when it differs."""
    entry = config.parameters.get("EXECUTION_ENV_PATH")
    if entry is not None and entry.string_value == parameter:
        return
    set_parameter(config, "EXECUTION_ENV_PATH", parameter)
    write_config(path, config)
    reporter.note(f"config.pbtxt: EXECUTION_ENV_PATH = {parameter}")


def _plan(
    directory: Path, env_spec: EnvSpec, reporter: Reporter
) -> Tuple[ModelScan, List[Addition]]:
    """Scan the model's codecs and plan the requirements to add; report every choice."""
    scan = scan_model(directory)
    if scan.error:
        reporter.note(
            f"could not import {scan.model_file} here to find the packages its codecs need "
            f"({scan.error.splitlines()[-1]}); the import check inside the environment "
            "will name anything missing"
        )
    for line in env_spec.tritonpy_lines:
        pinned = parse_requirement(line)
        if pinned is not None and (pinned.specifier or pinned.url):
            reporter.note(
                f"the spec's {line.strip()!r} is not installed: the environment gets the "
                "running tritonpy (use --tritonpy REQ to choose another)"
            )
    additions = plan_additions(env_spec, scan)
    for addition in additions:
        reporter.note(f"added {addition.requirement} for {addition.reason}")
    return scan, additions


def _python_xy(value: str) -> str:
    match = re.fullmatch(r"(?:python)?(3)\.(\d+)(?:\.\d+)?", value.strip())
    if not match:
        raise EnvError(f"--python {value!r}: expected X.Y, e.g. 3.10")
    return f"{match.group(1)}.{match.group(2)}"


@dataclass(frozen=True)
class _Model:
    """The model directory and its config.pbtxt."""

    directory: Path
    config_path: Path
    config: Any


@dataclass(frozen=True)
class _Build:
    """Everything decided before building: what goes in, with what, where it lands."""

    spec: EnvSpec
    xy: str
    release: TritonRelease
    scan: ModelScan
    added: List[str]
    runtime: Optional[RunningTritonpy]  # None: ``tritonpy_requirement`` is installed instead
    tool: Optional[Path]  # the conda front-end, None for the local builder
    base: Optional[BaseInterpreter]  # the local CPython, None for the conda builder
    stem: str  # the archive's stem, also the name of the build folder
    archive: Path
    key: str

    @property
    def kind(self) -> str:
        return self.tool.name if self.tool else "local"

    @property
    def parameter(self) -> str:
        return f"$$TRITON_MODEL_DIRECTORY/{self.archive.name}"


def _load_model(model_dir: PathLike, options: PackOptions) -> _Model:
    directory = Path(model_dir)
    config_path = directory / "config.pbtxt"
    if not config_path.is_file():
        raise EnvError(
            f"{directory} is not a model directory: no config.pbtxt. Pass the model's "
            "directory (the one holding config.pbtxt and 1/model.py)."
        )
    if options.builder not in BUILDERS or options.stub not in STUB_MODES:
        raise EnvError(f"builder must be one of {BUILDERS} and stub one of {STUB_MODES}")
    config = load_config(config_path)
    if config.platform == "ensemble" or config.HasField("ensemble_scheduling"):
        members = sorted({step.model_name for step in config.ensemble_scheduling.step})
        raise EnvError(
            f"{directory} is an ensemble: it runs no Python of its own, so it has no "
            "environment; pack the environment of each Python member that needs one: "
            + ", ".join(f"tritonpy pack-env {directory.parent / m}" for m in members)
        )
    return _Model(directory, config_path, config)


def _read_spec(
    model: _Model, options: PackOptions, release: TritonRelease, reporter: Reporter
) -> EnvSpec:
    """The spec (given, else the model directory's, else empty) with its Python decided."""
    spec = options.spec
    spec_path = resolve_spec(spec) if spec is not None else find_default_spec(model.directory)
    env_spec = read_spec(spec_path) if spec_path else EnvSpec(None, None)
    xy = _python_xy(options.python or env_spec.python or release.python)
    if env_spec.python and env_spec.python != xy:
        reporter.note(f"building Python {xy} (the spec {spec_path} pins {env_spec.python})")
    env_spec = env_spec.with_python(xy)
    check_numpy_pin(env_spec.applicable_pip, release)  # pip skips a line whose marker is false
    return env_spec


def _builder_tools(
    options: PackOptions, xy: str
) -> Tuple[Optional[Path], Optional[BaseInterpreter]]:
    """(conda front-end, None) for the conda builder, (None, local CPython) for the local one."""
    tool = None
    if options.builder in ("auto", "conda") and options.python_path is None:
        tool = find_conda(options.conda_exe)
        if tool is None and options.builder == "conda":
            raise EnvError(
                "--builder conda: no conda, mamba or micromamba on PATH ($CONDA_EXE unset). "
                "Install one (https://mamba.readthedocs.io), or use --builder local."
            )
    return tool, None if tool else find_interpreter(xy, options.python_path)


def _check_names(model: _Model, release: TritonRelease) -> None:
    """Refuse, before anything is built, a model whose names ``release`` refuses."""
    problems = model_name_problems(model.directory.resolve().name, model.config, release)
    if problems:
        raise EnvError(f"{model.directory}: " + "; ".join(problems))


def _plan_build(model: _Model, options: PackOptions, reporter: Reporter) -> _Build:
    release = TritonRelease.parse(options.triton_version)
    _check_names(model, release)
    env_spec = _read_spec(model, options, release, reporter)
    xy = env_spec.python or release.python
    scan, additions = _plan(model.directory, env_spec, reporter)
    added = [a.requirement for a in additions]
    runtime = None if options.tritonpy_requirement else running_tritonpy()
    stem = options.name or env_spec.name or model.directory.resolve().name
    tool, base = _builder_tools(options, xy)
    env_spec = env_spec.with_python(xy, base.version if base else None)
    for skipped in env_spec.marker_skipped:
        reporter.note(
            f"{skipped.reason}; pip skips that line there, so it is neither listed nor verified"
        )
    inputs = {
        "spec": env_spec.digest,
        "python": base.version if base else xy,
        "release": release.name,
        "builder": "conda" if tool else "local",
        "tritonpy": options.tritonpy_requirement or (runtime.digest if runtime else ""),
        "added": added,
    }
    archive = model.directory / archive_name(stem, xy)
    return _Build(
        env_spec, xy, release, scan, added, runtime, tool, base, stem, archive, build_key(inputs)
    )


def _build_archive(
    build: _Build, options: PackOptions, prefix: Path, partial: Path, reporter: Reporter
) -> None:
    """Build the environment in ``prefix`` and write its archive to ``partial``."""
    extra = [*runtime_requirements(build.release), *build.added]
    if options.tritonpy_requirement:
        extra.append(options.tritonpy_requirement)
    wheel = self_wheel(reporter, runtime=build.runtime) if build.runtime else None
    level = options.compress_level
    if build.tool is not None:
        build_conda_env(
            build.spec,
            build.xy,
            prefix,
            tool=build.tool,
            extra=extra,
            reporter=reporter,
            wheel=wheel,
        )
        conda_pack_archive(
            prefix,
            partial,
            reporter=reporter,
            compress_level=level,
            pack=options.conda_pack_function,
        )
    else:
        assert build.base is not None  # _builder_tools gives one or the other
        build_local_env(build.spec, build.base, prefix, extra=extra, reporter=reporter, wheel=wheel)
        with step(reporter, f"writing {build.archive.name}"):
            write_archive(prefix, partial, reporter=reporter, compress_level=level)


def _verify(
    build: _Build, partial: Path, skip: Tuple[str, ...], reporter: Reporter
) -> VerifyReport:
    applying = [r for r in build.added if requirement_applies(r, build.spec.target)]
    names = [requirement_name(r) for r in applying]
    distributions = list(dict.fromkeys([*build.spec.distributions, *(n for n in names if n)]))
    known = {canonical_name(d) for d in distributions}
    for name in skip:
        if canonical_name(name) not in known:
            reporter.note(
                f"skip_import_check names {name!r}, which is not among the distributions "
                f"checked ({', '.join(distributions) or 'none'}): nothing skipped for it"
            )
        else:
            reporter.note(f"not importing the modules of {name} (skip_import_check)")
    return verify_archive(
        partial,
        build.xy,
        distributions=distributions,
        tritonpy_version=build.runtime.version if build.runtime else None,
        model_file=build.scan.model_file,
        codecs=[(c.module, c.name, c.imports) for c in CODEC_NEEDS],
        skip=skip,
        reporter=reporter,
        sources_activate=build.release.facts.sources_env_activate,
    )


def _build_and_place(
    build: _Build, model: _Model, options: PackOptions, reporter: Reporter, warnings: List[str]
) -> VerifyReport:
    """Build, pack and verify beside the target; then, with Ctrl-C held back, rename the
    archive into place, record it and point config.pbtxt at it (``warnings``: the
    release's)."""
    work = Path(tempfile.mkdtemp(prefix="tritonpy-env-"))
    try:
        prefix = work / build.stem
        with staging_file(build.archive) as partial:
            _build_archive(build, options, prefix, partial, reporter)
            shutil.rmtree(prefix, ignore_errors=True)
            warnings.extend(_release_findings(build, partial, reporter))
            verified = _verify(build, partial, options.skip_import_check, reporter)
            details = {
                "python": build.xy,
                "builder": build.kind,
                "release": build.release.name,
                "added": build.added,
                "tritonpy": build.runtime.version
                if build.runtime
                else options.tritonpy_requirement,
            }
            with _deferred_interrupt():
                os.replace(partial, build.archive)
                write_record(model.directory, build.archive, build.key, details)
                _point_config(model.config_path, model.config, build.parameter, reporter)
        return verified
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _release_findings(build: _Build, partial: Path, reporter: Reporter) -> List[str]:
    """Refuse an archive the target release's extractor refuses (26.06 on); return (and
    note) what it will do differently that tritonpy cannot fix: members later releases
    refuse, activation hooks 25.08 on do not run."""
    release, shown = build.release, build.archive.name
    findings = inspect_archive(str(partial))
    warnings: List[str] = []
    if findings.unsafe:
        message = unsafe_message(shown, findings.unsafe, release)
        if release.facts.refuses_unsafe_archives:
            raise EnvError(message)
        warnings.append(message)
    if findings.hooks and not release.facts.sources_env_activate:
        warnings.append(hooks_message(shown, findings.hooks, release))
    for warning in warnings:
        reporter.note(f"warning: {warning}")
    return warnings


def _place_stub(
    build: _Build, model: _Model, options: PackOptions, reporter: Reporter
) -> Optional[StubResult]:
    if options.server_python:  # the server's Python given: a tritonpy serve virtualenv
        needed, why = build.xy != options.server_python, f"server Python {options.server_python}"
    else:
        decision = stub_decision(build.xy, build.release)
        needed, why = decision.needed, decision.reason
    if not (options.stub == "always" or (options.stub == "auto" and needed)):
        return None
    from ..stubs import provision_stub

    reporter.note(f"placing a stub: {why}" if needed else f"placing a stub (--stub always): {why}")
    return provision_stub(
        model.directory, triton_version=build.release.name, python=build.xy, reporter=reporter
    )


def pack_env(
    model_dir: PathLike,
    options: Optional[PackOptions] = None,
    *,
    reporter: Optional[Reporter] = None,
    **changes: Any,
) -> PackResult:
    """Build, pack, verify and place ``MODEL_DIR/<name>_py3.X.tar.gz``; set
    ``EXECUTION_ENV_PATH`` in config.pbtxt; provision the stub when needed.

    ``options`` (default :class:`PackOptions()`), with the keyword arguments replacing its
    fields (TypeError for a name that is none), say how. The running tritonpy goes into the
    environment (a wheel of its own files, no index lookup) unless ``tritonpy_requirement``
    names another; the packages the model's codecs need (``tp.Image``: OpenCV) and the spec's
    ``tritonpy[extra]`` requirements are added unless the spec names them
    (``PackResult.added``). An unchanged build skips the rebuild unless ``force``.

    Example::

        pack_env("models/classify", python="3.10", builder="local").archive
        pack_env("models/classify", PackOptions(python="3.10", builder="local")).archive
    """
    began = time.monotonic()
    reporter = reporter or Reporter()
    chosen = changed(PackOptions, options, changes)
    model = _load_model(model_dir, chosen)
    build = _plan_build(model, chosen, reporter)
    verified: Optional[VerifyReport] = None
    warnings: List[str] = []  # what the target release does that tritonpy cannot fix
    skipped = not chosen.force and is_up_to_date(model.directory, build.archive, build.key)
    if skipped:
        reporter.note(f"{build.archive} is up to date (same spec, Python, release); not rebuilt")
        _point_config(model.config_path, model.config, build.parameter, reporter)
    else:
        verified = _build_and_place(build, model, chosen, reporter, warnings)
    placed = _place_stub(build, model, chosen, reporter)
    return PackResult(
        build.archive,
        build.xy,
        build.kind,
        build.archive.stat().st_size,
        time.monotonic() - began,
        skipped,
        build.parameter,
        verified,
        placed,
        build.added,
        [skipped.reason for skipped in build.spec.marker_skipped],
        warnings,
    )
