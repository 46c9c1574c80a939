"""The embedded tritonserver: locate it, prepare its backend directory, start it on a model
repository, wait for readiness, stop it cleanly, keep it serving, reload models as they are
edited (``RepositoryWatcher``). The client side (``InferClient`` for one request,
``stream_infer`` for a decoupled model's stream) lives in :mod:`tritonpy.client`; both names
are importable from here too.

Example::

    from tritonpy.server import TritonServer

    with TritonServer("model_repository") as server:
        print(server.http_url, server.models_ready())
"""

from __future__ import annotations

from .._runtime._public_names import publish as _publish
from .._tooling.errors import ModelLoadError, ServerError, ServerTimeoutError
from .._tooling.installation import WheelInstallation, find_wheel_installation
from ..client import InferClient, ModelStatus, stream_infer
from ._keeper import serve_until_exit
from ._loadfail import LoadFailure
from ._options import ServerOptions
from ._preflight import PreflightError, preflight
from ._process import TritonServer
from ._watch import RepositoryWatcher, WatchEvent

__all__ = [
    "InferClient",
    "LoadFailure",
    "ModelLoadError",
    "ModelStatus",
    "PreflightError",
    "RepositoryWatcher",
    "ServerError",
    "ServerOptions",
    "ServerTimeoutError",
    "TritonServer",
    "WatchEvent",
    "WheelInstallation",
    "find_wheel_installation",
    "preflight",
    "serve_until_exit",
    "stream_infer",
]

# tritonpy._tooling's errors and wheel finder live here for users (ModelLoadError: tritonpy.testing)
_publish(
    __name__,
    globals(),
    adopt=["ServerError", "ServerTimeoutError", "WheelInstallation", "find_wheel_installation"],
)
