"""Build a stub from Triton's sources: natively with ``scripts/build_stub.sh``, or inside the
release's NGC container with ``Dockerfile.stub``; the build's inputs and their cache key.

Example::

    build = NativeBuild(find_build_script(), "3.10", "24.10", source_dir="triton-r24.10")
    argv = native_build_command(build, Path("/tmp/stub"))
    build_key(build_inputs(build))             # 'native-3f9a0c1b2d4e5f60'
    packages_missing_for(build)                # or missing_build_packages(script, python=...)
    # None, or "build_stub.sh: missing build packages: ... apt-get install -y ..."
    docker_command("24.10", "3.10", Path("/tmp/out"))
    # ['docker', 'build', '-f', '.../Dockerfile.stub', '--build-arg', 'TRITON_VERSION=24.10', ...]
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from .._runtime.errors import ToolError
from .._tooling.resources import find_resource

PathLike = Union[str, "os.PathLike[str]"]


def _checkout_file(relative: str) -> Optional[Path]:
    # shipped inside the wheel (tritonpy/_data) or, in a checkout, at the repository's top
    path = find_resource(relative)
    return path if path is not None and path.is_file() else None


def find_build_script(explicit: Optional[PathLike] = None) -> Optional[Path]:
    """``explicit``, else ``$TRITONPY_BUILD_STUB_SCRIPT``, else the checkout's
    ``scripts/build_stub.sh`` shipped with tritonpy; None when none exists."""
    chosen = explicit or os.environ.get("TRITONPY_BUILD_STUB_SCRIPT")
    if chosen:
        return Path(chosen) if Path(chosen).is_file() else None
    return _checkout_file("scripts/build_stub.sh")


def find_dockerfile() -> Optional[Path]:
    """The ``Dockerfile.stub`` shipped with tritonpy; None when it is missing."""
    return _checkout_file("Dockerfile.stub")


@dataclass(frozen=True)
class NativeBuild:
    """One native build as ``build_stub.sh`` is asked for it: the script, the stub's Python
    ``X.Y`` and Triton release, the offline sources (None: the script clones them) and the
    interpreter to build against (None: the script finds one)."""

    script: Path
    python: str
    release: str
    source_dir: Optional[PathLike] = None
    python_path: Optional[PathLike] = None
    cmake: Optional[PathLike] = None  # None: the cmake on PATH

    def argv(self, *flags: str) -> List[str]:
        """The script's command line with ``flags`` after the Python and release."""
        argv = ["bash", str(self.script), "--python", self.python]
        argv += ["--triton-version", self.release, *flags]
        if self.source_dir is not None:
            argv += ["--source-dir", os.fspath(self.source_dir)]
        if self.python_path is not None:
            argv += ["--python-path", os.fspath(self.python_path)]
        if self.cmake is not None:
            argv += ["--cmake", os.fspath(self.cmake)]
        return argv


