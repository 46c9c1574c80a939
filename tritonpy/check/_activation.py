"""What an environment's activation would set, read without running it: the conda
``etc/conda/activate.d`` hooks and the variables ``bin/activate`` exports.

Up to release 25.07 the Python backend starts its stub through ``source <env>/bin/activate``,
so conda-pack's activate script runs every ``etc/conda/activate.d/*.sh`` hook. From 25.08 it
runs the stub directly with the server's own environment plus ``VIRTUAL_ENV``,
``VIRTUAL_ENV_PROMPT``, ``PATH`` (``<env>/bin`` first) and ``LD_LIBRARY_PATH`` (``<env>/lib``
first), ``PYTHONHOME`` removed (python_backend r25.08 ``src/pb_utils.cc``,
``ParseActivationScript``, which reads no script despite its name). Whatever else the script
or its hooks set is missing then; :func:`read_activation` says what that is.

Example::

    found = read_activation(Path("model/env.tar.gz"))
    found.hooks        # ('etc/conda/activate.d/gdal-activate.sh',)
    found.missing()    # ('GDAL_DATA', 'CPL_ZIP_ENCODING', 'CONDA_PREFIX')
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

from .._tooling.archives import member_name
from .._tooling.env_archives import archive_members

#: where conda keeps activation hooks, inside the environment
HOOKS_DIR = "etc/conda/activate.d"
ACTIVATE = "bin/activate"
#: what the 25.08+ stub launcher sets itself (PYTHONHOME: removes), so a script setting them
#: loses nothing; PS1 only changes a shell prompt, which the stub has none of
LAUNCHER_SETS = frozenset(
    {"PATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PYTHONHOME", "PS1"}
)
#: a hook or activate script larger than this is not read (they are a few hundred bytes)
_MAX_SCRIPT = 256 * 1024
_EXPORT = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$")
_ASSIGN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


@dataclass(frozen=True)
class Activation:
    """An environment's activation: its ``hooks`` (paths inside the environment), the
    variables each readable script exports (``sets``: script -> ``NAME=value`` pairs, in the
    order written) and the scripts that could not be read."""

    hooks: Tuple[str, ...] = ()
    sets: Dict[str, Tuple[Tuple[str, str], ...]] = field(default_factory=dict)
    unreadable: Tuple[str, ...] = ()

    def missing(self) -> Tuple[str, ...]:
        """Every variable a script exports that the 25.08+ launcher does not set (hooks
        first, then ``bin/activate``; names starting with ``_`` are the scripts' own
        bookkeeping, such as ``_CONDA_PACK_OLD_PS1``)."""
        names: List[str] = []
        for script in (*self.hooks, ACTIVATE):
            for name, _ in self.sets.get(script, ()):
                if name not in LAUNCHER_SETS and not name.startswith("_") and name not in names:
                    names.append(name)
        return tuple(names)

    def assignments(self, limit: int = 4) -> List[str]:
        """Up to ``limit`` ``NAME=value`` texts of :meth:`missing` variables (values cut to
        60 characters), for a message."""
        wanted = set(self.missing())
        shown: List[str] = []
        for script in (*self.hooks, ACTIVATE):
            for name, value in self.sets.get(script, ()):
                if name in wanted and len(shown) < limit:
                    wanted.discard(name)
                    cut = value if len(value) <= 60 else value[:57] + "..."
                    shown.append(f"{name}={cut}")
        return shown


def exported(text: str) -> Tuple[Tuple[str, str], ...]:
    """The ``(NAME, value)`` pairs a shell script exports: ``export NAME=value`` lines, and
    ``NAME=value`` assignments that an ``export NAME`` line exports (value ``""`` when none).

    >>> exported('export GDAL_DATA="${CONDA_PREFIX}/share/gdal"\\nX=1\\nexport X\\n')
    (('GDAL_DATA', '"${CONDA_PREFIX}/share/gdal"'), ('X', '1'))
    """
    assigned: Dict[str, str] = {}
    found: Dict[str, str] = {}
    for line in text.splitlines():
        export = _EXPORT.match(line)
        if export:
            name, value = export.group(1), export.group(2)
            found.setdefault(name, value.strip() if value is not None else assigned.get(name, ""))
            continue
        assign = _ASSIGN.match(line)
        if assign:
            assigned[assign.group(1)] = assign.group(2).strip()
    return tuple(found.items())


def _is_hook(name: str) -> bool:
    return name.startswith(HOOKS_DIR + "/") and "/" not in name[len(HOOKS_DIR) + 1 :]


def _directory(path: Path) -> Activation:
    hooks_dir = path / HOOKS_DIR
    hooks = sorted(
        f"{HOOKS_DIR}/{p.name}" for p in (hooks_dir.iterdir() if hooks_dir.is_dir() else ())
    )
    sets: Dict[str, Tuple[Tuple[str, str], ...]] = {}
    unreadable: List[str] = []
    for script in (*_sourced(hooks), ACTIVATE):
        file = path / script
        if not file.is_file():
            continue
        try:
            if file.stat().st_size > _MAX_SCRIPT:
                raise OSError("too large")
            sets[script] = exported(file.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            unreadable.append(script)
    return Activation(tuple(hooks), sets, tuple(unreadable))


def _sourced(hooks: Iterable[str]) -> List[str]:
    """The hooks a POSIX shell's activation runs (conda sources ``*.sh`` only)."""
    return [hook for hook in hooks if hook.endswith(".sh")]


def _archive(path: Path) -> Activation:
    names = {member_name(m.name): m for m in archive_members(path)}
    hooks = sorted(name for name in names if _is_hook(name))
    wanted: Set[str] = {
        name
        for name in (*_sourced(hooks), ACTIVATE)
        if name in names and names[name].isfile() and names[name].size <= _MAX_SCRIPT
    }
    unreadable = [n for n in (*_sourced(hooks), ACTIVATE) if n in names and n not in wanted]
    sets: Dict[str, Tuple[Tuple[str, str], ...]] = {}
    if wanted:
        # a streaming pass that stops once every wanted script is read
        with tarfile.open(path, "r|gz") as archive:
            for member in archive:
                name = member_name(member.name)
                if name in wanted and name not in sets:
                    handle = archive.extractfile(member)
                    data = handle.read() if handle is not None else b""
                    sets[name] = exported(data.decode("utf-8", errors="replace"))
                    if len(sets) == len(wanted):
                        break
    return Activation(tuple(hooks), sets, tuple(unreadable))


def read_activation(path: Path) -> Optional[Activation]:
    """The activation of the environment directory or ``.tar.gz`` at ``path``; None when it
    is neither (the TP50x/TP604 rules report why). Archive read errors propagate
    (``tarfile.TarError``, ``OSError``, ``EOFError``, ``zlib.error``)."""
    if path.is_dir():
        return _directory(path)
    if path.is_file() and path.name.endswith(".tar.gz"):
        return _archive(path)
    return None
