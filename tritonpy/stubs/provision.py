"""``provision_stub``: put a ``triton_python_backend_stub`` for Python X.Y, from release YY.MM,
beside a model's config.pbtxt, from the first source that works:

1. ``cache``  - the local cache keyed by (release, Python, architecture);
2. ``wheel``  - the prebuilt stubs of the ``nvidia-pytriton`` wheel, only when the release is
   the one it bundles (24.10 for 0.7.0);
3. ``native`` - ``scripts/build_stub.sh`` (cmake, a C++ compiler, Triton sources via git or
   ``source_dir``);
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
from typing import List, Optional, Sequence, Union

from ..envs.archive import staging_file
from ..envs.progress import CommandError, Reporter, run_command, step
from ..errors import ToolError
from ..releases import BUNDLED_RELEASE, TritonRelease
from ..server.errors import ServerError
from ..server.install import find_wheel_installation
from .build import (
    docker_available,
    docker_command,
    find_build_script,
    find_dockerfile,
    missing_build_tools,
    native_build_command,
)
from .cache import STUB_NAME, StubCache, machine_arch
from .elf import ElfError, check_libpython

__all__ = ["SOURCES", "StubError", "StubResult", "provision_stub", "python_of_model"]

PathLike = Union[str, "os.PathLike[str]"]

#: the sources tried, in order
SOURCES = ("cache", "wheel", "native", "docker")
#: nvidia-pytriton version -> the Triton release whose stubs it bundles
WHEEL_RELEASES = {"0.7.0": BUNDLED_RELEASE}


class StubError(ToolError):
    """No source could provide the stub; the message lists what each source said."""


@dataclass
class StubResult:
    """A placed stub."""

    path: Path
    source: str  # one of SOURCES
    python: str
    release: str
    arch: str


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


def _from_wheel(release: str, python: str) -> Path:
    if release != BUNDLED_RELEASE:
        raise StubError(f"the wheel bundles release {BUNDLED_RELEASE} only, not {release}")
    try:
        wheel = find_wheel_installation()
    except ServerError as exc:
        raise StubError(str(exc).split(". ")[0]) from exc
    bundled = WHEEL_RELEASES.get(wheel.version)
    if bundled != release:
        raise StubError(
            f"nvidia-pytriton {wheel.version} is installed; tritonpy knows it bundles "
            f"{bundled or 'an unknown release'}, not {release}"
        )
    stub = wheel.stub(python)
    if not stub.is_file():
        raise StubError(
            f"no stub for Python {python} in the wheel (it has "
            f"{', '.join(wheel.stub_versions()) or 'none'})"
        )
    return stub


def _native(
    release: str,
    python: str,
    work: Path,
    reporter: Reporter,
    source_dir: Optional[PathLike],
    python_path: Optional[PathLike],
    build_script: Optional[PathLike],
) -> Path:
    script = find_build_script(build_script)
    if script is None:
        raise StubError(
            "build_stub.sh is missing from this tritonpy installation (reinstall tritonpy, or "
            "pass --build-script PATH)"
        )
    missing = missing_build_tools(need_git=source_dir is None)
    if missing:
        raise StubError(f"missing build tools: {', '.join(missing)}")
    output = work / STUB_NAME
    argv = native_build_command(
        script,
        python=python,
        release=release,
        output=output,
        source_dir=source_dir,
        python_path=python_path,
    )
    with step(reporter, f"building the stub for Python {python} from Triton r{release} sources"):
        try:
            run_command(argv, reporter, what="scripts/build_stub.sh", cwd=str(work))
        except CommandError as exc:
            raise StubError(str(exc).splitlines()[0] + "\n" + exc.output[-1500:]) from exc
    return output


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
            try:
                if source == "cache":
                    found = cache.get(release, python)
                    if found is None:
                        raise StubError(f"no stub in {cache.directory(release, python)}")
                elif source == "wheel":
                    found = _from_wheel(release, python)
                elif source == "native":
                    found = _native(
                        release, python, work, reporter, source_dir, python_path, build_script
                    )
                else:
                    found = _docker(release, python, work, reporter)
                info = check_libpython(found, python)
                if info.machine != arch:
                    raise StubError(f"the stub is built for {info.machine}, this is {arch}")
            except (StubError, ElfError) as exc:
                reasons.append(f"  {source}: {exc}")
                continue
            if source != "cache":
                cache.put(release, python, found, source=source)
            target = directory / STUB_NAME
            with staging_file(target) as partial:
                shutil.copyfile(found, partial)
                os.chmod(partial, 0o755)
                os.replace(partial, target)
            reporter.note(f"placed {target} (Python {python}, r{release}, from {source})")
            return StubResult(target, source, python, release, arch)
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
        "offline checkouts of Triton's python_backend, common, core and backend; see "
        "docs/environments.md)."
    )
