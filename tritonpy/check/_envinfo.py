"""What an ``EXECUTION_ENV_PATH`` names and holds: where it resolves, and inside the directory
or ``.tar.gz``, ``bin/activate``, ``lib/libpythonX.Y.so*`` and numpy's version.

Example::

    place = resolve_env_path("$$TRITON_MODEL_DIRECTORY/env.tar.gz", Path("repo/preprocess"))
    contents = inspect_env(place.path)
    contents.python, contents.numpy        # ('3.10', '1.26.4')
"""

from __future__ import annotations

import os
import re
import tarfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import List, Literal, Optional, Tuple

from .._tooling.archives import member_name
from .._tooling.model_dirs import MODEL_DIR_VARIABLE

_LIBPYTHON = re.compile(r"^lib/libpython(\d+\.\d+)[^/]*\.so")
_LIBRARY = re.compile(r"^lib/([^/]+\.so(?:\.[^/]*)?)$")
_NUMPY = re.compile(r"^lib/python\d+\.\d+/site-packages/numpy-([^/]+)\.dist-info(?:/|$)")

#: how an EXECUTION_ENV_PATH value is anchored (see :class:`EnvPlace`)
EnvPathKind = Literal["model", "relative", "absolute"]


@dataclass(frozen=True)
class EnvPlace:
    """Where an EXECUTION_ENV_PATH value points. ``kind`` is ``"model"`` (it starts from
    ``$$TRITON_MODEL_DIRECTORY``), ``"relative"`` (a bare relative path: the server resolves
    it against its working directory) or ``"absolute"``."""

    raw: str
    path: Path
    kind: EnvPathKind
    inside_model_dir: bool


@dataclass(frozen=True)
class EnvContents:
    """What an environment holds (``pythons``: every libpython X.Y found; ``libraries``: the
    shared-library names directly in ``lib/``, where the stub looks for its libpython)."""

    has_activate: bool
    pythons: Tuple[str, ...]
    numpy: Optional[str]
    libraries: Tuple[str, ...] = ()

    @property
    def python(self) -> Optional[str]:
        return self.pythons[0] if len(self.pythons) == 1 else None


def resolve_env_path(raw: str, model_dir: Path) -> EnvPlace:
    """Expand ``$$TRITON_MODEL_DIRECTORY`` to ``model_dir``; relative paths are taken from the
    model directory too (what users mean), absolute ones as they are."""
    model_dir = model_dir.absolute()
    kind: EnvPathKind
    if MODEL_DIR_VARIABLE in raw:
        path, kind = Path(raw.replace(MODEL_DIR_VARIABLE, str(model_dir))), "model"
    elif os.path.isabs(raw):
        path, kind = Path(raw), "absolute"
    else:
        path, kind = model_dir / raw, "relative"
    normal = Path(os.path.normpath(path))
    inside = normal == model_dir or model_dir in normal.parents
    return EnvPlace(raw, normal, kind, inside)


#: member lists by (device, inode, mtime, size): hard links of one archive (an export's
#: models of one spec) are read once
_MEMBERS: OrderedDict[Tuple[int, int, int, int], Tuple[tarfile.TarInfo, ...]] = OrderedDict()
_KEPT = 16


def archive_members(path: Path) -> Tuple[tarfile.TarInfo, ...]:
    """The members of a ``.tar.gz`` (read once per file version). Raises ``tarfile.TarError``,
    ``OSError`` or ``EOFError`` when it is not a readable gzip tar."""
    stat = path.stat()
    key = (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)
    if key in _MEMBERS:
        _MEMBERS.move_to_end(key)
        return _MEMBERS[key]
    with tarfile.open(path, "r:gz") as archive:
        members = tuple(archive.getmembers())
    _MEMBERS[key] = members
    while len(_MEMBERS) > _KEPT:
        _MEMBERS.popitem(last=False)
    return members


def inspect_env(path: Path) -> EnvContents:
    """The contents of an environment directory or ``.tar.gz`` (archive errors propagate)."""
    if path.is_dir():
        names: List[str] = []
        if (path / "bin" / "activate").is_file():
            names.append("bin/activate")
        names += [f"lib/{p.name}" for p in (path / "lib").glob("*.so*")]
        names += [
            f"lib/{p.parent.parent.name}/site-packages/{p.name}"
            for p in (path / "lib").glob("python*/site-packages/numpy-*.dist-info")
        ]
    else:
        names = [member_name(m.name) for m in archive_members(path)]
    pythons = sorted({m.group(1) for m in map(_LIBPYTHON.match, names) if m})
    numpys = sorted({m.group(1) for m in map(_NUMPY.match, names) if m})
    libraries = sorted({m.group(1) for m in map(_LIBRARY.match, names) if m})
    return EnvContents(
        "bin/activate" in names,
        tuple(pythons),
        numpys[-1] if numpys else None,
        tuple(libraries),
    )
