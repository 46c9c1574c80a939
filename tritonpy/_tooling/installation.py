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
import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple

from .._runtime._optional import missing, require
from .errors import ServerError
from .options import PYTHON_NAMES, OptionNames
from .pythons import PythonProbeError, libpython_of, no_libpython, probe_python

_WHEEL = "nvidia-pytriton"
_BACKEND_FILES = ("libtriton_python.so", "triton_python_backend_utils.py")
_STUB = "triton_python_backend_stub"


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
    try:
        facts = probe_python(python)
    except PythonProbeError as exc:
        raise ServerError(
            f"cannot inspect the serving interpreter {python!r}: {exc}. Expected a "
            "runnable CPython 3.8+ executable; pass "
            f"{names.option('python', '<path to bin/python>')}."
        ) from exc
    libpython = libpython_of(facts)
    if libpython is None:
        raise ServerError(no_libpython(facts))
    return Interpreter(facts.executable, facts.version, facts.libdir, libpython)


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
    """tritonpy's cache: ``$TRITONPY_CACHE_DIR``, else the user cache directory of the
    platform (platformdirs; on Linux ``$XDG_CACHE_HOME/tritonpy``, else ``~/.cache/tritonpy``)."""
    explicit = os.environ.get("TRITONPY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    require("platformdirs", feature="tritonpy's cache directory", extra="tools")
    import platformdirs

    return platformdirs.user_cache_path("tritonpy", appauthor=False)


def _backend_is_complete(python_dir: Path, sources: Mapping[str, Path]) -> bool:
    for name, source in sources.items():
        target = python_dir / name
        try:
            if target.stat().st_size != source.stat().st_size:
                return False
        except OSError:
            return False
    return True


def _backend_sources(
    wheel: WheelInstallation, interpreter: Interpreter, names: OptionNames
) -> Dict[str, Path]:
    """The files of ``<dir>/python``: the wheel's Python backend and the stub for
    ``interpreter``'s Python, each checked to exist."""
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
    absent = [str(p) for p in sources.values() if not p.is_file()]
    if absent:
        raise ServerError(
            f"the nvidia-pytriton wheel ({wheel.version}) lacks Python backend files: "
            f"{', '.join(absent)}. Reinstall it with "
            "`pip install --force-reinstall nvidia-pytriton==0.7.0`."
        )
    sources[_STUB] = stub
    return sources


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
    sources = _backend_sources(wheel, interpreter, names)
    key = f"pytriton-{wheel.version}-py{interpreter.xy}"
    base = (cache_dir or cache_directory()) / "backends"
    final = base / key
    if _backend_is_complete(final / "python", sources):
        return final
    try:
        base.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=base))
    except OSError:  # the cache is not writable: a directory of this run only
        staging = Path(tempfile.mkdtemp(prefix=f"tritonpy-backends-{key}-"))
        _copy_backend(sources, staging)
        return staging
    _copy_backend(sources, staging)
    _move_into_place(staging, final, sources)
    return final


def _copy_backend(sources: Mapping[str, Path], directory: Path) -> None:
    python_dir = directory / "python"
    python_dir.mkdir(exist_ok=True)
    for name, source in sources.items():
        shutil.copy2(source, python_dir / name)


def _move_into_place(staging: Path, final: Path, sources: Mapping[str, Path]) -> None:
    """Rename the complete ``staging`` to ``final``, replacing an incomplete or stale one;
    when another process wins the race, its directory is used if complete."""
    if final.exists():  # incomplete or stale: move it away, then replace it
        stale = Path(tempfile.mkdtemp(prefix=f".{final.name}-stale-", dir=final.parent))
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
        return _given_installation(tritonserver, backend_directory, python, base_env, names)
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
    return Installation(wheel.tritonserver, backends, base_env, python_xy=interp.xy, wheel=wheel)


def _given_installation(
    tritonserver: str,
    backend_directory: Optional[str],
    python: Optional[str],
    base_env: Dict[str, str],
    names: OptionNames,
) -> Installation:
    """Another tritonserver than the wheel's, used as it is installed."""
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
