"""Small real environments for the check's and the export's import tests: a venv of the
running Python (``--copies``, so an archive of it unpacks anywhere on this machine) that sees
numpy and tritonpy and nothing else of the tool's virtualenv, which has PyYAML, scipy...

Example::

    env = mini_env(tmp_path / "env")            # a directory environment
    archive = mini_archive(tmp_path / "env.tar.gz")
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any, List, Optional

import numpy

import tritonpy

XY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _packages(root: Path) -> Path:
    """A folder with links to numpy and tritonpy only."""
    root.mkdir(parents=True, exist_ok=True)
    for module in (numpy, tritonpy):
        package = Path(str(module.__file__)).parent
        link = root / package.name
        if not link.exists():
            link.symlink_to(package)
    return root


def mini_env(path: Path) -> Path:
    """A venv at ``path`` (bin/activate, bin/python3, an empty lib/libpythonX.Y.so.1.0 for
    the check's layout rules) whose imports find numpy and tritonpy."""
    base = Path(sys.base_prefix) / "bin" / f"python{XY}"
    subprocess.run([str(base), "-m", "venv", "--without-pip", "--copies", str(path)], check=True)
    packages = _packages(path.parent / f"{path.name}-packages")
    site = path / "lib" / f"python{XY}" / "site-packages"
    (site / "mini.pth").write_text(f"{packages}\n")
    # what the check looks for (TP505); this python loads its own libpython, not this file
    (path / "lib" / f"libpython{XY}.so.1.0").write_bytes(b"")
    return path


def mini_archive(path: Path, source: Optional[Path] = None) -> Path:
    """``path`` (a .tar.gz) holding a :func:`mini_env` made at ``source`` (default: beside
    the archive; its packages folder must outlive the archive), members ``./bin/...`` like
    conda-pack's."""
    env = mini_env(source or path.parent / (path.name.split(".")[0] + "-src"))
    with tarfile.open(path, "w:gz") as archive:
        archive.add(env, arcname=".")
    return path


class FakeBuilds:
    """pack_env for the build cache: a real (mini) environment archive, counted.
    :meth:`install` puts it in place, and holds the running tritonpy's digest (part of the
    cache key) still: other engineers edit this working tree while tests run."""

    def install(self, monkeypatch: Any) -> FakeBuilds:
        from tritonpy.envs._selfwheel import running_tritonpy

        frozen = running_tritonpy()
        monkeypatch.setattr("tritonpy.envs._envcache.pack_env", self)
        monkeypatch.setattr("tritonpy.envs._envcache.running_tritonpy", lambda: frozen)
        return self

    def __init__(self, home: Path) -> None:
        self.models: List[str] = []
        self.home = home  # where the environments' sources stay

    def __call__(self, model_dir: Path, **options: Any) -> Any:
        self.models.append(Path(model_dir).name)
        source = self.home / f"env{len(self.models)}"
        archive = mini_archive(Path(model_dir) / f"{options['name']}_py{XY}.tar.gz", source)
        return SimpleNamespace(archive=archive, python=XY, builder="local")
