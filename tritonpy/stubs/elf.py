"""Read (and minimally edit) the dynamic section of an ELF file, without readelf.

Used to check that a ``triton_python_backend_stub`` needs exactly ``libpython3.X.so.1.0`` and
to point a copied interpreter's ``RUNPATH`` at ``$ORIGIN/../lib`` so it stays relocatable.

Example::

    info = read_dynamic("triton_python_backend_stub")
    info.needed        # ['libpython3.10.so.1.0', 'libarchive.so.13', ...]
    check_libpython("triton_python_backend_stub", "3.10")
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Dict, List, Optional, Tuple, Union

from .._runtime.errors import ToolError

__all__ = [
    "ElfDynamic",
    "ElfError",
    "check_libpython",
    "linked_python",
    "needed_libraries",
    "read_dynamic",
    "set_runpath",
]

PathLike = Union[str, "os.PathLike[str]"]

_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 14, 15, 29
_SHT_DYNSYM, _SHT_DYNAMIC = 11, 6
_MACHINES = {3: "i386", 40: "arm", 62: "x86_64", 183: "aarch64", 21: "ppc64", 243: "riscv64"}
# libpython3.10.so.1.0; auditwheel-grafted copies look like libpython3-419a3a08.13.so.1.0
_LIBPYTHON = re.compile(r"^libpython(\d+)(?:-[0-9a-f]+)?\.(\d+)[a-z]*\.so")


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
    # file offsets of the RUNPATH/RPATH strings and their lengths (for set_runpath)
    _path_strings: Dict[int, Tuple[int, int]] = field(default_factory=dict, repr=False)
    _other_strings: List[int] = field(default_factory=list, repr=False)

    @property
    def libpythons(self) -> List[str]:
        """The ``libpython*`` entries of ``needed``."""
        return [n for n in self.needed if _LIBPYTHON.match(n)]


def _read(stream: BinaryIO, offset: int, size: int) -> bytes:
    stream.seek(offset)
    data = stream.read(size)
    if len(data) != size:
        raise struct.error(f"wanted {size} bytes at offset {offset}")
    return data


def _cstring(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def read_dynamic(path: PathLike) -> ElfDynamic:
    """Parse the ``DT_NEEDED``, ``DT_RUNPATH``, ``DT_RPATH`` and ``DT_SONAME`` entries.

    Example::

        read_dynamic("/usr/bin/python3").needed   # ['libc.so.6', ...]
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as stream:
            ident = stream.read(16)
            if len(ident) < 16 or ident[:4] != b"\x7fELF":
                raise ElfError(f"{name}: not an ELF file (its first bytes are {ident[:4]!r})")
            is64 = ident[4] == 2
            end = "<" if ident[5] == 1 else ">"
            if is64:
                header = struct.unpack(end + "HHIQQQIHHHHHH", _read(stream, 16, 48))
            else:
                header = struct.unpack(end + "HHIIIIIHHHHHH", _read(stream, 16, 36))
            machine = _MACHINES.get(header[1], f"machine-{header[1]}")
            shoff, shentsize, shnum = header[5], header[10], header[11]
            if not shoff or not shnum:
                raise ElfError(f"{name} has no section headers; cannot read its dynamic section")
            sections = []
            for i in range(shnum):
                raw = _read(stream, shoff + i * shentsize, shentsize)
                if is64:
                    _, kind, _, _, off, size, link, _, _, entsize = struct.unpack(
                        end + "IIQQQQIIQQ", raw[:64]
                    )
                else:
                    _, kind, _, _, off, size, link, _, _, entsize = struct.unpack(
                        end + "IIIIIIIIII", raw[:40]
                    )
                sections.append((kind, off, size, link, entsize))
            info = ElfDynamic(name, machine)
            dynamic = [s for s in sections if s[0] == _SHT_DYNAMIC]
            if not dynamic:
                return info  # statically linked
            kind, off, size, link, entsize = dynamic[0]
            str_off, str_size = sections[link][1], sections[link][2]
            strtab = _read(stream, str_off, str_size)
            fmt = end + ("qQ" if is64 else "iI")
            step = entsize or struct.calcsize(fmt)
            raw_dyn = _read(stream, off, size)
            for pos in range(0, size - step + 1, step):
                tag, value = struct.unpack(fmt, raw_dyn[pos : pos + struct.calcsize(fmt)])
                if tag == _DT_NULL:
                    break
                if tag == _DT_NEEDED:
                    info.needed.append(_cstring(strtab, value))
                elif tag == _DT_SONAME:
                    info.soname = _cstring(strtab, value)
                if tag in (_DT_RUNPATH, _DT_RPATH):
                    text = _cstring(strtab, value)
                    info._path_strings[tag] = (str_off + value, len(text.encode()))
                    if tag == _DT_RUNPATH:
                        info.runpath = text
                    else:
                        info.rpath = text
                elif tag in (_DT_NEEDED, _DT_SONAME):
                    info._other_strings.append(str_off + value)
            for kind, off, size, link, entsize in sections:
                if kind == _SHT_DYNSYM and sections[link][1] == str_off and entsize:
                    raw_sym = _read(stream, off, size)
                    for pos in range(0, size - entsize + 1, entsize):
                        (st_name,) = struct.unpack(end + "I", raw_sym[pos : pos + 4])
                        info._other_strings.append(str_off + st_name)
            return info
    except OSError as exc:
        raise ElfError(f"cannot read {name}: {exc.strerror or exc}") from exc
    except (struct.error, IndexError) as exc:
        raise ElfError(f"{name}: truncated or malformed ELF file ({exc})") from exc


def needed_libraries(path: PathLike) -> List[str]:
    """The ``DT_NEEDED`` names of an ELF executable or shared library, in order."""
    return read_dynamic(path).needed


def linked_python(path: PathLike) -> Optional[str]:
    """The ``X.Y`` of the ``libpythonX.Y.so`` an ELF file links, or None if it links none."""
    for name in read_dynamic(path).needed:
        match = _LIBPYTHON.match(name)
        if match:
            return f"{match.group(1)}.{match.group(2)}"
    return None


def set_runpath(path: PathLike, value: str) -> bool:
    """Overwrite the ``RUNPATH`` (or ``RPATH``) string of ``path`` in place with ``value``.

    Works only when ``value`` is not longer than the current string and no other entry shares
    its bytes; returns False (file unchanged) otherwise, or when there is no such entry.

    Example::

        set_runpath("env/bin/python3.10", "$ORIGIN/../lib")   # True
    """
    info = read_dynamic(path)
    new = value.encode()
    targets = list(info._path_strings.values())
    if not targets:
        return False
    for start, length in targets:
        if len(new) > length:
            return False
        if any(start < other <= start + length for other in info._other_strings):
            return False
    with open(os.fspath(path), "r+b") as stream:
        for start, length in targets:
            stream.seek(start)
            stream.write(new + b"\0" * (length - len(new)))
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
