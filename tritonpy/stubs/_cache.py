"""A local cache of ``triton_python_backend_stub`` binaries keyed by (release, Python,
architecture, build inputs): ``<cache>/stubs/r24.10/py3.10/x86_64/<key>/triton_python_backend_stub``
plus a ``stub.json`` saying where it came from. ``<key>`` is ``wheel`` for the wheel's prebuilt
stubs and ``native-<digest>`` for native builds, the digest of everything the build read
(:func:`tritonpy.stubs._build.build_key`), so changed sources, compiler or flags mean a rebuild and
unchanged ones never do. ``pack-env``, ``serve``, ``export`` and ``tritonpy stub`` all look here
through :func:`tritonpy.stubs._lookup.find_stub`.

Example::

    cache = StubCache()
    cache.get("24.10", "3.10")                        # any cached stub: Path or None
    cache.get("24.10", "3.10", key="native-1f2e...")  # exactly that build
    cache.put("24.10", "3.10", built_stub, source="native", key="native-1f2e...")
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
from pathlib import Path
from typing import Any, Dict, Iterator, List, Literal, Mapping, Optional, Tuple

from .._tooling.archives import staging_file
from .._tooling.elf import ElfError, check_libpython
from .._tooling.installation import cache_directory
from .._tooling.model_dirs import STUB_NAME

#: where a stub comes from; ``provision_stub`` tries them in the order of :data:`SOURCES`
StubSource = Literal["cache", "wheel", "native", "docker"]
SOURCES: Tuple[StubSource, ...] = ("cache", "wheel", "native", "docker")
_META = "stub.json"
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def machine_arch() -> str:
    """This machine's architecture as the ELF reader names it (``x86_64``, ``aarch64``)."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def copy_executable(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` as an executable, atomically: a reader sees the old file
    or the whole new one, never a partial copy."""
    with staging_file(target) as partial:
        shutil.copyfile(source, partial)
        os.chmod(partial, 0o755)
        os.replace(partial, target)


def _read_metadata(stub: Path) -> Dict[str, Any]:
    try:
        data = json.loads((stub.parent / _META).read_text())
    except (OSError, ValueError):
        return {}
    return dict(data) if isinstance(data, dict) else {}


class StubCache:
    """Stubs already obtained, so a second model (or a rerun) needs no wheel, build or Docker."""

    def __init__(self, root: Optional[Path] = None) -> None:
        self.root = Path(root) if root is not None else cache_directory() / "stubs"

    def directory(
        self, release: str, python: str, arch: Optional[str] = None, key: Optional[str] = None
    ) -> Path:
        """``<root>/r<release>/py<python>/<arch>``, and ``/<key>`` when a key is given."""
        base = self.root / f"r{release}" / f"py{python}" / (arch or machine_arch())
        if key is None:
            return base
        if not _KEY.match(key):
            raise ValueError(f"stub cache key {key!r} is not a plain name ([A-Za-z0-9._-])")
        return base / key

    def _valid(self, path: Path, python: str) -> bool:
        if not path.is_file():
            return False
        try:
            check_libpython(path, python)
        except ElfError:
            return False
        return True

    def keys(self, release: str, python: str, arch: Optional[str] = None) -> List[str]:
        """The keys holding a usable stub: ``wheel`` first (the release's own binary), then the
        others most recently stored first."""
        base = self.directory(release, python, arch)
        try:
            found = [p for p in base.iterdir() if p.is_dir() and _KEY.match(p.name)]
        except OSError:
            return []
        usable = [p for p in found if self._valid(p / STUB_NAME, python)]
        usable.sort(key=lambda p: (p.name == "wheel", (p / STUB_NAME).stat().st_mtime_ns))
        usable.reverse()
        return [p.name for p in usable]

    def get(
        self, release: str, python: str, arch: Optional[str] = None, key: Optional[str] = None
    ) -> Optional[Path]:
        """The cached stub for ``key``, or (no key) the wheel's copy, else one an earlier tritonpy
        cached, else the newest build; None when absent or not linking ``libpython<python>``."""
        if key is not None:
            path = self.directory(release, python, arch, key) / STUB_NAME
            return path if self._valid(path, python) else None
        keys = self.keys(release, python, arch)
        if keys and keys[0] == "wheel":
            return self.directory(release, python, arch, "wheel") / STUB_NAME
        # where earlier tritonpy versions kept their one stub (mostly the wheel's): before builds
        legacy = self.directory(release, python, arch) / STUB_NAME
        if self._valid(legacy, python):
            return legacy
        return self.directory(release, python, arch, keys[0]) / STUB_NAME if keys else None

    def metadata(
        self, release: str, python: str, arch: Optional[str] = None, key: Optional[str] = None
    ) -> Dict[str, Any]:
        """What ``put`` recorded (``source``, ``key``, ``inputs``...) for the stub ``get``
        returns with the same arguments, or ``{}``."""
        stub = self.get(release, python, arch, key)
        return {} if stub is None else _read_metadata(stub)

    def stored(self) -> Iterator[Tuple[Path, Dict[str, Any]]]:
        """Every cached stub (any release, Python, architecture and key, the older layout
        too) with what ``put`` recorded for it (``{}`` when unreadable)."""
        if not self.root.is_dir():
            return
        for stub in self.root.rglob(STUB_NAME):
            yield stub, _read_metadata(stub)

    def put(
        self,
        release: str,
        python: str,
        stub: Path,
        *,
        source: StubSource,
        arch: Optional[str] = None,
        key: Optional[str] = None,
        inputs: Optional[Mapping[str, str]] = None,
    ) -> Path:
        """Copy ``stub`` into the cache atomically under ``key`` (default: ``source``); return
        the cached path."""
        key = key or source
        target = self.directory(release, python, arch, key)
        target.mkdir(parents=True, exist_ok=True)
        copy_executable(stub, target / STUB_NAME)
        meta: Dict[str, Any] = {
            "release": release,
            "python": python,
            "arch": arch or machine_arch(),
            "source": source,
            "key": key,
        }
        if inputs:
            meta["inputs"] = dict(inputs)
        (target / _META).write_text(json.dumps(meta, indent=2) + "\n")
        return target / STUB_NAME
