"""``pack_env``: one call from a model directory and a spec to a verified environment archive
named by ``EXECUTION_ENV_PATH``, plus the matching stub when the Pythons differ.

Example::

    result = pack_env("model_repository/preprocess", python="3.10", spec="envs/opencv.yml")
    result.archive      # model_repository/preprocess/preprocess_py3.10.tar.gz
    result.parameter    # '$$TRITON_MODEL_DIRECTORY/preprocess_py3.10.tar.gz'
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
from typing import Any, Iterator, List, Optional, Tuple, Union

from .._tooling.archives import staging_file, write_archive
from .._tooling.errors import EnvError
from .._tooling.pbtxt import load_config, set_parameter, write_config
from .._tooling.progress import Reporter, step
from .._tooling.releases import BUNDLED_RELEASE, TritonRelease
from .conda import PackFunction, build_conda_env, conda_pack_archive, find_conda
from .interpreters import find_interpreter
from .local import build_local_env
from .needs import CODEC_NEEDS, Addition, ModelScan, plan_additions, scan_model
from .record import build_key, is_up_to_date, write_record
from .runtime import check_numpy_pin, runtime_requirements
from .selfwheel import running_tritonpy, self_wheel
from .spec import EnvSpec, read_spec, requirement_name, resolve_spec
from .verify import VerifyReport, verify_archive

__all__ = ["BUILDERS", "PackResult", "find_default_spec", "pack_env"]

PathLike = Union[str, "os.PathLike[str]"]

BUILDERS = ("auto", "local", "conda")
STUB_MODES = ("auto", "always", "never")
_SPEC_NAMES = ("environment.yml", "environment.yaml", "requirements.txt")


@dataclass
class PackResult:
    """What :func:`pack_env` produced."""

    archive: Path
    python: str
    builder: str
    size: int
    seconds: float
    skipped: bool
    parameter: str  # the EXECUTION_ENV_PATH value written to config.pbtxt
    verify: Optional[VerifyReport] = None
    stub: Any = None  # a tritonpy.stubs.StubResult when a stub was placed
    added: List[str] = field(default_factory=list)  # requirements added for codecs and extras


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
        if requirement_name(line) == "tritonpy" and re.search(r"[=<>~!@]", line):
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


def pack_env(
    model_dir: PathLike,
    *,
    spec: Optional[PathLike] = None,
    python: Optional[str] = None,
    python_path: Optional[PathLike] = None,
    triton_version: str = BUNDLED_RELEASE,
    builder: str = "auto",
    name: Optional[str] = None,
    force: bool = False,
    stub: str = "auto",
    server_python: Optional[str] = None,
    conda_exe: Optional[str] = None,
    tritonpy_requirement: Optional[str] = None,
    compress_level: int = 4,
    reporter: Optional[Reporter] = None,
    conda_pack_function: Optional[PackFunction] = None,
) -> PackResult:
    """Build, pack, verify and place ``MODEL_DIR/<name>_py3.X.tar.gz``; set
    ``EXECUTION_ENV_PATH`` in config.pbtxt; provision the stub when needed.

    - ``spec``: a conda environment file or requirements file, or the name of a spec shipped
      with tritonpy (``"opencv"``); default: the model directory's ``environment.yml`` or
      ``requirements.txt``; none: numpy and tritonpy only;
    - the running tritonpy goes into the environment (a wheel of its own files, no index
      lookup) unless ``tritonpy_requirement`` names another; the packages the model's codecs
      need (``tp.Image``: OpenCV) and the spec's ``tritonpy[extra]`` requirements are added
      unless the spec names them (``PackResult.added``);
    - ``python``: ``"X.Y"`` (default: the spec's pin, else the release's container Python);
    - ``builder``: ``"conda"`` (conda/mamba/micromamba + conda-pack), ``"local"`` (a local
      CPython with a shared libpython, ``python_path`` to choose one) or ``"auto"``;
    - unchanged spec, additions, Python, release and tritonpy files skip the rebuild unless
      ``force``;
    - ``stub``: ``"auto"`` places a stub when the environment's Python differs from
      ``server_python`` (default: the release's container Python), ``"always"``, ``"never"``.

    Example::

        pack_env("models/classify", python="3.10", builder="local").archive
    """
    began = time.monotonic()
    reporter = reporter or Reporter()
    directory = Path(model_dir)
    config_path = directory / "config.pbtxt"
    if not config_path.is_file():
        raise EnvError(
            f"{directory} is not a model directory: no config.pbtxt. Pass the model's "
            "directory (the one holding config.pbtxt and 1/model.py)."
        )
    config = load_config(config_path)
    if builder not in BUILDERS or stub not in STUB_MODES:
        raise EnvError(f"builder must be one of {BUILDERS} and stub one of {STUB_MODES}")
    release = TritonRelease.parse(triton_version)
    spec_path = resolve_spec(spec) if spec is not None else find_default_spec(directory)
    env_spec = read_spec(spec_path) if spec_path else EnvSpec(None, None)
    xy = _python_xy(python or env_spec.python or release.python)
    if env_spec.python and env_spec.python != xy:
        reporter.note(f"building Python {xy} (the spec {spec_path} pins {env_spec.python})")
    env_spec = env_spec.with_python(xy)
    check_numpy_pin(env_spec.pip, release)
    scan, additions = _plan(directory, env_spec, reporter)
    added = [a.requirement for a in additions]
    runtime = None if tritonpy_requirement else running_tritonpy()
    stem = name or env_spec.name or directory.resolve().name
    archive = directory / f"{stem}_py{xy}.tar.gz"
    parameter = f"$$TRITON_MODEL_DIRECTORY/{archive.name}"

    tool = None
    if builder in ("auto", "conda") and python_path is None:
        tool = find_conda(conda_exe)
        if tool is None and builder == "conda":
            raise EnvError(
                "--builder conda: no conda, mamba or micromamba on PATH ($CONDA_EXE unset). "
                "Install one (https://mamba.readthedocs.io), or use --builder local."
            )
    base = None if tool else find_interpreter(xy, python_path)
    kind = tool.name if tool else "local"
    key = build_key(
        {
            "spec": env_spec.digest,
            "python": base.version if base else xy,
            "release": release.name,
            "builder": "conda" if tool else "local",
            "tritonpy": tritonpy_requirement or (runtime.digest if runtime else ""),
            "added": added,
        }
    )
    verified: Optional[VerifyReport] = None
    skipped = not force and is_up_to_date(directory, archive, key)
    if skipped:
        reporter.note(f"{archive} is up to date (same spec, Python, release); not rebuilt")
        _point_config(config_path, config, parameter, reporter)
    else:
        extra = [*runtime_requirements(release), *added]
        if tritonpy_requirement:
            extra.append(tritonpy_requirement)
        wheel = self_wheel(reporter, runtime=runtime) if runtime else None
        work = Path(tempfile.mkdtemp(prefix="tritonpy-env-"))
        try:
            prefix = work / stem
            with staging_file(archive) as partial:
                if tool is not None:
                    build_conda_env(
                        env_spec, xy, prefix, tool=tool, extra=extra, reporter=reporter, wheel=wheel
                    )
                    conda_pack_archive(
                        prefix,
                        partial,
                        reporter=reporter,
                        compress_level=compress_level,
                        pack=conda_pack_function,
                    )
                else:
                    assert base is not None
                    build_local_env(
                        env_spec, base, prefix, extra=extra, reporter=reporter, wheel=wheel
                    )
                    with step(reporter, f"writing {archive.name}"):
                        write_archive(
                            prefix, partial, reporter=reporter, compress_level=compress_level
                        )
                shutil.rmtree(prefix, ignore_errors=True)
                names = [requirement_name(r) for r in added]
                verified = verify_archive(
                    partial,
                    xy,
                    distributions=[*env_spec.distributions, *(n for n in names if n)],
                    tritonpy_version=runtime.version if runtime else None,
                    model_file=scan.model_file,
                    codecs=[(c.module, c.name, c.imports) for c in CODEC_NEEDS],
                    reporter=reporter,
                )
                details = {
                    "python": xy,
                    "builder": kind,
                    "release": release.name,
                    "added": added,
                    "tritonpy": runtime.version if runtime else tritonpy_requirement,
                }
                with _deferred_interrupt():
                    os.replace(partial, archive)
                    write_record(directory, archive, key, details)
                    _point_config(config_path, config, parameter, reporter)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    placed = None
    target_python = server_python or release.python
    if stub == "always" or (stub == "auto" and xy != target_python):
        from ..stubs.provision import provision_stub

        reporter.note(f"environment Python {xy} != server Python {target_python}: placing a stub")
        placed = provision_stub(
            directory, triton_version=release.name, python=xy, reporter=reporter
        )
    return PackResult(
        archive,
        xy,
        kind,
        archive.stat().st_size,
        time.monotonic() - began,
        skipped,
        parameter,
        verified,
        placed,
        added,
    )
