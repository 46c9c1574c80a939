"""Where an existing stub for (release, Python) is found: the one lookup ``tritonpy stub``,
``pack-env``, ``serve`` and ``export`` share, so a stub built once serves every later model.

Example::

    found = find_stub("24.10", "3.10")
    found.source, found.path.name   # ('wheel', 'triton_python_backend_stub')
    find_stub("24.10", "3.14")      # a natively built one from the cache, or None
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

from .._runtime.errors import ToolError
from .._tooling.errors import ServerError
from .._tooling.installation import WheelInstallation, find_wheel_installation
from .._tooling.releases import BUNDLED_RELEASE
from ._cache import StubCache

#: nvidia-pytriton version -> the Triton release whose stubs it bundles
WHEEL_RELEASES = {"0.7.0": BUNDLED_RELEASE}


class StubError(ToolError):
    """No source could provide the stub; the message lists what each source said."""


@dataclass(frozen=True)
class FoundStub:
    """A stub that exists already: its path and where it is (``wheel`` or ``cache``)."""

    path: Path
    source: Literal["wheel", "cache"]


def wheel_stub(release: str, python: str, wheel: Optional[WheelInstallation] = None) -> Path:
    """The ``nvidia-pytriton`` wheel's prebuilt stub for ``python``, when the wheel bundles
    ``release``; raises :class:`StubError` saying why not otherwise."""
    if release != BUNDLED_RELEASE:
        raise StubError(f"the wheel bundles release {BUNDLED_RELEASE} only, not {release}")
    if wheel is None:
        try:
            wheel = find_wheel_installation()
        except ServerError as exc:
            raise StubError(str(exc).split(". ")[0]) from exc
    bundled = WHEEL_RELEASES.get(wheel.version)
    if bundled != release:
        raise StubError(
            f"nvidia-pytriton {wheel.version} is installed; tritonpy knows it bundles "
            f"{bundled or 'an unknown release'}, not {release}"
        )
    stub = wheel.stub(python)
    if not stub.is_file():
        raise StubError(
            f"no stub for Python {python} in the wheel (it has "
            f"{', '.join(wheel.stub_versions()) or 'none'})"
        )
    return stub


def find_stub(
    release: str,
    python: str,
    *,
    cache: Optional[StubCache] = None,
    wheel: Optional[WheelInstallation] = None,
) -> Optional[FoundStub]:
    """An existing stub for ``python`` from ``release``: the wheel's own (the release's real
    binary) when the wheel bundles that release, else the newest one in the stub cache (a
    native or Docker build, a copy placed earlier); None when there is none."""
    try:
        return FoundStub(wheel_stub(release, python, wheel), "wheel")
    except StubError:
        pass
    cached = (cache or StubCache()).get(release, python)
    return FoundStub(cached, "cache") if cached is not None else None
