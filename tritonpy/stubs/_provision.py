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
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from .._runtime.errors import ToolError
from .._tooling.elf import ElfError, check_libpython
from .._tooling.env_archives import named_python
from .._tooling.model_dirs import STUB_NAME
from .._tooling.progress import CommandError, Reporter, run_command, step
from .._tooling.releases import TritonRelease
from ._build import (
    NativeBuild,
    build_inputs,
    build_key,
    default_jobs,
    docker_available,
    docker_command,
    find_build_script,
    find_cmake,
    find_dockerfile,
    missing_build_tools,
    native_build_command,
    packages_missing_for,
)
from ._cache import SOURCES, StubCache, StubSource, copy_executable, machine_arch
from ._lookup import StubError, wheel_stub

PathLike = Union[str, "os.PathLike[str]"]

#: offline Triton sources for native builds when none is passed (checkouts or .tar.gz archives)
SOURCE_DIR_VARIABLE = "TRITONPY_STUB_SOURCE_DIR"


@dataclass
class StubResult:
    """A placed stub."""

    path: Path
    source: StubSource
    python: str
    release: str
    arch: str
    cached: bool = False  # True when found in the cache (no build, no copy from the wheel)
    key: str = ""  # the cache key: 'wheel', 'native-<digest of the build inputs>', ...


def python_of_model(model_dir: Path) -> Optional[str]:
    """The Python X.Y of the model's environment archive (from ``*_py3.X.tar.gz``), if any."""
    named = (named_python(path.name) for path in model_dir.glob("*_py*.tar.gz"))
    found = sorted({python for python in named if python})
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class _Request:
    """One provisioning: what is wanted and what the sources may use."""

    release: str
    python: str
    work: Path  # a scratch directory, removed afterwards
    reporter: Reporter
    cache: StubCache
    source_dir: Optional[PathLike]
    python_path: Optional[PathLike]
    build_script: Optional[PathLike]


@dataclass
class _Found:
    """A stub a source provided, before it is checked and placed."""

    path: Path
    key: str  # its cache key
    cached: bool = False  # already in the cache: not stored again
    inputs: Optional[Dict[str, str]] = None  # a native build's inputs, recorded in the cache


def _from_cache(request: _Request) -> _Found:
    found = request.cache.get(request.release, request.python)
    if found is None:
        raise StubError(f"no stub in {request.cache.directory(request.release, request.python)}")
    return _Found(found, found.parent.name, cached=True)


def _from_wheel(request: _Request) -> _Found:
    return _Found(wheel_stub(request.release, request.python), "wheel")


def _run_build(argv: List[str], request: _Request, title: str, what: str, cwd: str = "") -> None:
    with step(request.reporter, title):
        try:
            run_command(argv, request.reporter, what=what, cwd=cwd or None)
        except CommandError as exc:
            raise StubError(str(exc).splitlines()[0] + "\n" + exc.output[-1500:]) from exc


def _native_build(request: _Request) -> NativeBuild:
    # pack-env, export and serve pass no source directory: the environment can name one
    source_dir = request.source_dir or os.environ.get(SOURCE_DIR_VARIABLE) or None
    script = find_build_script(request.build_script)
    if script is None:
        raise StubError(
            "build_stub.sh is missing from this tritonpy installation (reinstall tritonpy, or "
            "pass --build-script PATH)"
        )
    missing = missing_build_tools(need_git=source_dir is None)
    if missing:
        raise StubError(f"missing build tools: {', '.join(missing)}")
    cmake = find_cmake(TritonRelease.parse(request.release).min_cmake)
    return NativeBuild(
        script, request.python, request.release, release_sources(source_dir, request.release),
        request.python_path, cmake,
    )  # fmt: skip


def release_sources(source_dir: Optional[PathLike], release: str) -> Optional[PathLike]:
    """The sources of ``release`` in ``source_dir``: its ``triton-rYY.MM/`` (or ``rYY.MM/``)
    folder when it has one, so one directory can hold the sources of several releases (as
    ``$TRITONPY_STUB_SOURCE_DIR``), else ``source_dir`` itself (the sources of one release).

    Example::

        release_sources("shared/sources", "26.02")   # 'shared/sources/triton-r26.02'
    """
    if source_dir is None:
        return None
    for name in (f"triton-r{release}", f"r{release}"):
        if (Path(source_dir) / name).is_dir():
            return Path(source_dir) / name
    return source_dir


