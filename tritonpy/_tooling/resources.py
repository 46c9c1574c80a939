"""Files that ship with tritonpy: model templates, environment specs, the stub build script and
``Dockerfile.stub``.

In the repository they live at the top (``model_templates/``, ``envs/``, ``scripts/``,
``Dockerfile.stub``); the wheel carries copies under ``tritonpy/_data/`` (``setup.py`` copies
them at build time). :func:`resource` finds a file in either place, so every command works from
``pip install tritonpy`` as well as from a checkout or an editable install.

Example::

    resource("envs/opencv.yml")            # .../site-packages/tritonpy/_data/envs/opencv.yml
    resource("model_templates").is_dir()   # True
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

from .._runtime.errors import ToolError

#: what the wheel carries, relative to the repository root (and to ``tritonpy/_data``)
SHIPPED: Tuple[str, ...] = (
    "model_templates",
    "envs",
    "scripts/build_stub.sh",
    "Dockerfile.stub",
    "LICENSE",
)

_PACKAGE = Path(__file__).resolve().parent.parent


class ResourceNotFoundError(ToolError):
    """A file that ships with tritonpy is missing from this installation."""


def _roots() -> Tuple[Path, ...]:
    # the wheel's copy first; then the source checkout (this package's parent directory)
    return (_PACKAGE / "_data", _PACKAGE.parent)


def find_resource(relative: str) -> Optional[Path]:
    """The path of shipped file or directory ``relative`` (e.g. ``"envs/opencv.yml"``), or
    None when this installation lacks it."""
    head = relative.split("/", 1)[0]
    if not any(item == relative or item.split("/", 1)[0] == head for item in SHIPPED):
        raise ValueError(f"{relative!r} is not a shipped resource; expected under {SHIPPED}")
    for root in _roots():
        candidate = root / relative
        if candidate.exists():
            return candidate
    return None


def resource(relative: str) -> Path:
    """Like :func:`find_resource`, but raise :class:`ResourceNotFoundError` naming the fix."""
    found = find_resource(relative)
    if found is None:
        raise ResourceNotFoundError(
            f"{relative} is missing from this tritonpy installation (looked in "
            f"{', '.join(str(r) for r in _roots())}): the installation is incomplete. "
            "Reinstall it: pip install --force-reinstall tritonpy"
        )
    return found
