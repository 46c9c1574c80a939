"""``provision_stub``: put a ``triton_python_backend_stub`` for Python X.Y, from release YY.MM,
beside a model's config.pbtxt, from the first source that works:

1. ``cache``  - the local cache keyed by (release, Python, architecture, build inputs);
2. ``wheel``  - the prebuilt stubs of the ``nvidia-pytriton`` wheel, only when the release is
   the one it bundles (24.10 for 0.7.0);
3. ``native`` - ``scripts/build_stub.sh`` (cmake, a C++ compiler, Triton sources via git, or
   offline from ``source_dir`` or ``$TRITONPY_STUB_SOURCE_DIR``: checkouts or ``.tar.gz``
   archives). The build's inputs (sources, compiler, cmake, Boost, the interpreter) are
   digested first: a stub built from the same inputs is taken from the cache without building
   (``StubResult.cached``); a missing build package is named with the ``apt-get install``
   line that adds it;
4. ``docker`` - ``Dockerfile.stub`` in the release's NGC container (needs a Docker engine).

Every stub is checked to need exactly ``libpython3.X.so.1.0`` before it is placed (temporary
file + rename) or cached.

Example::

    result = provision_stub("model_repository/preprocess", triton_version="24.10",
                            python="3.10")
    result.source, result.path   # ('wheel', .../preprocess/triton_python_backend_stub)
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

from .._runtime.errors import ToolError
from .._tooling.archives import staging_file
from .._tooling.progress import CommandError, Reporter, run_command, step
from .._tooling.releases import TritonRelease
from .build import (
    build_inputs,
    build_key,
    default_jobs,
    docker_available,
    docker_command,
    find_build_script,
    find_dockerfile,
    missing_build_packages,
    missing_build_tools,
    native_build_command,
)
from .cache import STUB_NAME, StubCache, machine_arch
from .elf import ElfError, check_libpython
from .lookup import StubError, wheel_stub

__all__ = [
    "SOURCES",
    "SOURCE_DIR_VARIABLE",
    "StubError",
    "StubResult",
    "provision_stub",
    "python_of_model",
]

PathLike = Union[str, "os.PathLike[str]"]

#: offline Triton sources for native builds when none is passed (checkouts or .tar.gz archives)
SOURCE_DIR_VARIABLE = "TRITONPY_STUB_SOURCE_DIR"
#: the sources tried, in order
SOURCES = ("cache", "wheel", "native", "docker")


@dataclass
class StubResult:
    """A placed stub."""

    path: Path
    source: str  # one of SOURCES
    python: str
    release: str
    arch: str
    cached: bool = False  # True when found in the cache (no build, no copy from the wheel)
    key: str = ""  # the cache key: 'wheel', 'native-<digest of the build inputs>', ...


def python_of_model(model_dir: Path) -> Optional[str]:
    """The Python X.Y of the model's environment archive (from ``*_py3.X.tar.gz``), if any."""
    found = sorted(
        {
            m.group(1)
            for p in model_dir.glob("*_py*.tar.gz")
            for m in [re.search(r"_py(3\.\d+)\.tar\.gz$", p.name)]
            if m
        }
    )
    return found[0] if len(found) == 1 else None


@dataclass
class _Built:
    path: Path
    key: str
    cached: bool
    inputs: Dict[str, str]


def _native(
    release: str,
    python: str,
    work: Path,
    reporter: Reporter,
    cache: StubCache,
    source_dir: Optional[PathLike],
    python_path: Optional[PathLike],
    build_script: Optional[PathLike],
) -> _Built:
    # pack-env, export and serve pass no source directory: the environment can name one
    source_dir = source_dir or os.environ.get(SOURCE_DIR_VARIABLE) or None
    script = find_build_script(build_script)
    if script is None:
        raise StubError(
            "build_stub.sh is missing from this tritonpy installation (reinstall tritonpy, or "
            "pass --build-script PATH)"
        )
    missing = missing_build_tools(need_git=source_dir is None)
    if missing:
        raise StubError(f"missing build tools: {', '.join(missing)}")
    try:
        inputs = build_inputs(
            script, python=python, release=release, source_dir=source_dir, python_path=python_path
        )
    except ToolError as exc:
        raise StubError(str(exc)) from exc
    key = build_key(inputs)
    cached = cache.get(release, python, key=key)
    if cached is not None:
        reporter.note(f"native build {key} for Python {python}, r{release} is cached: no rebuild")
        return _Built(cached, key, True, inputs)
    problem = missing_build_packages(
        script, python=python, release=release, source_dir=source_dir, python_path=python_path
    )
    if problem:
        raise StubError(problem)
    output = work / STUB_NAME
    argv = native_build_command(
        script,
        python=python,
        release=release,
        output=output,
        source_dir=source_dir,
        python_path=python_path,
        jobs=default_jobs(),
    )
    with step(reporter, f"building the stub for Python {python} from Triton r{release} sources"):
        try:
            run_command(argv, reporter, what="scripts/build_stub.sh", cwd=str(work))
        except CommandError as exc:
            raise StubError(str(exc).splitlines()[0] + "\n" + exc.output[-1500:]) from exc
    return _Built(output, key, False, inputs)


