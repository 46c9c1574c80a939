"""Archive rules (TP6xx): the members of an ``EXECUTION_ENV_PATH`` ``.tar.gz``. Triton
extracts it with libarchive: up to 26.05 with no safety flag, so absolute and ``..`` paths are
written where they point, outside the environment; from 26.06 with the secure flags, which
refuse them (and hard links climbing out, and writes through links: TP805). Links pointing
outside the extracted tree break the environment (or write outside it) on every release. With
``--triton-version`` each finding says what that release does
(:func:`tritonpy.check._releases.archive_note`). Whether a member is safe is
decided by the rule ``pack-env`` and ``safe_extract`` use too
(:func:`tritonpy._tooling.archives.member_problem`).

==========  ========  ==============================================================
TP601       error     a member with an absolute path (``/...`` or a drive ``C:...``)
TP602       error     a member whose path contains ``..``
TP603       error     a symbolic or hard link pointing outside the archive (or to an
                      absolute path)
TP604       error     the file is not a readable gzip-compressed tar archive
TP605       error     a device or FIFO member
==========  ========  ==============================================================
"""

from __future__ import annotations

import tarfile
import zlib
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional

from .._tooling.archives import MemberProblemKind, member_problem
from .._tooling.env_archives import archive_members, resolve_env_path
from .._tooling.model_dirs import ENV_PARAMETER
from .._tooling.release_facts import ReleaseFacts
from ._context import Repository
from ._releases import archive_note
from ._report import ERROR, Finding

_EXAMPLES = 3


class _Rule(NamedTuple):
    code: str
    what: str
    fix: str


_RULES: Dict[MemberProblemKind, _Rule] = {
    "absolute": _Rule(
        "TP601",
        "with an absolute path",
        "pack the environment with paths relative to its root (conda-pack does)",
    ),
    "parent": _Rule(
        "TP602",
        "with '..' in the path",
        "pack the environment from its root so no path climbs out of it",
    ),
    "link": _Rule(
        "TP603",
        "linking outside the archive",
        "make links relative and inside the environment, or replace them by copies",
    ),
    "device": _Rule(
        "TP605",
        "that is a device or FIFO",
        "leave devices and FIFOs out of the environment (pack only files, folders and links)",
    ),
}


def check_archives(repo: Repository) -> Iterator[Finding]:
    """Yield the findings about every environment archive the python models name."""
    facts = repo.release.facts if repo.release is not None else None
    for entry in repo:
        if not entry.is_python or ENV_PARAMETER not in entry.config.parameters:
            continue
        raw = entry.config.parameters[ENV_PARAMETER].string_value
        place = resolve_env_path(raw, entry.path)
        if place.path.name.endswith(".tar.gz") and place.path.is_file():
            yield from _check_archive(place.path, entry.display(place.path), facts)


def _shown(member: tarfile.TarInfo) -> str:
    """How a finding names the member: links with their target (``->`` symbolic, ``=>``
    hard)."""
    if member.issym():
        return f"{member.name} -> {member.linkname}"
    if member.islnk():
        return f"{member.name} => {member.linkname}"
    return member.name


def _check_archive(
    path: Path, file: str, facts: Optional[ReleaseFacts] = None
) -> Iterator[Finding]:
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
            "rebuild it (tritonpy pack-env MODEL_DIR, or conda-pack -o env.tar.gz)",
        )
        return
    bad: Dict[MemberProblemKind, List[str]] = {kind: [] for kind in _RULES}
    for member in members:
        problem = member_problem(member)
        if problem is not None:
            bad[problem.kind].append(_shown(member) if problem.kind == "link" else member.name)
    for kind, names in bad.items():
        if names:
            rule = _RULES[kind]
            examples = ", ".join(repr(n) for n in names[:_EXAMPLES])
            more = f" and {len(names) - _EXAMPLES} more" if len(names) > _EXAMPLES else ""
            yield Finding(
                rule.code,
                ERROR,
                file,
                "",
                f"{len(names)} member{'s' * (len(names) != 1)} {rule.what}: {examples}{more}; "
                f"Triton's extraction refuses or misplaces them{archive_note(kind, facts)}",
                rule.fix,
            )
