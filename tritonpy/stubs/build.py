"""Build a stub from Triton's sources: natively with ``scripts/build_stub.sh``, or inside the
release's NGC container with ``Dockerfile.stub``.

Example::

    script = find_build_script()
    argv = native_build_command(script, python="3.10", release="24.10", output=Path("/tmp/stub"))
    docker_command("24.10", "3.10", Path("/tmp/out"))
    # ['docker', 'build', '-f', '.../Dockerfile.stub', '--build-arg', 'TRITON_VERSION=24.10', ...]
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Tuple, Union

from .._resources import find_resource

__all__ = [
    "docker_available",
    "docker_command",
    "find_build_script",
    "find_dockerfile",
    "missing_build_tools",
    "native_build_command",
]

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


def find_dockerfile(explicit: Optional[PathLike] = None) -> Optional[Path]:
    """``explicit``, else the ``Dockerfile.stub`` shipped with tritonpy; None when none
    exists."""
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    return _checkout_file("Dockerfile.stub")


def native_build_command(
    script: Path,
    *,
    python: str,
    release: str,
    output: Path,
    source_dir: Optional[PathLike] = None,
    python_path: Optional[PathLike] = None,
    jobs: Optional[int] = None,
) -> List[str]:
    """The ``build_stub.sh`` command line for these options.

    >>> native_build_command(Path("build_stub.sh"), python="3.10", release="24.10",
    ...                      output=Path("/tmp/stub"))
    ['bash', 'build_stub.sh', '--python', '3.10', '--triton-version', '24.10', '--output', \
'/tmp/stub']
    """
    argv = ["bash", str(script), "--python", python, "--triton-version", release]
    argv += ["--output", str(output)]
    if source_dir is not None:
        argv += ["--source-dir", os.fspath(source_dir)]
    if python_path is not None:
        argv += ["--python-path", os.fspath(python_path)]
    if jobs:
        argv += ["--jobs", str(jobs)]
    return argv


def missing_build_tools(*, need_git: bool) -> List[str]:
    """The build tools not on PATH (cmake, a C++ compiler, make, git when cloning, readelf)."""
    wanted = ["cmake", "make", "readelf"] + (["git"] if need_git else [])
    missing = [tool for tool in wanted if shutil.which(tool) is None]
    if not any(shutil.which(c) for c in ("c++", "g++", "clang++")):
        missing.append("a C++ compiler (g++)")
    return missing


def docker_command(
    release: str,
    python: str,
    output_dir: Path,
    *,
    dockerfile: Optional[Path] = None,
    context: Optional[Path] = None,
) -> List[str]:
    """The ``docker build`` command that builds the stub in ``nvcr.io/nvidia/tritonserver:
    <release>-py3`` and exports it to ``output_dir`` (the build context is ``scripts/``).

    >>> docker_command("24.10", "3.10", Path("out"), dockerfile=Path("Dockerfile.stub"),
    ...                context=Path("."))[:6]
    ['docker', 'build', '-f', 'Dockerfile.stub', '--build-arg', 'TRITON_VERSION=24.10']
    """
    dockerfile = dockerfile or find_dockerfile() or Path("Dockerfile.stub")
    context = context or dockerfile.resolve().parent / "scripts"
    return [
        "docker",
        "build",
        "-f",
        str(dockerfile),
        "--build-arg",
        f"TRITON_VERSION={release}",
        "--build-arg",
        f"PYTHON_VERSION={python}",
        "--output",
        f"type=local,dest={output_dir}",
        str(context),
    ]


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
