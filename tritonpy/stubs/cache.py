"""A local cache of ``triton_python_backend_stub`` binaries keyed by (release, Python,
architecture): ``<cache>/stubs/r24.10/py3.10/x86_64/triton_python_backend_stub`` plus a
``stub.json`` saying where it came from.

Example::

    cache = StubCache()
    cache.get("24.10", "3.10")            # Path or None
    cache.put("24.10", "3.10", built_stub, source="native")
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

from ..server.install import cache_directory
from .elf import ElfError, check_libpython

__all__ = ["STUB_NAME", "StubCache", "machine_arch"]

STUB_NAME = "triton_python_backend_stub"


def machine_arch() -> str:
    """This machine's architecture as the ELF reader names it (``x86_64``, ``aarch64``)."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


class StubCache:
    """Stubs already obtained, so a second model (or a rerun) needs no wheel, build or Docker."""

    def __init__(self, root: Optional[Path] = None) -> None:
        self.root = Path(root) if root is not None else cache_directory() / "stubs"

    def directory(self, release: str, python: str, arch: Optional[str] = None) -> Path:
        """``<root>/r<release>/py<python>/<arch>``."""
        return self.root / f"r{release}" / f"py{python}" / (arch or machine_arch())

    def get(self, release: str, python: str, arch: Optional[str] = None) -> Optional[Path]:
        """The cached stub, or None when absent or not linking ``libpython<python>``."""
        path = self.directory(release, python, arch) / STUB_NAME
        if not path.is_file():
            return None
        try:
            check_libpython(path, python)
        except ElfError:
            return None
        return path

    def metadata(self, release: str, python: str, arch: Optional[str] = None) -> Dict[str, Any]:
        """What ``put`` recorded (``source``, ...), or ``{}``."""
        try:
            data = json.loads((self.directory(release, python, arch) / "stub.json").read_text())
        except (OSError, ValueError):
            return {}
        return dict(data) if isinstance(data, dict) else {}

    def put(
        self, release: str, python: str, stub: Path, *, source: str, arch: Optional[str] = None
    ) -> Path:
        """Copy ``stub`` into the cache atomically; return the cached path."""
        target = self.directory(release, python, arch)
        target.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{STUB_NAME}.", dir=target)
        os.close(handle)
        try:
            shutil.copyfile(stub, temporary)
            os.chmod(temporary, 0o755)
            os.replace(temporary, target / STUB_NAME)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        meta = {
            "release": release,
            "python": python,
            "arch": arch or machine_arch(),
            "source": source,
        }
        (target / "stub.json").write_text(json.dumps(meta, indent=2) + "\n")
        return target / STUB_NAME
