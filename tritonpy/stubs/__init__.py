"""``triton_python_backend_stub`` provisioning: a stub for the environment's Python, from the
server's own release, beside config.pbtxt; native builds cached by their inputs.

Example::

    from tritonpy.stubs import find_stub, provision_stub

    provision_stub("model_repository/preprocess", triton_version="24.10", python="3.10")
    find_stub("24.10", "3.10").source   # 'wheel'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._runtime._public_names import publish as _publish

__all__ = ["FoundStub", "StubCache", "StubError", "StubResult", "find_stub", "provision_stub"]

# imported on first use: tritonpy.server imports tritonpy.stubs._lookup lazily, and the build
# machinery should not load for a cache lookup
_HOMES = {
    "FoundStub": "_lookup",
    "StubError": "_lookup",
    "find_stub": "_lookup",
    "StubCache": "_cache",
    "StubResult": "_provision",
    "provision_stub": "_provision",
    # the face stubs shows tritonpy's other tooling packages: not in __all__, not public API
    "WHEEL_RELEASES": "_lookup",
}

if TYPE_CHECKING:  # what the lazy names are, for type checkers
    from ._cache import StubCache
    from ._lookup import WHEEL_RELEASES as WHEEL_RELEASES
    from ._lookup import FoundStub, StubError, find_stub
    from ._provision import StubResult, provision_stub


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tritonpy.stubs' has no attribute {name!r}")
    found = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    _publish(__name__, {"__all__": [name], name: found})  # what the others do at import
    return found
