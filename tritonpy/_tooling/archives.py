"""Environment archives: write them (members relative to the environment root, like
conda-pack), check members before anything trusts them, extract them safely, place them
atomically.

One rule decides whether a member is safe (:func:`member_problem`): ``pack-env``'s
verification, :func:`safe_extract` and ``tritonpy check`` (TP6xx) all use it. Extraction reads
the archive once: each member is checked as it is read, and written only while no unsafe member
has been seen; where the Python has tarfile's ``"data"`` filter (3.12+, and the security
releases 3.9.17+, 3.10.12+, 3.11.4+) it applies on top of these refusals.

Example::

    with staging_file(Path("model/env_py3.10.tar.gz")) as partial:
        write_archive(Path("/tmp/env"), partial, reporter=Reporter())
        check_members(partial)
        os.replace(partial, "model/env_py3.10.tar.gz")
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import secrets
import shutil
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator, List, Literal, Optional

from .errors import ArchiveError
from .progress import Reporter

#: what makes a member unsafe: an absolute (or drive) path, a ``..`` component, a device or
#: FIFO, a link whose target is absolute or resolves outside the archive root
MemberProblemKind = Literal["absolute", "parent", "device", "link"]

#: what reading a damaged or truncated ``.tar.gz`` raises
_READ_ERRORS = (OSError, tarfile.TarError, EOFError, zlib.error)
_SHOWN = 10
#: tarfile.FilterError where the extraction filters exist (none to catch elsewhere)
_FILTER_ERRORS = (tarfile.FilterError,) if hasattr(tarfile, "FilterError") else ()


@dataclass(frozen=True)
class MemberProblem:
    """Why the archive member ``name`` is unsafe: ``kind`` (which rule) and ``why`` (words for
    a message: ``"a '..' component"``)."""

    name: str
    kind: MemberProblemKind
    why: str


def member_problem(member: tarfile.TarInfo) -> Optional[MemberProblem]:
    """The reason ``member`` is unsafe to extract, or None when it is safe. Triton's extractor
    (libarchive) refuses absolute and ``..`` paths; a link pointing outside breaks the
    environment once unpacked (or writes outside it).

    >>> member_problem(tarfile.TarInfo("bin/../../evil")).why
    "a '..' component"
    """
    name = member.name
    parts = PurePosixPath(name).parts
    if name.startswith("/") or (parts and parts[0].endswith(":")):
        return MemberProblem(name, "absolute", "an absolute path")
    if ".." in parts:
        return MemberProblem(name, "parent", "a '..' component")
    if member.isdev() or member.isfifo():
        return MemberProblem(name, "device", "a device or FIFO")
    if member.issym() or member.islnk():
        target = member.linkname
        if not target or target.startswith("/"):
            return MemberProblem(name, "link", f"a link to the absolute path {target!r}")
        # a symbolic link resolves from its own folder, a hard link from the archive root
        anchor = posixpath.dirname(name) if member.issym() else ""
        resolved = posixpath.normpath(posixpath.join(anchor, target))
        if resolved == ".." or resolved.startswith("../"):
            return MemberProblem(
                name, "link", f"a link pointing outside the environment ({target!r})"
            )
    return None


def member_name(name: str) -> str:
    """An archive member's name without leading ``./`` (``./bin/activate`` -> ``bin/activate``).

    >>> member_name("./bin/activate")
    'bin/activate'
    """
    while name.startswith("./"):
        name = name[2:]
    return name


@contextlib.contextmanager
def staging_file(destination: Path) -> Iterator[Path]:
    """A temporary path beside ``destination`` (hidden, unique); removed on exit unless it was
    renamed into place. Ctrl-C or an error in the block leaves only what was there before.

    Example::

        with staging_file(target) as partial:
            partial.write_bytes(data)
            os.replace(partial, target)
    """
    partial = destination.parent / f".{destination.name}.partial-{secrets.token_hex(4)}"
    try:
        yield partial
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


@contextlib.contextmanager
def staging_directory(destination: Path) -> Iterator[Path]:
    """Like :func:`staging_file`, for a directory: a hidden sibling of ``destination`` (not
    created), removed with its contents on exit unless it was renamed into place."""
    partial = destination.parent / f".{destination.name}.partial-{secrets.token_hex(4)}"
    try:
        yield partial
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def write_archive(
    source: Path, output: Path, *, reporter: Reporter, compress_level: int = 4
) -> Path:
    """Write the directory ``source`` as a ``.tar.gz`` at ``output``; members are relative to
    ``source`` (``bin/python3``, ``lib/...``), sorted, owned by root, symlinks kept.

    Example::

        write_archive(Path("/tmp/env"), Path("/tmp/env.tar.gz"), reporter=Reporter())
    """

    def reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    count = 0
    with open(output, "wb") as raw:
        with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=compress_level) as tar:
            for directory, dirs, files in os.walk(source):
                dirs.sort()
                base = Path(directory)
                for name in sorted(dirs) + sorted(files):
                    path = base / name
                    arcname = path.relative_to(source).as_posix()
                    tar.add(path, arcname=arcname, recursive=False, filter=reset)
                    count += 1
                    if count % 2000 == 0:
                        reporter.update(f"{count} entries archived")
        raw.flush()
        os.fsync(raw.fileno())
    return output


def _refusal(archive: Path, problems: List[MemberProblem]) -> ArchiveError:
    shown = "\n".join(f"  {p.name!r}: {p.why}" for p in problems[:_SHOWN])
    more = f"\n  ... and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
    return ArchiveError(
        f"refusing the archive {archive}: {len(problems)} unsafe member(s) (Triton's extractor "
        f"refuses them too):\n{shown}{more}\nRebuild it with tritonpy pack-env (or "
        "conda-pack), which writes members relative to the environment root."
    )


def _extract(tar: tarfile.TarFile, members: Iterable[tarfile.TarInfo], destination: Path) -> None:
    if hasattr(tarfile, "data_filter"):
        tar.extractall(destination, members=members, filter="data")
    else:  # no extraction filters before 3.9.17/3.10.12/3.11.4: member_problem alone decides
        tar.extractall(destination, members=members)


def _read_once(archive: Path, destination: Optional[Path]) -> List[str]:
    """One pass over ``archive`` (streamed, never seeking back): check every member, extract
    the safe ones into ``destination`` (when given) until the first unsafe one, then read on
    only to name them all. Returns the member names; raises :class:`ArchiveError`."""
    names: List[str] = []
    problems: List[MemberProblem] = []

    def safe_members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
        for member in tar:
            names.append(member_name(member.name))
            problem = member_problem(member)
            if problem is not None:
                problems.append(problem)
            elif not problems:
                yield member

    try:
        with tarfile.open(archive, "r|*") as tar:
            if destination is None:
                for _ in safe_members(tar):
                    pass
            else:
                _extract(tar, safe_members(tar), destination)
    except _FILTER_ERRORS as exc:  # what the "data" filter refuses beyond member_problem
        problems.append(MemberProblem(exc.tarinfo.name, "link", str(exc)))
    except _READ_ERRORS as exc:
        raise ArchiveError(f"cannot read the archive {archive}: {exc}") from exc
    if problems:
        raise _refusal(archive, problems)
    return names


def check_members(archive: Path) -> List[str]:
    """Return the member names of ``archive``; raise :class:`ArchiveError` for any member with
    an absolute path, a ``..`` component, a device, or a link pointing outside.

    Example::

        names = check_members(Path("model/env_py3.10.tar.gz"))
        "bin/activate" in names   # True
    """
    return _read_once(archive, None)


def extract_checked(archive: Path, destination: Path) -> List[str]:
    """Check and extract ``archive`` into ``destination`` (created) in one read; return the
    member names. An unsafe member raises :class:`ArchiveError` and stops the extraction:
    the caller removes ``destination`` (use :func:`safe_extract` to have it done).

    Example::

        names = extract_checked(Path("model/env_py3.10.tar.gz"), Path("/tmp/work/env"))
    """
    destination.mkdir(parents=True, exist_ok=True)
    return _read_once(archive, destination)


def safe_extract(archive: Path, destination: Path) -> Path:
    """Extract ``archive`` into ``destination`` when every member is safe (see
    :func:`member_problem`); an unsafe archive leaves ``destination`` as it was.

    Example::

        safe_extract(Path("model/env_py3.10.tar.gz"), Path("/tmp/unpacked"))
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    with staging_directory(destination) as partial:
        extract_checked(archive, partial)
        if not destination.exists() or not any(destination.iterdir()):
            os.replace(partial, destination)  # rename(2) may replace an empty directory
        else:
            shutil.copytree(partial, destination, symlinks=True, dirs_exist_ok=True)
    return destination
