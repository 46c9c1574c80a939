"""Find a local CPython X.Y installation with a shared libpython to build an environment from.

Searched in order: ``--python-path``; pyenv (``$PYENV_ROOT`` or ``~/.pyenv``); uv-managed
Pythons (``$UV_PYTHON_INSTALL_DIR`` or ``~/.local/share/uv/python``); ``pythonX.Y`` on PATH;
``/usr/local/bin`` and ``/usr/bin``. A virtualenv's python is accepted: its base installation
is what gets copied.

Example::

    base = find_interpreter("3.10")
    base.prefix, base.libpython   # (~/.pyenv/versions/3.10.13, .../lib/libpython3.10.so.1.0)
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Union

from .._tooling.errors import EnvError
from .._tooling.pythons import (
    PythonFacts,
    PythonProbeError,
    libpython_of,
    no_libpython,
    probe_python,
)

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class BaseInterpreter:
    """A CPython installation that can be copied into a relocatable environment."""

    executable: Path  # what was asked for (may be a virtualenv's python)
    xy: str  # "3.10"
    version: str  # "3.10.13"
    prefix: Path  # the base installation (sys.base_prefix)
    binary: Path  # the real interpreter binary, bin/python3.X of the base installation
    stdlib: Path  # lib/python3.X of the base installation
    libpython: Path  # the shared libpython3.X.so.1.0 (a real file)
    include: Optional[Path]  # the C headers (include/python3.X), when installed


def probe_interpreter(executable: PathLike) -> BaseInterpreter:
    """Describe ``executable``'s base installation; raise :class:`EnvError` when it cannot be
    run, is not CPython, or has no shared libpython.

    Example::

        probe_interpreter("~/.pyenv/versions/3.10.13/bin/python3.10").xy   # "3.10"
    """
    exe = Path(executable)
    try:
        facts = probe_python(os.fspath(exe), isolated=True)
    except PythonProbeError as exc:
        raise EnvError(f"cannot run the Python {exe}: {exc}") from exc
    if facts.implementation != "cpython":
        raise EnvError(f"{exe} is {facts.implementation}, not CPython; the stub embeds CPython")
    libpython = _own_libpython(exe, facts)
    binary = _interpreter_binary(exe, facts)
    stdlib = _standard_library(exe, facts)
    include = Path(facts.include) if facts.include else None
    return BaseInterpreter(
        exe,
        facts.xy,
        facts.full_version,
        Path(facts.base_prefix),
        binary,
        stdlib,
        libpython,
        include if include and include.is_dir() else None,
    )


def _own_libpython(exe: Path, facts: PythonFacts) -> Path:
    """The shared libpython inside the installation (a copy must carry it along)."""
    found = libpython_of(facts)
    if found is None:
        raise EnvError(no_libpython(facts))
    libpython = Path(found)
    if not libpython.is_absolute() or not libpython.is_file():
        raise EnvError(
            f"{exe} (Python {facts.xy}) uses the shared library {found} from the "
            f"system library path, not from its installation; expected a file in "
            f"{facts.libdir}. Use a pyenv or uv-managed Python (--python-path)."
        )
    return libpython.resolve()


def _interpreter_binary(exe: Path, facts: PythonFacts) -> Path:
    xy = facts.xy
    candidates = [
        Path(facts.bindir) / f"python{xy}",
        Path(facts.base_prefix) / "bin" / f"python{xy}",
    ]
    binary = next((c.resolve() for c in candidates if c.is_file()), None)
    if binary is None:
        raise EnvError(f"{exe}: no interpreter binary python{xy} in {facts.bindir}")
    return binary


def _standard_library(exe: Path, facts: PythonFacts) -> Path:
    stdlib = Path(facts.libdest)
    if not (stdlib / "os.py").is_file():
        raise EnvError(f"{exe}: its standard library {stdlib} has no os.py; is it complete?")
    return stdlib


def _version_key(path: Path) -> Tuple[int, ...]:
    numbers = re.findall(r"\d+", path.name.split("-")[1] if "-" in path.name else path.name)
    return tuple(int(n) for n in numbers[:3])


def candidate_paths(xy: str) -> Iterator[Path]:
    """Interpreter executables that may be CPython ``xy``, best first (newest patch level)."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    versions = pyenv_root / "versions"
    if versions.is_dir():
        found = [p for p in versions.iterdir() if re.fullmatch(rf"{re.escape(xy)}\.\d+", p.name)]
        for prefix in sorted(found, key=_version_key, reverse=True):
            yield prefix / "bin" / f"python{xy}"
    uv_root = os.environ.get("UV_PYTHON_INSTALL_DIR")
    uv_dir = Path(uv_root) if uv_root else Path.home() / ".local" / "share" / "uv" / "python"
    if uv_dir.is_dir():
        found = [p for p in uv_dir.glob(f"cpython-{xy}.*-linux-*") if "freethreaded" not in p.name]
        for prefix in sorted(found, key=_version_key, reverse=True):
            yield prefix / "bin" / f"python{xy}"
    on_path = shutil.which(f"python{xy}")
    if on_path:
        yield Path(on_path)
    for directory in ("/usr/local/bin", "/usr/bin"):
        yield Path(directory) / f"python{xy}"


def find_interpreter(xy: str, python_path: Optional[PathLike] = None) -> BaseInterpreter:
    """The first usable CPython ``xy`` (``"3.10"``), or the one at ``python_path``.

    Raises :class:`EnvError` listing every candidate tried and why it was refused.

    Example::

        find_interpreter("3.10").binary   # .../versions/3.10.13/bin/python3.10
    """
    if python_path is not None:
        found = probe_interpreter(python_path)
        if found.xy != xy:
            raise EnvError(
                f"--python-path {python_path} is Python {found.xy}, but Python {xy} was "
                f"requested; pass --python {found.xy} or a Python {xy} interpreter"
            )
        return found
    reasons: List[str] = []
    seen = set()
    for candidate in candidate_paths(xy):
        if candidate in seen or not candidate.is_file():
            continue
        seen.add(candidate)
        try:
            found = probe_interpreter(candidate)
        except EnvError as exc:
            reasons.append(f"  {candidate}: {str(exc).splitlines()[0]}")
            continue
        if found.xy == xy:
            return found
        reasons.append(f"  {candidate}: is Python {found.xy}")
    tried = "\n".join(reasons) or "  (no pythonX.Y found in pyenv, uv, PATH, /usr/bin)"
    raise EnvError(
        f"no local CPython {xy} with a shared libpython found; tried:\n{tried}\nInstall one "
        f"(`PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install {xy}` or `uv python install "
        f"{xy}`), pass --python-path /path/to/python{xy}, or use --builder conda."
    )
