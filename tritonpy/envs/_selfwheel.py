"""A wheel of the very tritonpy that is running, for the environments ``pack-env`` builds.

The model's environment must run the tritonpy the user tested with: same version, same files.
So the wheel is made from the files of the imported ``tritonpy`` package (a regular install, an
editable install or a checkout alike), offline, and never looked up on a package index. The
``.dist-info`` carries the running distribution's ``METADATA`` and ``entry_points.txt`` when
its version matches, a ``WHEEL`` file and a ``RECORD`` with SHA-256 hashes.

The wheel is reproducible (sorted members, fixed timestamps), cached by the content hash under
``<cache>/wheels/<hash>/``, and that hash is part of pack-env's rebuild key: any change to the
running tritonpy's files rebuilds the environments that carry it.

Example::

    runtime = running_tritonpy()
    runtime.version, runtime.digest[:12]     # ('0.1.0', '3f5c0a9d41e2')
    wheel = self_wheel(reporter)             # ~/.cache/tritonpy/wheels/3f5c.../tritonpy-0.1.0-...
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as metadata
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from .. import __version__
from .._tooling.archives import staging_file
from .._tooling.installation import cache_directory
from .._tooling.progress import Reporter, step

_PACKAGE = Path(__file__).resolve().parents[1]
_SKIPPED_DIRS = {"__pycache__"}
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold: reproducible members
_WHEEL = (
    "Wheel-Version: 1.0\nGenerator: tritonpy pack-env\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
)


@dataclass(frozen=True)
class RunningTritonpy:
    """The running tritonpy: its version, its package files (archive name, path) and a hash of
    both (the cache key and the rebuild key)."""

    version: str
    files: Tuple[Tuple[str, Path], ...]
    digest: str

    @property
    def wheel_name(self) -> str:
        """``tritonpy-<version>-py3-none-any.whl`` (version in wheel-file form)."""
        return f"tritonpy-{_wheel_version(self.version)}-py3-none-any.whl"


def _wheel_version(version: str) -> str:
    return re.sub(r"[^\w\d.+!]+", "_", version)


def running_tritonpy(package: Optional[Path] = None) -> RunningTritonpy:
    """The files of the imported ``tritonpy`` package (``package`` overrides its directory),
    without ``__pycache__`` and compiled files, sorted, with their content hash.

    >>> running_tritonpy().files[0][0]
    'tritonpy/__init__.py'
    """
    root = package or _PACKAGE
    found: List[Tuple[str, Path]] = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in names:
            if name.endswith(_SKIPPED_SUFFIXES):
                continue
            path = Path(directory) / name
            if path.is_file():
                found.append((f"tritonpy/{path.relative_to(root).as_posix()}", path))
    found.sort()
    digest = hashlib.sha256(f"tritonpy {__version__}\0".encode())
    for arcname, path in found:
        digest.update(arcname.encode() + b"\0" + path.read_bytes() + b"\0")
    return RunningTritonpy(__version__, tuple(found), digest.hexdigest())


def running_distribution() -> Optional[metadata.Distribution]:
    """The installed distribution of the running tritonpy (same version), or None when tritonpy
    runs from a checkout that was never installed."""
    for dist in metadata.distributions(name="tritonpy"):
        if dist.version == __version__:
            return dist
    return None


def _metadata_text(version: str) -> str:
    dist = running_distribution()
    text = (dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "") if dist else ""
    if text:
        # License-File names files this wheel does not carry in its dist-info
        lines = [ln for ln in text.split("\n") if not ln.startswith("License-File:")]
        return "\n".join(lines)
    return (
        f"Metadata-Version: 2.1\nName: tritonpy\nVersion: {version}\n"
        "Requires-Python: >=3.9\nRequires-Dist: numpy>=1.21\n"
    )


def _record_line(name: str, data: bytes) -> str:
    hashed = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={hashed},{len(data)}"


def _write_member(archive: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build_wheel(runtime: RunningTritonpy, output: Path) -> Path:
    """Write the wheel of ``runtime`` to the file ``output`` (any name) and return it.

    Example::

        build_wheel(running_tritonpy(), Path("/tmp/tritonpy-0.1.0-py3-none-any.whl"))
    """
    info_dir = f"tritonpy-{_wheel_version(runtime.version)}.dist-info"
    members: List[Tuple[str, bytes, int]] = []
    for arcname, path in runtime.files:
        executable = os.access(path, os.X_OK)
        members.append((arcname, path.read_bytes(), 0o755 if executable else 0o644))
    members.append((f"{info_dir}/METADATA", _metadata_text(runtime.version).encode(), 0o644))
    members.append((f"{info_dir}/WHEEL", _WHEEL.encode(), 0o644))
    dist = running_distribution()
    # a checkout that was never installed has no metadata: the command must exist all the same
    entry_points = (dist.read_text("entry_points.txt") if dist else None) or (
        "[console_scripts]\ntritonpy = tritonpy.cli:main\n"
    )
    if entry_points:
        members.append((f"{info_dir}/entry_points.txt", entry_points.encode(), 0o644))
    record = [_record_line(name, data) for name, data, _ in members]
    record.append(f"{info_dir}/RECORD,,")
    members.append((f"{info_dir}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))
    with zipfile.ZipFile(output, "w") as archive:
        for name, data, mode in members:
            _write_member(archive, name, data, mode)
    return output


def self_wheel(
    reporter: Reporter,
    *,
    runtime: Optional[RunningTritonpy] = None,
    cache_dir: Optional[Path] = None,
) -> Path:
    """The cached wheel of the running tritonpy, built on first use (no network, no pip).

    Example::

        wheel = self_wheel(Reporter())   # <cache>/wheels/<hash>/tritonpy-0.1.0-py3-none-any.whl
    """
    runtime = runtime or running_tritonpy()
    target = (cache_dir or cache_directory()) / "wheels" / runtime.digest[:24]
    wheel = target / runtime.wheel_name
    if wheel.is_file():
        return wheel
    target.mkdir(parents=True, exist_ok=True)
    title = f"building {runtime.wheel_name} from the running tritonpy"
    with step(reporter, title), staging_file(wheel) as partial:
        build_wheel(runtime, partial)
        os.replace(partial, wheel)
    return wheel