def _docker(release: str, python: str, work: Path, reporter: Reporter) -> Path:
    ok, reason = docker_available()
    if not ok:
        raise StubError(reason)
    if find_dockerfile() is None:
        raise StubError(
            "Dockerfile.stub is missing from this tritonpy installation (reinstall tritonpy)"
        )
    argv = docker_command(release, python, work / "out")
    with step(reporter, f"building the stub in nvcr.io/nvidia/tritonserver:{release}-py3"):
        try:
            run_command(argv, reporter, what="docker build -f Dockerfile.stub")
        except CommandError as exc:
            raise StubError(str(exc).splitlines()[0] + "\n" + exc.output[-1500:]) from exc
    return work / "out" / STUB_NAME


def provision_stub(
    model_dir: PathLike,
    *,
    triton_version: str,
    python: Optional[str] = None,
    sources: Sequence[str] = SOURCES,
    reporter: Optional[Reporter] = None,
    cache: Optional[StubCache] = None,
    source_dir: Optional[PathLike] = None,
    python_path: Optional[PathLike] = None,
    build_script: Optional[PathLike] = None,
) -> StubResult:
    """Place ``MODEL_DIR/triton_python_backend_stub`` for ``python`` (default: the Python of
    the model's ``*_py3.X.tar.gz``) and release ``triton_version``; see the module docstring.

    Raises :class:`StubError` with each source's reason and the docker command to run.

    Example::

        provision_stub("models/classify", triton_version="24.10", python="3.12").source
    """
    reporter = reporter or Reporter()
    directory = Path(model_dir)
    if not (directory / "config.pbtxt").is_file():
        raise StubError(f"{directory} is not a model directory: no config.pbtxt")
    release = TritonRelease.parse(triton_version).name
    python = python or python_of_model(directory)
    if python is None or not re.fullmatch(r"3\.\d+", python):
        raise StubError(
            f"which Python is the stub for? Pass --python X.Y (got {python!r}; {directory} has "
            "no single *_py3.X.tar.gz environment archive to tell)"
        )
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise StubError(f"unknown stub source(s) {unknown}; choose from {SOURCES}")
    cache = cache or StubCache()
    arch = machine_arch()
    reasons: List[str] = []
    work = Path(tempfile.mkdtemp(prefix="tritonpy-stub-"))
    try:
        for source in sources:
            key, cached, inputs = source, source == "cache", None
            try:
                if source == "cache":
                    found = cache.get(release, python)
                    if found is None:
                        raise StubError(f"no stub in {cache.directory(release, python)}")
                    key = found.parent.name
                elif source == "wheel":
                    found = wheel_stub(release, python)
                elif source == "native":
                    built = _native(
                        release,
                        python,
                        work,
                        reporter,
                        cache,
                        source_dir,
                        python_path,
                        build_script,
                    )
                    found, key, cached, inputs = built.path, built.key, built.cached, built.inputs
                else:
                    found = _docker(release, python, work, reporter)
                info = check_libpython(found, python)
                if info.machine != arch:
                    raise StubError(f"the stub is built for {info.machine}, this is {arch}")
            except (StubError, ElfError) as exc:
                reasons.append(f"  {source}: {exc}")
                continue
            if not cached:
                cache.put(release, python, found, source=source, key=key, inputs=inputs)
            target = directory / STUB_NAME
            with staging_file(target) as partial:
                shutil.copyfile(found, partial)
                os.chmod(partial, 0o755)
                os.replace(partial, target)
            reporter.note(f"placed {target} (Python {python}, r{release}, from {source})")
            return StubResult(target, source, python, release, arch, cached, key)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    command = " ".join(docker_command(release, python, Path("OUT_DIR")))
    script = find_build_script(build_script) or Path("build_stub.sh")
    raise StubError(
        f"no triton_python_backend_stub for Python {python}, release {release}, {arch}:\n"
        + "\n".join(reasons)
        + f"\nOn a machine with Docker, build it in the release's container:\n  {command}\n"
        f"then copy OUT_DIR/{STUB_NAME} beside {directory / 'config.pbtxt'} (or run "
        f"bash {script} --python {python} --triton-version {release} --source-dir DIR with "
        "offline checkouts or .tar.gz archives of Triton's python_backend, common, core and "
        "backend; see docs/environments.md)."
    )
