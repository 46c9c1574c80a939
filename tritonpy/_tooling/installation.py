"""Locate a tritonserver installation and prepare its Python backend directory.

The default installation is the real ``tritonserver`` shipped in the ``nvidia-pytriton`` wheel
(``pytriton/tritonserver``): its binary, its Python backend and prebuilt
``triton_python_backend_stub`` binaries for Python 3.8 to 3.13. The backend directory Triton
needs (``<dir>/python/{libtriton_python.so, triton_python_backend_utils.py,
triton_python_backend_stub}``) is assembled in a cache directory keyed by the wheel version and
the serving interpreter's ``X.Y``, so it is built once and is cheap to re-create.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from .._runtime._optional import missing
from .errors import ServerError
from .options import PYTHON_NAMES, OptionNames

__all__ = [
    "Installation",
    "Interpreter",
    "WheelInstallation",
    "cache_directory",
    "find_wheel_installation",
    "inspect_interpreter",
    "prepare_backend_directory",
    "resolve_installation",
]

_WHEEL = "nvidia-pytriton"
_BACKEND_FILES = ("libtriton_python.so", "triton_python_backend_utils.py")
_STUB = "triton_python_backend_stub"

_PROBE = """
import json, sys, sysconfig
v = sysconfig.get_config_var
print(json.dumps({
    "version": list(sys.version_info[:2]),
    "libdir": v("LIBDIR") or "",
    "multiarch": v("MULTIARCH") or "",
    "instsoname": v("INSTSONAME") or "",
    "shared": bool(v("Py_ENABLE_SHARED")),
}))
"""


@dataclass(frozen=True)
class Interpreter:
    """The Python interpreter whose stub serves the models.

    ``executable`` is kept as given (a virtualenv's ``bin/python`` stays in the virtualenv, so
    the embedded interpreter finds the virtualenv's packages through ``bin/`` on ``PATH``).
    """

    executable: str
    version: Tuple[int, int]
    libdir: str
    libpython: str  # absolute path, or a bare soname the dynamic linker cache knows

    @property
    def xy(self) -> str:
        """``"3.11"``."""
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def bindir(self) -> str:
        return os.path.dirname(os.path.abspath(self.executable))


@dataclass(frozen=True)
class WheelInstallation:
    """The tritonserver inside the ``nvidia-pytriton`` wheel."""

    root: Path  # .../site-packages/pytriton/tritonserver
    libs: Path  # .../site-packages/nvidia_pytriton.libs
    version: str

    @property
    def tritonserver(self) -> Path:
        return self.root / "bin" / "tritonserver"

    @property
    def python_backend(self) -> Path:
        return self.root / "backends" / "python"

    def stub(self, xy: str) -> Path:
        """The prebuilt stub for Python ``xy`` (``"3.11"``)."""
        return self.root / "python_backend_stubs" / xy / _STUB

    def stub_versions(self) -> list[str]:
        base = self.root / "python_backend_stubs"
        found = [p.parent.name for p in base.glob(f"*/{_STUB}")] if base.is_dir() else []
        return sorted(found, key=lambda s: tuple(int(x) for x in s.split(".")))


@dataclass(frozen=True)
class Installation:
    """What is needed to run one tritonserver: the binary, the backend directory and the
    environment of the process."""

    tritonserver: Path
    backend_directory: Path
    env: Dict[str, str] = field(repr=False)
    from_wheel: bool = False
    #: the serving interpreter's ``X.Y`` (``None`` for another tritonserver without ``python``)
    python_xy: Optional[str] = None
    #: the wheel whose stubs serve environments of other Pythons (``None`` for another server)
    wheel: Optional[WheelInstallation] = None


def inspect_interpreter(
    python: Optional[str] = None, *, names: OptionNames = PYTHON_NAMES
) -> Interpreter:
    """Describe ``python`` (default: the running interpreter) and find its shared libpython.

    Raises :class:`ServerError` when the interpreter cannot be run or has no shared libpython:
    the stub links ``libpython3.X.so.1.0``, and without it the server waits forever.

    Example::

        inspect_interpreter().xy   # "3.11"
    """
    executable = python or sys.executable
    if python is None or os.path.abspath(python) == os.path.abspath(sys.executable):
        v = sysconfig.get_config_var
        info: Dict[str, Any] = {
            "version": list(sys.version_info[:2]),
            "libdir": v("LIBDIR") or "",
            "multiarch": v("MULTIARCH") or "",
            "instsoname": v("INSTSONAME") or "",
            "shared": bool(v("Py_ENABLE_SHARED")),
        }
    else:
        try:
            out = subprocess.run(
                [executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True
            ).stdout
            info = dict(json.loads(out))
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            raise ServerError(
                f"cannot inspect the serving interpreter {executable!r}: {exc}. Expected a "
                "runnable CPython 3.8+ executable; pass "
                f"{names.option('python', '<path to bin/python>')}."
            ) from exc
    major, minor = (int(x) for x in info["version"])
    libdir = str(info["libdir"])
    soname = str(info["instsoname"]) or f"libpython{major}.{minor}.so.1.0"
    if not soname.startswith("libpython") or ".so" not in soname:
        soname = f"libpython{major}.{minor}.so.1.0"
    candidates = [Path(libdir) / soname]
    if info["multiarch"]:
        candidates.append(Path(libdir) / str(info["multiarch"]) / soname)
    for candidate in candidates:
        if candidate.exists():
            return Interpreter(executable, (major, minor), libdir, str(candidate))
    if ctypes.util.find_library(f"python{major}.{minor}"):
        return Interpreter(executable, (major, minor), libdir, soname)
    raise ServerError(
        f"the serving interpreter {executable!r} (Python {major}.{minor}) has no shared "
        f"library: expected {soname} in {libdir or '<LIBDIR unset>'}, found none "
        f"(Py_ENABLE_SHARED={int(bool(info['shared']))}). triton_python_backend_stub links "
        "libpython and would hang without it. Use an interpreter built with --enable-shared "
        "(pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install X.Y), or install your "
        "distribution's libpython package."
    )


def find_wheel_installation(*, names: OptionNames = PYTHON_NAMES) -> WheelInstallation:
    """Locate the tritonserver of the installed ``nvidia-pytriton`` wheel (without importing
    pytriton).

    Example::

        find_wheel_installation().tritonserver   # .../pytriton/tritonserver/bin/tritonserver
    """
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        # one line with the install command; another server binary is the alternative
        raise missing(
            ["pytriton"],
            feature="tritonpy serve",
            extra="server",
            reason=f"not installed; or pass {names.option('tritonserver', 'PATH')}",
        )
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    root = package_dir / "tritonserver"
    try:
        version = importlib.metadata.version(_WHEEL)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    wheel = WheelInstallation(root, package_dir.parent / "nvidia_pytriton.libs", version)
    if not wheel.tritonserver.is_file():
        raise ServerError(
            f"the nvidia-pytriton wheel ({version}) at {package_dir} has no tritonserver: "
            f"expected {wheel.tritonserver}. Reinstall it with "
            "`pip install --force-reinstall nvidia-pytriton==0.7.0`."
        )
    return wheel


def cache_directory() -> Path:
    """tritonpy's cache: ``$TRITONPY_CACHE_DIR``, else ``$XDG_CACHE_HOME/tritonpy``, else
    ``~/.cache/tritonpy``."""
    explicit = os.environ.get("TRITONPY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "tritonpy"


def _backend_is_complete(python_dir: Path, sources: Mapping[str, Path]) -> bool:
    for name, source in sources.items():
        target = python_dir / name
        try:
            if target.stat().st_size != source.stat().st_size:
                return False
        except OSError:
            return False
    return True


def prepare_backend_directory(
    wheel: WheelInstallation,
    interpreter: Interpreter,
    *,
    cache_dir: Optional[Path] = None,
    names: OptionNames = PYTHON_NAMES,
) -> Path:
    """Assemble ``<dir>/python`` from the wheel's Python backend and the stub for
    ``interpreter``'s Python version; return ``<dir>`` (the ``--backend-directory``).

    The directory lives in the cache (``backends/pytriton-<ver>-py<X.Y>``), is built in a
    temporary sibling and renamed into place, so concurrent callers never see half of it.
    Falls back to a fresh temporary directory when the cache is not writable.

    Example::

        backends = prepare_backend_directory(find_wheel_installation(), inspect_interpreter())
    """
    stub = wheel.stub(interpreter.xy)
    if not stub.is_file():
        raise ServerError(
            f"no triton_python_backend_stub for Python {interpreter.xy} in the nvidia-pytriton "
            f"wheel ({wheel.version}): expected {stub}; the wheel has stubs for "
            f"{', '.join(wheel.stub_versions()) or 'no version'}. Serve with one of those "
            f"Pythons ({names.option('python', '<path to bin/python>')}), or build a stub for "
            f"this one and pass {names.option('backend_directory', 'DIR')}."
        )
    sources = {name: wheel.python_backend / name for name in _BACKEND_FILES}
    missing = [str(p) for p in sources.values() if not p.is_file()]
    if missing:
        raise ServerError(
            f"the nvidia-pytriton wheel ({wheel.version}) lacks Python backend files: "
            f"{', '.join(missing)}. Reinstall it with "
            "`pip install --force-reinstall nvidia-pytriton==0.7.0`."
        )
    sources[_STUB] = stub
    key = f"pytriton-{wheel.version}-py{interpreter.xy}"
    base = (cache_dir or cache_directory()) / "backends"
    final = base / key
    if _backend_is_complete(final / "python", sources):
        return final
    try:
        base.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=base))
    except OSError:
        staging = Path(tempfile.mkdtemp(prefix=f"tritonpy-backends-{key}-"))
        final = staging
    python_dir = staging / "python"
    python_dir.mkdir(exist_ok=True)
    for name, source in sources.items():
        shutil.copy2(source, python_dir / name)
    if final == staging:
        return final
    if final.exists():  # incomplete or stale: move it away, then replace it
        stale = Path(tempfile.mkdtemp(prefix=f".{key}-stale-", dir=base))
        with contextlib.suppress(OSError):
            final.rename(stale / "old")
        shutil.rmtree(stale, ignore_errors=True)
    try:
        staging.rename(final)
    except OSError:  # another process won the race
        shutil.rmtree(staging, ignore_errors=True)
        if not _backend_is_complete(final / "python", sources):
            raise ServerError(
                f"cannot prepare the Python backend directory {final}: it is incomplete and "
                "could not be replaced. Delete it and retry."
            ) from None
    return final


def _prepend(value: str, existing: Optional[str]) -> str:
    return value + (os.pathsep + existing if existing else "")


def resolve_installation(
    *,
    tritonserver: Optional[str] = None,
    backend_directory: Optional[str] = None,
    python: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    names: OptionNames = PYTHON_NAMES,
) -> Installation:
    """Choose the tritonserver binary, backend directory and process environment.

    - nothing given: the wheel's tritonserver; a prepared backend directory with the stub for
      ``python``; ``LD_LIBRARY_PATH`` = wheel libs + the interpreter's ``lib/``; ``PATH`` = the
      interpreter's ``bin/`` first.
    - ``tritonserver`` given: that installation as-is; the backend directory defaults to
      ``<prefix>/backends`` (the NGC layout ``/opt/tritonserver/{bin,backends}``); the
      environment is left alone unless ``python`` is given.

    Example::

        inst = resolve_installation()
        subprocess.run([inst.tritonserver, "--help"], env=inst.env)
    """
    base_env = dict(os.environ if env is None else env)
    if tritonserver is not None:
        binary = Path(tritonserver)
        if not binary.is_file() or not os.access(binary, os.X_OK):
            raise ServerError(
                f"tritonserver {tritonserver!r} is not an executable file. Pass the path of "
                f"the binary: {names.option('tritonserver', '/opt/tritonserver/bin/tritonserver')}."
            )
        if backend_directory is None:
            guess = binary.resolve().parent.parent / "backends"
            if not guess.is_dir():
                raise ServerError(
                    f"no backend directory for tritonserver {tritonserver!r}: expected "
                    f"{guess} (the <prefix>/bin, <prefix>/backends layout). Pass "
                    f"{names.option('backend_directory', 'DIR')}."
                )
            backend_directory = str(guess)
        xy = None
        if python is not None:
            interp = inspect_interpreter(python, names=names)
            xy = interp.xy
            base_env["PATH"] = _prepend(interp.bindir, base_env.get("PATH"))
            base_env["LD_LIBRARY_PATH"] = _prepend(interp.libdir, base_env.get("LD_LIBRARY_PATH"))
        return Installation(binary, Path(backend_directory), base_env, python_xy=xy)

    wheel = find_wheel_installation(names=names)
    interp = inspect_interpreter(python, names=names)
    if backend_directory is None:
        backends = prepare_backend_directory(wheel, interp, names=names)
    else:
        backends = Path(backend_directory)
    libs = [str(wheel.libs)] if wheel.libs.is_dir() else []
    if interp.libdir:
        libs.append(interp.libdir)
    if libs:
        base_env["LD_LIBRARY_PATH"] = _prepend(
            os.pathsep.join(libs), base_env.get("LD_LIBRARY_PATH")
        )
    base_env["PATH"] = _prepend(interp.bindir, base_env.get("PATH"))
    return Installation(
        wheel.tritonserver, backends, base_env, from_wheel=True, python_xy=interp.xy, wheel=wheel
    )
