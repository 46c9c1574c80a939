"""The facts of a model's environment, in one place: the archive's name
(``<stem>_py3.X.tar.gz``), pack-env's build record beside it (``.tritonpy-env.json``), where an
``EXECUTION_ENV_PATH`` value puts it, what it holds (``bin/activate``, ``lib/libpythonX.Y.so*``,
numpy's version) and so its Python.

Light on purpose (the standard library and two ``_tooling`` helpers): the server, the check,
export and pack-env all read these facts, and none of them should load another's machinery to
do so.

Example::

    archive_name("preprocess", "3.10")                   # 'preprocess_py3.10.tar.gz'
    place = resolve_env_path("$$TRITON_MODEL_DIRECTORY/env.tar.gz", Path("repo/preprocess"))
    environment_python(place.path)                       # '3.10' (record, name, then contents)
    inspect_env(place.path).numpy                        # '1.26.4'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tarfile
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Literal, Mapping, Optional, Tuple

from .archives import member_name, staging_file
from .digests import file_sha256
from .model_dirs import MODEL_DIR_VARIABLE

#: pack-env's build record, beside the archives it describes
RECORD_NAME = ".tritonpy-env.json"
_NAMED_PYTHON = re.compile(r"_py(3\.\d+)\.tar\.gz$")
_PYTHON_XY = re.compile(r"3\.\d+")
_LIBPYTHON = re.compile(r"^lib/libpython(\d+\.\d+)[^/]*\.so")
_LIBRARY = re.compile(r"^lib/([^/]+\.so(?:\.[^/]*)?)$")
_NUMPY = re.compile(r"^lib/python\d+\.\d+/site-packages/numpy-([^/]+)\.dist-info(?:/|$)")
#: what reading an unreadable or truncated archive raises
_UNREADABLE = (tarfile.TarError, OSError, EOFError, zlib.error)


# --- the name ---------------------------------------------------------------------------------


def archive_name(stem: str, python: str) -> str:
    """The file name of an environment archive for Python ``python`` (``X.Y``).

    >>> archive_name("preprocess", "3.10")
    'preprocess_py3.10.tar.gz'
    """
    return f"{stem}_py{python}.tar.gz"


def named_python(name: str) -> Optional[str]:
    """The Python ``X.Y`` an archive's name carries, or ``None`` when it carries none.

    >>> named_python("preprocess_py3.10.tar.gz"), named_python("env.tar.gz")
    ('3.10', None)
    """
    found = _NAMED_PYTHON.search(name)
    return found.group(1) if found else None


# --- the build record -------------------------------------------------------------------------


def build_key(inputs: Mapping[str, Any]) -> str:
    """A stable hash of an archive's build inputs (spec, Python, release, ...).

    >>> build_key({"python": "3.10"}) == build_key({"python": "3.10"})
    True
    """
    return hashlib.sha256(json.dumps(dict(inputs), sort_keys=True).encode()).hexdigest()


def read_record(model_dir: Path) -> Dict[str, Dict[str, Any]]:
    """Archive name -> record entry; empty when there is no (readable) record."""
    try:
        data = json.loads((model_dir / RECORD_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    archives = data.get("archives") if isinstance(data, dict) else None
    return dict(archives) if isinstance(archives, dict) else {}


def recorded_python(archive: Path) -> Optional[str]:
    """The Python ``X.Y`` pack-env recorded for ``archive``, or ``None`` (no record, no entry,
    or not an ``X.Y``)."""
    entry = read_record(archive.parent).get(archive.name)
    python = entry.get("python") if isinstance(entry, dict) else None
    return python if isinstance(python, str) and _PYTHON_XY.fullmatch(python) else None


def is_up_to_date(model_dir: Path, archive: Path, key: str) -> bool:
    """True when ``archive`` exists, was recorded with ``key`` and is unchanged since (same
    size and modification time)."""
    entry = read_record(model_dir).get(archive.name)
    if not entry or entry.get("key") != key:
        return False
    try:
        info = archive.stat()
    except OSError:
        return False
    return bool(info.st_size == entry.get("size") and info.st_mtime_ns == entry.get("mtime_ns"))


def write_record(model_dir: Path, archive: Path, key: str, details: Mapping[str, Any]) -> Path:
    """Record ``archive`` (built with ``key``) atomically; return the record's path.

    Example::

        key = build_key({"spec": spec.digest, "python": "3.10", "release": "24.10"})
        if not is_up_to_date(model_dir, archive, key):
            ...  # build, then:
        write_record(model_dir, archive, key, {"python": "3.10"})
    """
    records = read_record(model_dir)
    info = archive.stat()
    records[archive.name] = {
        **details,
        "key": key,
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "sha256": file_sha256(archive),
    }
    path = model_dir / RECORD_NAME
    text = json.dumps({"archives": records}, indent=2, sort_keys=True) + "\n"
    with staging_file(path) as partial:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    return path


# --- the place --------------------------------------------------------------------------------

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


# --- the contents -----------------------------------------------------------------------------


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


# --- the Python -------------------------------------------------------------------------------


def contents_python(path: Path) -> Optional[str]:
    """The one Python ``X.Y`` inside the environment at ``path`` (its ``lib/libpythonX.Y``), or
    ``None`` when it has none, several, or cannot be read."""
    try:
        return inspect_env(path).python
    except _UNREADABLE:
        return None


def environment_python(path: Path) -> Optional[str]:
    """The Python ``X.Y`` of the environment at ``path``, cheapest fact first: pack-env's
    record, the archive's name (``*_py3.10.tar.gz``), then the ``lib/libpython3.X`` inside;
    ``None`` when it does not exist or none of them tells."""
    if not path.exists():
        return None
    if path.is_file():
        told = recorded_python(path) or named_python(path.name)
        if told:
            return told
    return contents_python(path)
