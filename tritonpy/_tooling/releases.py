"""Facts about Triton releases that decide whether a model environment and stub will work.

A release is named ``YY.MM`` like its NGC container (``nvcr.io/nvidia/tritonserver:24.10-py3``).
The facts are those of the table in :mod:`tritonpy._tooling.release_facts`, each read from the
release's own sources; :attr:`TritonRelease.facts` gives them all.

>>> release = TritonRelease.parse("24.10")
>>> release.server_version, release.python, release.numpy2_ok
('2.51.0', '3.10', False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Tuple

from .._runtime.errors import ToolError
from .release_facts import ReleaseFacts, facts_for

#: the release whose tritonserver and stubs the ``nvidia-pytriton`` 0.7.0 wheel bundles
BUNDLED_RELEASE = "24.10"

_PATTERN = re.compile(r"^(?:r)?(\d{2})\.(\d{2})$")


@dataclass(frozen=True, order=True)
class TritonRelease:
    """One Triton release, ``year`` and ``month`` as in its ``YY.MM`` name."""

    year: int
    month: int

    @classmethod
    def parse(cls, text: str) -> TritonRelease:
        """``"24.10"`` or ``"r24.10"`` (the branch name) -> TritonRelease."""
        match = _PATTERN.match(text.strip())
        if not match or not 1 <= int(match.group(2)) <= 12:
            raise ToolError(
                f"not a Triton release: {text!r}; expected YY.MM as in the container tag "
                f"nvcr.io/nvidia/tritonserver:YY.MM-py3, e.g. 24.10"
            )
        return cls(int(match.group(1)), int(match.group(2)))

    @property
    def name(self) -> str:
        return f"{self.year:02d}.{self.month:02d}"

    @property
    def branch(self) -> str:
        """The git branch of the release in Triton's repositories (``r24.10``)."""
        return f"r{self.name}"

    @property
    def facts(self) -> ReleaseFacts:
        """Every fact of the table for this release (the nearest known one's outside it, with
        ``assumed_from`` set; a release newer than the table also warns with
        :class:`~tritonpy._tooling.release_facts.ReleaseOutsideTableWarning`).

        >>> TritonRelease.parse("25.08").facts.cites("sources_env_activate")
        'python_backend@r25.08:src/stub_launcher.cc'
        """
        return facts_for(self.name)

    @property
    def server_version(self) -> str:
        """The tritonserver version of the release (``2.51.0`` for 24.10)."""
        return self.facts.server_version

    @property
    def python(self) -> str:
        """The CPython X.Y of the release's container (and so of its default stub): 3.8 to
        23.04 (Ubuntu 20.04), 3.10 from 23.05 (22.04), 3.12 from 24.11 (24.04)."""
        if self < TritonRelease(23, 1):
            return "3.8"  # Ubuntu 20.04 containers, before the table starts
        return self.facts.python

    @property
    def numpy2_ok(self) -> bool:
        """Whether the release's stub handles numpy 2 in a model's environment (pybind11
        2.12, from 24.11; older stubs fail on BYTES inputs with numpy 2)."""
        return self.facts.numpy2_bytes_ok

    @property
    def sources_env_activate(self) -> bool:
        """Up to 25.07 the stub is started with ``source <env>/bin/activate``; from 25.08
        Triton only puts ``<env>/bin`` on PATH and ``<env>/lib`` on LD_LIBRARY_PATH."""
        return self.facts.sources_env_activate

    @property
    def min_cmake(self) -> Tuple[int, ...]:
        """The CMake version a native stub build of this release needs."""
        return self.facts.min_cmake

    def __str__(self) -> str:
        return self.name
