"""What the tritonpy runtime needs in every environment besides itself: numpy, pinned below 2
where the release's stub cannot take numpy 2 (the table's ``numpy2_bytes_ok``: before 24.11).
tritonpy itself is the running one (:mod:`.selfwheel`).

Example::

    reqs = runtime_requirements(TritonRelease.parse("24.10"))   # ['numpy<2']
"""

from __future__ import annotations

from typing import List, Sequence

from .._tooling.errors import SpecError
from .._tooling.releases import TritonRelease
from ._release_rules import env_numpy_limit, env_numpy_reason
from ._spec import canonical_name, parse_requirement

#: the specifier operators that set a lowest version (``numpy>=2``, ``numpy==2.1``)
_FLOORS = ("==", ">=", "~=", "===", ">")


def runtime_requirements(release: TritonRelease) -> List[str]:
    """numpy for the runtime: ``numpy<2`` where the release's stub fails BYTES tensors with
    numpy 2 (``facts.numpy2_bytes_ok`` false: before 24.11), else ``numpy>=1.21``.

    >>> runtime_requirements(TritonRelease.parse("24.10"))
    ['numpy<2']
    """
    limit = env_numpy_limit(release)
    return ["numpy>=1.21"] if limit is None else [limit]


def check_numpy_pin(requirements: Sequence[str], release: TritonRelease) -> None:
    """Refuse a spec that requires numpy 2 for a release whose stub cannot handle it."""
    if env_numpy_limit(release) is None:
        return
    for line in requirements:
        if _requires_numpy2(line):
            raise SpecError(
                f"the spec requires {line.strip()!r}, but {env_numpy_reason(release)}. "
                "Require numpy<2, or target --triton-version 24.11 or later."
            )


def _requires_numpy2(line: str) -> bool:
    """Whether the requirement line asks for numpy 2 or later (``numpy>=2``, ``numpy==2.*``).

    >>> _requires_numpy2("numpy>=2.0"), _requires_numpy2("numpy<2")
    (True, False)
    """
    requirement = parse_requirement(line)
    if requirement is None or canonical_name(requirement.name) != "numpy":
        return False
    for specifier in requirement.specifier:
        major = specifier.version.split(".", 1)[0]
        if specifier.operator in _FLOORS and major.isdigit() and int(major) >= 2:
            return True
    return False
