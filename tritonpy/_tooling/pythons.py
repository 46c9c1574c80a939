"""What a Python interpreter says about itself: one probe for the server (which Python's stub
serves the models) and for the environment builder (which installation gets copied).

The facts come from ``sysconfig`` in the interpreter itself: in this process when it is the
running interpreter, else in a child process running the same code.

Example::

    facts = probe_python("/usr/bin/python3.10")
    facts.xy, libpython_of(facts)     # ('3.10', '/usr/lib/x86_64-linux-gnu/libpython3.10.so.1.0')
"""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from .._runtime.errors import ToolError

# run as is by the probed interpreter (any CPython 3.x): keep it free of f-strings and imports
# of anything beyond the standard library
_FACTS_SOURCE = """
import json, platform, sys, sysconfig
def facts():
    v = sysconfig.get_config_var
    return {
        "version": list(sys.version_info[:2]), "full_version": platform.python_version(),
        "implementation": sys.implementation.name, "base_prefix": sys.base_prefix,
        "bindir": v("BINDIR") or "", "libdest": v("LIBDEST") or "", "libdir": v("LIBDIR") or "",
        "include": v("INCLUDEPY") or "", "multiarch": v("MULTIARCH") or "",
        "instsoname": v("INSTSONAME") or "", "shared": bool(v("Py_ENABLE_SHARED")),
    }
"""


class PythonProbeError(ToolError):
    """The interpreter could not be run, or did not answer the probe."""


@dataclass(frozen=True)
class PythonFacts:
    """An interpreter's own description of itself (its ``sysconfig`` variables)."""

    executable: str
    version: Tuple[int, int]
    full_version: str  # "3.10.13"
    implementation: str  # "cpython"
    base_prefix: str
    bindir: str
    libdest: str  # the standard library's directory
    libdir: str
    include: str
    multiarch: str
    instsoname: str
    shared: bool

    @property
    def xy(self) -> str:
        """``"3.11"``."""
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def soname(self) -> str:
        """The file name of its shared libpython (``libpython3.11.so.1.0``)."""
        soname = self.instsoname
        if not soname.startswith("libpython") or ".so" not in soname:
            soname = f"libpython{self.xy}.so.1.0"
        return soname


def _facts_here() -> Dict[str, Any]:
    namespace: Dict[str, Any] = {}
    exec(_FACTS_SOURCE, namespace)  # the very code the child runs, so both answer alike
    return dict(namespace["facts"]())


def probe_python(executable: Optional[str] = None, *, isolated: bool = False) -> PythonFacts:
    """The facts of ``executable`` (default: the running interpreter). ``isolated`` runs it
    with ``-I`` (no ``PYTHON*`` variables, no user site). Raises :class:`PythonProbeError`
    with the cause when it cannot be run or answers nonsense."""
    chosen = executable or sys.executable
    if executable is None or os.path.abspath(executable) == os.path.abspath(sys.executable):
        info = _facts_here()
    else:
        flags = ["-I"] if isolated else []
        code = _FACTS_SOURCE + "print(json.dumps(facts()))\n"
        try:
            out = subprocess.run(
                [chosen, *flags, "-c", code], capture_output=True, text=True, timeout=60, check=True
            ).stdout
            info = dict(json.loads(out))
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            raise PythonProbeError(str(exc)) from exc
    major, minor = (int(x) for x in info.pop("version"))
    return PythonFacts(executable=chosen, version=(major, minor), **info)


def libpython_of(facts: PythonFacts) -> Optional[str]:
    """The interpreter's shared libpython: an absolute path in its ``LIBDIR``, else the bare
    soname when the dynamic linker's cache knows it, else ``None``."""
    candidates = [Path(facts.libdir) / facts.soname]
    if facts.multiarch:
        candidates.append(Path(facts.libdir) / facts.multiarch / facts.soname)
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    if ctypes.util.find_library(f"python{facts.xy}"):
        return facts.soname
    return None


def no_libpython(facts: PythonFacts) -> str:
    """Why an interpreter without a shared libpython cannot serve, and how to get one."""
    return (
        f"the serving interpreter {facts.executable!r} (Python {facts.xy}) has no shared "
        f"library: expected {facts.soname} in {facts.libdir or '<LIBDIR unset>'}, found none "
        f"(Py_ENABLE_SHARED={int(facts.shared)}). triton_python_backend_stub links "
        "libpython and would hang without it. Use an interpreter built with --enable-shared "
        "(pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install X.Y), or install your "
        "distribution's libpython package."
    )