def _from_native(request: _Request) -> _Found:
    build = _native_build(request)
    try:
        inputs = build_inputs(build)
    except ToolError as exc:
        raise StubError(str(exc)) from exc
    key = build_key(inputs)
    python, release = request.python, request.release
    cached = request.cache.get(release, python, key=key)
    if cached is not None:
        request.reporter.note(
            f"native build {key} for Python {python}, r{release} is cached: no rebuild"
        )
        return _Found(cached, key, True, inputs)
    problem = packages_missing_for(build)
    if problem:
        raise StubError(problem)
    output = request.work / STUB_NAME
    argv = native_build_command(build, output, jobs=default_jobs())
    title = f"building the stub for Python {python} from Triton r{release} sources"
    _run_build(argv, request, title, "scripts/build_stub.sh", cwd=str(request.work))
    return _Found(output, key, False, inputs)


def _from_docker(request: _Request) -> _Found:
    ok, reason = docker_available()
    if not ok:
        raise StubError(reason)
    if find_dockerfile() is None:
        raise StubError(
            "Dockerfile.stub is missing from this tritonpy installation (reinstall tritonpy)"
        )
    output = request.work / "out"
    argv = docker_command(request.release, request.python, output)
    title = f"building the stub in nvcr.io/nvidia/tritonserver:{request.release}-py3"
    _run_build(argv, request, title, "docker build -f Dockerfile.stub")
    return _Found(output / STUB_NAME, "docker")


#: how each source provides a stub; each raises StubError saying why it cannot
_PROVIDERS: Dict[StubSource, Callable[[_Request], _Found]] = {
    "cache": _from_cache,
    "wheel": _from_wheel,
    "native": _from_native,
    "docker": _from_docker,
}


def _target(
    directory: Path, triton_version: str, python: Optional[str], sources: Sequence[str]
) -> Tuple[str, str]:
    """The release name and Python X.Y a stub is wanted for, once the request makes sense."""
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
    return release, python


def _checked(source: StubSource, request: _Request) -> _Found:
    found = _PROVIDERS[source](request)
    info = check_libpython(found.path, request.python)
    arch = machine_arch()
    if info.machine != arch:
        raise StubError(f"the stub is built for {info.machine}, this is {arch}")
    return found


def _place(found: _Found, source: StubSource, request: _Request, directory: Path) -> StubResult:
    release, python = request.release, request.python
    if not found.cached:
        request.cache.put(
            release, python, found.path, source=source, key=found.key, inputs=found.inputs
        )
    target = directory / STUB_NAME
    copy_executable(found.path, target)
    request.reporter.note(f"placed {target} (Python {python}, r{release}, from {source})")
    return StubResult(target, source, python, release, machine_arch(), found.cached, found.key)


def _no_stub(request: _Request, directory: Path, reasons: List[str]) -> StubError:
    release, python = request.release, request.python
    command = " ".join(docker_command(release, python, Path("OUT_DIR")))
    script = find_build_script(request.build_script) or Path("build_stub.sh")
    return StubError(
        f"no triton_python_backend_stub for Python {python}, release {release}, "
        f"{machine_arch()}:\n"
        + "\n".join(reasons)
        + f"\nOn a machine with Docker, build it in the release's container:\n  {command}\n"
        f"then copy OUT_DIR/{STUB_NAME} beside {directory / 'config.pbtxt'} (or run "
        f"bash {script} --python {python} --triton-version {release} --source-dir DIR with "
        "offline checkouts or .tar.gz archives of Triton's python_backend, common, core and "
        "backend; see docs/environments.md)."
    )


def provision_stub(
    model_dir: PathLike,
    *,
    triton_version: str,
    python: Optional[str] = None,
    sources: Sequence[StubSource] = SOURCES,
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
    directory = Path(model_dir)
    release, python = _target(directory, triton_version, python, sources)
    cache = cache or StubCache()
    work = Path(tempfile.mkdtemp(prefix="tritonpy-stub-"))
    request = _Request(
        release, python, work, reporter or Reporter(), cache, source_dir, python_path,
        build_script,
    )  # fmt: skip
    reasons: List[str] = []
    try:
        for source in sources:
            try:
                found = _checked(source, request)
            except (StubError, ElfError) as exc:
                reasons.append(f"  {source}: {exc}")
                continue
            return _place(found, source, request, directory)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raise _no_stub(request, directory, reasons)
