"""Read the ``DT_NEEDED`` entries of an ELF file (which shared libraries it links), from its
program headers: ``PT_DYNAMIC`` holds the dynamic entries, ``DT_STRTAB`` the address of their
strings, mapped to a file offset through the ``PT_LOAD`` segments. No readelf, no pyelftools.

>>> needed_libraries("backends/python/triton_python_backend_stub")      # doctest: +SKIP
['libcudart.so.12', 'libpython3.10.so.1.0', 'libstdc++.so.6', ...]
>>> linked_python("backends/python/triton_python_backend_stub")         # doctest: +SKIP
'3.10'
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import List, Optional, Tuple, Union

from ..errors import ToolError

__all__ = ["ElfError", "linked_python", "needed_libraries"]

_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB = 0, 1, 5
# libpython3.10.so.1.0; auditwheel-grafted copies look like libpython3-419a3a08.13.so.1.0
_LIBPYTHON = re.compile(r"^libpython(\d+)(?:-[0-9a-f]+)?\.(\d+)")


class ElfError(ToolError):
    """The file is not an ELF object tritonpy can read."""


def needed_libraries(path: Union[str, Path]) -> List[str]:
    """The ``DT_NEEDED`` names of an ELF executable or shared library, in order."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ElfError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise ElfError(f"{path}: not an ELF file (its first bytes are {data[:4]!r})")
    wide = data[4] == 2
    order = "<" if data[5] == 1 else ">"
    try:
        return _needed(data, wide, order)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ElfError(f"{path}: truncated or malformed ELF file ({exc})") from exc


def _needed(data: bytes, wide: bool, order: str) -> List[str]:
    if wide:
        phoff, phentsize, phnum = (
            struct.unpack_from(order + "Q", data, 32)[0],
            *struct.unpack_from(order + "HH", data, 54),
        )
        phdr, dyn = order + "IIQQQQQQ", order + "qQ"
    else:
        phoff, phentsize, phnum = (
            struct.unpack_from(order + "I", data, 28)[0],
            *struct.unpack_from(order + "HH", data, 42),
        )
        phdr, dyn = order + "IIIIIIII", order + "iI"
    loads: List[Tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dynamic: Optional[Tuple[int, int]] = None  # (offset, size)
    for index in range(phnum):
        fields = struct.unpack_from(phdr, data, phoff + index * phentsize)
        if wide:
            p_type, _, p_offset, p_vaddr, _, p_filesz = fields[:6]
        else:
            p_type, p_offset, p_vaddr, _, p_filesz = fields[:5]
        if p_type == _PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == _PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return []  # statically linked
    size = struct.calcsize(dyn)
    offsets: List[int] = []
    strtab: Optional[int] = None
    for position in range(dynamic[0], dynamic[0] + dynamic[1] - size + 1, size):
        tag, value = struct.unpack_from(dyn, data, position)
        if tag == _DT_NULL:
            break
        if tag == _DT_NEEDED:
            offsets.append(value)
        elif tag == _DT_STRTAB:
            strtab = value
    if strtab is None:
        return []
    base = next((off + strtab - va for va, off, sz in loads if va <= strtab < va + sz), None)
    if base is None:
        raise IndexError("DT_STRTAB lies outside every loadable segment")
    names = []
    for offset in offsets:
        start = base + offset
        end = data.index(b"\0", start)
        names.append(data[start:end].decode("utf-8"))
    return names


def linked_python(path: Union[str, Path]) -> Optional[str]:
    """The ``X.Y`` of the ``libpythonX.Y.so`` an ELF file links, or None if it links none."""
    for name in needed_libraries(path):
        match = _LIBPYTHON.match(name)
        if match:
            return f"{match.group(1)}.{match.group(2)}"
    return None