def cmake_version(cmake: PathLike) -> Optional[Tuple[int, ...]]:
    """The version ``cmake --version`` reports, as numbers; None when it does not run."""
    try:
        done = subprocess.run(
            [os.fspath(cmake), "--version"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"cmake version (\d+(?:\.\d+)*)", done.stdout)
    return tuple(int(part) for part in found.group(1).split(".")) if found else None


def find_cmake(minimum: Tuple[int, ...]) -> Optional[Path]:
    """The cmake a native build runs when the one on PATH is older than ``minimum`` (the
    release's ``min_cmake``): the one ``pip install 'cmake>=3.31.8,<4'`` put beside this
    interpreter (a virtualenv's ``bin/``, often not on PATH); None to keep PATH's.

    Example::

        find_cmake((3, 31, 8))   # PosixPath('.venv/bin/cmake') where PATH has cmake 3.25
    """
    on_path = shutil.which("cmake")
    if on_path is not None and (cmake_version(on_path) or ()) >= minimum:
        return None
    beside = Path(sys.executable).parent / "cmake"
    if beside.is_file() and (cmake_version(beside) or ()) >= minimum:
        return beside
    return None


def native_build_command(build: NativeBuild, output: Path, jobs: Optional[int] = None) -> List[str]:
    """The ``build_stub.sh`` command line that builds ``build`` into ``output``.

    >>> native_build_command(NativeBuild(Path("build_stub.sh"), "3.10", "24.10"), Path("/o"))
    ['bash', 'build_stub.sh', '--python', '3.10', '--triton-version', '24.10', '--output', '/o']
    """
    argv = build.argv("--output", str(output))
    return [*argv, "--jobs", str(jobs)] if jobs else argv


def default_jobs() -> int:
    """The cores this process may use (its CPU affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def _script_query(build: NativeBuild, flag: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(build.argv(flag), capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolError(f"{build.script} {flag} failed to run: {exc}. Is bash installed?") from exc


def build_inputs(build: NativeBuild) -> Dict[str, str]:
    """What a native build would read (``build_stub.sh --print-inputs``): the release, the
    interpreter's exact version, the compiler, cmake, Boost, each source's archive digest or
    commit, the script itself. Cheap: nothing is unpacked or compiled."""
    done = _script_query(build, "--print-inputs")
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-800:]
        if said.startswith(f"{build.script.name}: "):  # the script's own message says it all
            raise ToolError(said)
        raise ToolError(f"{build.script} --print-inputs failed (exit {done.returncode}): {said}")
    pairs = (line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return {name: value for name, value in pairs}


def build_key(inputs: Dict[str, str]) -> str:
    """The cache key of a native build with these inputs: ``native-`` and 16 hex digits.

    >>> build_key({"release": "24.10", "python": "3.10.13"})
    'native-c53667a4aed9dcc4'
    """
    text = "\n".join(f"{name}={inputs[name]}" for name in sorted(inputs))
    return "native-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def missing_build_packages(
    script: Path,
    *,
    python: str,
    release: str,
    source_dir: Optional[PathLike] = None,
    python_path: Optional[PathLike] = None,
) -> Optional[str]:
    """None when every header and tool the build needs is present; else the script's message
    naming each missing Debian/Ubuntu package and the ``apt-get install`` line.

    Example::

        missing_build_packages(script, python="3.10", release="24.10", source_dir="sources")
    """
    return packages_missing_for(NativeBuild(script, python, release, source_dir, python_path))


def packages_missing_for(build: NativeBuild) -> Optional[str]:
    """:func:`missing_build_packages` for a :class:`NativeBuild`."""
    done = _script_query(build, "--check-deps")
    return None if done.returncode == 0 else (done.stderr or done.stdout).strip()


def missing_build_tools(*, need_git: bool) -> List[str]:
    """The build tools not on PATH (cmake, a C++ compiler, make, git when cloning, readelf)."""
    wanted = ["cmake", "make", "readelf"] + (["git"] if need_git else [])
    missing = [tool for tool in wanted if shutil.which(tool) is None]
    if not any(shutil.which(c) for c in ("c++", "g++", "clang++")):
        missing.append("a C++ compiler (g++)")
    return missing


def docker_command(
    release: str, python: str, output_dir: Path, *, dockerfile: Optional[Path] = None
) -> List[str]:
    """The ``docker build`` command that builds the stub in ``nvcr.io/nvidia/tritonserver:
    <release>-py3`` and exports it to ``output_dir``; the build context is the ``scripts/``
    beside ``dockerfile`` (default: the ``Dockerfile.stub`` shipped with tritonpy).

    >>> docker_command("24.10", "3.10", Path("out"), dockerfile=Path("Dockerfile.stub"))[:6]
    ['docker', 'build', '-f', 'Dockerfile.stub', '--build-arg', 'TRITON_VERSION=24.10']
    """
    dockerfile = dockerfile or find_dockerfile() or Path("Dockerfile.stub")
    context = dockerfile.resolve().parent / "scripts"
    build_args = ["--build-arg", f"TRITON_VERSION={release}"]
    build_args += ["--build-arg", f"PYTHON_VERSION={python}"]
    output = ["--output", f"type=local,dest={output_dir}"]
    return ["docker", "build", "-f", str(dockerfile), *build_args, *output, str(context)]


def docker_available() -> Tuple[bool, str]:
    """Whether a Docker engine answers (``docker info``); the reason when not."""
    if shutil.which("docker") is None:
        return False, "no docker client on PATH"
    try:
        done = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"docker info failed: {exc}"
    if done.returncode != 0:
        reason = (done.stderr or done.stdout).strip().splitlines()
        return False, f"no Docker engine: {reason[-1] if reason else 'docker info failed'}"
    return True, ""
