"""Build hook: the wheel carries the repository's shipped files under ``tritonpy/_data``.

``model_templates/``, ``envs/``, ``scripts/build_stub.sh``, ``Dockerfile.stub`` and ``LICENSE``
stay at the top of the repository (the layout users and docs know); this copies them into the
package at build time, so ``pip install tritonpy`` gets every file a command needs.
``tritonpy/_tooling/resources.py`` finds them in either place. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# keep in sync with tritonpy._tooling.resources.SHIPPED (not imported: the build must not
# import tritonpy)
SHIPPED = ("model_templates", "envs", "scripts/build_stub.sh", "Dockerfile.stub", "LICENSE")
IGNORED = shutil.ignore_patterns(
    "__pycache__", "*.pyc", ".pytest_cache", "*.tar.gz", "model.pt", "triton_python_backend_stub"
)


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the checkout itself
            return
        target = Path(self.build_lib) / "tritonpy" / "_data"
        for relative in SHIPPED:
            source = ROOT / relative
            destination = target / relative
            if source.is_dir():
                shutil.copytree(source, destination, ignore=IGNORED, dirs_exist_ok=True)
            elif source.is_file():
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination)
            else:
                raise FileNotFoundError(f"shipped file {relative} is missing from {ROOT}")


setup(cmdclass={"build_py": BuildPyWithData})
