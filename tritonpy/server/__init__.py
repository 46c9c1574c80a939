"""The embedded tritonserver: locate it, prepare its backend directory, start it on a model
repository, wait for readiness, stop it cleanly; and a small client helper.

Example::

    from tritonpy.server import TritonServer

    with TritonServer("model_repository") as server:
        print(server.http_url, server.models_ready())
"""

from __future__ import annotations

from .._tooling.errors import ModelLoadError, ServerError, ServerTimeoutError
from .._tooling.installation import (
    Installation,
    Interpreter,
    WheelInstallation,
    find_wheel_installation,
    inspect_interpreter,
    prepare_backend_directory,
    resolve_installation,
)
from .._tooling.options import CLI_NAMES, PYTHON_NAMES, OptionNames
from .console import ConsoleLog, LogEcho
from .ports import choose_ports, pick_free_ports, port_is_free
from .preflight import PreflightError, preflight
from .process import TritonServer
from .readiness import ModelStatus, health_ready, repository_index

__all__ = [
    "CLI_NAMES",
    "PYTHON_NAMES",
    "ConsoleLog",
    "Installation",
    "Interpreter",
    "LogEcho",
    "ModelLoadError",
    "ModelStatus",
    "OptionNames",
    "PreflightError",
    "ServerError",
    "ServerTimeoutError",
    "TritonServer",
    "WheelInstallation",
    "choose_ports",
    "find_wheel_installation",
    "health_ready",
    "inspect_interpreter",
    "pick_free_ports",
    "port_is_free",
    "preflight",
    "prepare_backend_directory",
    "repository_index",
    "resolve_installation",
]
