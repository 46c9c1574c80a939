"""Archive rules (TP6xx): the members of an ``EXECUTION_ENV_PATH`` ``.tar.gz``. Triton
extracts it with libarchive, which refuses absolute and ``..`` paths; links pointing outside
the extracted tree break the environment (or write outside it).

==========  ========  ==============================================================
TP601       error     a member with an absolute path
TP602       error     a member whose path contains ``..``
TP603       error     a symbolic or hard link pointing outside the archive
TP604       error     the file is not a readable gzip-compressed tar archive
==========  ========  ==============================================================
"""

from __future__ import annotations

import posixpath
import tarfile
import zlib
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

from .context import ModelEntry, Repository
from .envinfo import archive_members, is_inside, resolve_env_path
from .report import ERROR, Finding

__all__ = ["ENV_PARAMETER", "check_archives"]

ENV_PARAMETER = "EXECUTION_ENV_PATH"
_EXAMPLES = 3


def check_archives(repo: Repository) -> Iterator[Finding]:
    """Yield the findings about every environment archive the python models name."""
    for entry in repo:
        if not entry.is_python or ENV_PARAMETER not in entry.config.parameters:
            continue
        raw = entry.config.parameters[ENV_PARAMETER].string_value
        place = resolve_env_path(raw, entry.path)
        if place.path.name.endswith(".tar.gz") and place.path.is_file():
            yield from _check_archive(entry, place.path, entry.display(place.path))


def _check_archive(entry: ModelEntry, path: Path, file: str) -> Iterator[Finding]:
    try:
        members = archive_members(path)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        yield Finding(
            "TP604",
            ERROR,
            file,
            "",
            f"not a readable gzip-compressed tar archive ({type(exc).__name__}: {exc}); "
            f"Triton cannot extract the environment",
            "rebuild it (conda-pack -o env.tar.gz, or scripts/pack_env.sh MODEL_DIR)",
        )
        return
    bad: Dict[str, List[str]] = {"TP601": [], "TP602": [], "TP603": []}
    for member in members:
        name = member.name
        if name.startswith("/"):
            bad["TP601"].append(name)
        elif ".." in name.split("/"):
            bad["TP602"].append(name)
        if member.issym():
            target = member.linkname
            resolved = posixpath.join(posixpath.dirname(name.lstrip("/")), target)
            if target.startswith("/") or not is_inside(resolved):
                bad["TP603"].append(f"{name} -> {target}")
        elif member.islnk():
            target = member.linkname
            if target.startswith("/") or not is_inside(target):
                bad["TP603"].append(f"{name} => {target}")
    texts: Dict[str, Tuple[str, str]] = {
        "TP601": (
            "with an absolute path",
            "pack the environment with paths relative to its root (conda-pack does)",
        ),
        "TP602": (
            "with '..' in the path",
            "pack the environment from its root so no path climbs out of it",
        ),
        "TP603": (
            "linking outside the archive",
            "make links relative and inside the environment, or replace them by copies",
        ),
    }
    for code, names in bad.items():
        if names:
            what, fix = texts[code]
            examples = ", ".join(repr(n) for n in names[:_EXAMPLES])
            more = f" and {len(names) - _EXAMPLES} more" if len(names) > _EXAMPLES else ""
            yield Finding(
                code,
                ERROR,
                file,
                "",
                f"{len(names)} member{'s' * (len(names) != 1)} {what}: {examples}{more}; "
                f"Triton's extraction refuses or misplaces them",
                fix,
            )
