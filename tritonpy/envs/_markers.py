"""Environment markers (PEP 508) evaluated for the environment being built, not for the
interpreter that runs ``pack-env``.

A requirement line such as ``backports.zoneinfo; python_version < "3.9"`` or
``pywin32; sys_platform == "win32"`` is one pip skips when it installs into the environment:
pip evaluates the marker with the environment's own Python, on this machine. ``pack-env``
keeps such a line for pip (pip decides), but neither lists it in its progress line nor
verifies that its distribution is installed. The target is what pip sees there: the
environment's Python X.Y (and its full version when known: the local builder's interpreter),
CPython, Linux, this machine's architecture, kernel release and version. A marker that needs
a value not known yet (``python_full_version`` before the conda builder has created the
environment) is *undecided*: the line is treated as applying, as before.

Example::

    target = TargetPython("3.10", "3.10.13")
    marker_applies(Requirement('foo; python_version < "3.9"').marker, target)   # False
    target.describe()        # 'Python 3.10 (3.10.13, Linux x86_64)'
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, FrozenSet, Optional

if TYPE_CHECKING:
    from packaging.markers import Marker

#: the marker variables that depend on the full Python version (X.Y.Z)
_FULL_VERSION = ("python_full_version", "implementation_version")


@dataclass(frozen=True)
class TargetPython:
    """The environment a marker is evaluated for: Python ``xy`` (``"3.10"``, None: not
    decided yet), its ``full`` version (``"3.10.13"``, None: not known before the build),
    on Linux on ``machine`` (default: this machine's architecture)."""

    xy: Optional[str]
    full: Optional[str] = None
    machine: str = field(default_factory=platform.machine)

    @property
    def unknown(self) -> FrozenSet[str]:
        """The marker variables whose value is not known for this target."""
        if self.xy is None:
            return frozenset(("python_version", *_FULL_VERSION))
        return frozenset(() if self.full else _FULL_VERSION)

    def environment(self) -> Dict[str, str]:
        """The marker environment (every PEP 508 variable; ``extra`` empty, as pip uses it for
        a requirements file's lines).

        >>> TargetPython("3.10", "3.10.13", "aarch64").environment()["platform_machine"]
        'aarch64'
        """
        full = self.full or f"{self.xy or '3'}.0"
        return {
            "implementation_name": "cpython",
            "implementation_version": full,
            "os_name": "posix",
            "platform_machine": self.machine,
            "platform_release": platform.release(),
            "platform_system": "Linux",
            "platform_version": platform.version(),
            "python_full_version": full,
            "platform_python_implementation": "CPython",
            "python_version": self.xy or "3",
            "sys_platform": "linux",
            "extra": "",
        }

    def describe(self) -> str:
        """How messages name the target.

        >>> TargetPython("3.10", None, "x86_64").describe()
        'Python 3.10 (Linux x86_64)'
        """
        details = ", ".join(p for p in (self.full, f"Linux {self.machine}") if p)
        return f"Python {self.xy or '(not decided)'} ({details})"


def marker_applies(marker: Optional[Marker], target: TargetPython) -> Optional[bool]:
    """Whether a requirement with ``marker`` is installed into ``target``: True (no marker, or
    a true one), False (pip skips the line there), None (undecided: the marker needs a value
    not known for ``target``, or cannot be evaluated).

    Example::

        marker_applies(Marker('sys_platform == "win32"'), TargetPython("3.10"))   # False
        marker_applies(Marker('python_full_version < "3.10.9"'), TargetPython("3.10"))  # None
    """
    if marker is None:
        return True
    text = str(marker)
    if any(name in text for name in target.unknown):
        return None
    try:
        return bool(marker.evaluate(target.environment()))
    except ValueError:  # packaging's UndefinedComparison, UndefinedEnvironmentName
        return None


@dataclass(frozen=True)
class SkippedLine:
    """A requirement line whose marker is false for the target: pip skips it, ``pack-env``
    neither lists nor verifies it."""

    line: str
    name: str
    marker: str
    target: str

    @property
    def reason(self) -> str:
        """``foo: marker python_version < "3.9" is false for Python 3.10 (Linux x86_64)``."""
        return f"{self.name}: marker {self.marker} is false for {self.target}"
