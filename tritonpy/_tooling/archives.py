"""Environment archives: write them (members relative to the environment root, like
conda-pack), check members before anything trusts them, extract them safely, place them
atomically.

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
import tarfile
from pathlib import Path, PurePosixPath
from typing import Iterator, List

from .errors import ArchiveError
from .progress import Reporter

__all__ = ["check_members", "safe_extract", "staging_file", "write_archive"]


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


def _problem(member: tarfile.TarInfo) -> str:
    name = member.name
    parts = PurePosixPath(name).parts
    if name.startswith("/") or (parts and parts[0].endswith(":")):
        return "an absolute path"
    if ".." in parts:
        return "a '..' component"
    if member.isdev() or member.isfifo():
        return "a device or FIFO"
    if member.issym() or member.islnk():
        target = member.linkname
        if not target or target.startswith("/"):
            return f"a link to the absolute path {target!r}"
        anchor = posixpath.dirname(name) if member.issym() else ""
        resolved = posixpath.normpath(posixpath.join(anchor, target))
        if resolved == ".." or resolved.startswith("../"):
            return f"a link pointing outside the environment ({target!r})"
    return ""


def check_members(archive: Path) -> List[str]:
    """Return the member names of ``archive``; raise :class:`ArchiveError` for any member with
    an absolute path, a ``..`` component, a device, or a link pointing outside.

    Example::

        names = check_members(Path("model/env_py3.10.tar.gz"))
        "bin/activate" in names   # True
    """
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise ArchiveError(f"cannot read the archive {archive}: {exc}") from exc
    bad = [(m.name, why) for m in members for why in [_problem(m)] if why]
    if bad:
        shown = "\n".join(f"  {name!r}: {why}" for name, why in bad[:10])
        more = f"\n  ... and {len(bad) - 10} more" if len(bad) > 10 else ""
        raise ArchiveError(
            f"refusing the archive {archive}: {len(bad)} unsafe member(s) (Triton's extractor "
            f"refuses them too):\n{shown}{more}\nRebuild it with tritonpy pack-env (or "
            "conda-pack), which writes members relative to the environment root."
        )
    return [m.name[2:] if m.name.startswith("./") else m.name for m in members]


def safe_extract(archive: Path, destination: Path) -> Path:
    """Extract ``archive`` into ``destination`` after :func:`check_members`.

    Example::

        safe_extract(Path("model/env_py3.10.tar.gz"), Path("/tmp/unpacked"))
    """
    check_members(archive)
    destination.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:*") as tar:
        if hasattr(tarfile, "tar_filter"):
            tar.extractall(destination, filter="tar")
        else:  # Python < 3.9.17 has no extraction filters; members were checked above
            tar.extractall(destination)
    return destination
