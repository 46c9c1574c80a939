"""How a :class:`~tritonpy.server.TritonServer` runs: :class:`ServerOptions`, each option
declared once, with the flag and help of ``tritonpy serve`` where the command has one.

Example::

    TritonServer("model_repository", ServerOptions(http_port=8000, heal=False))
    TritonServer("model_repository", http_port=8000, heal=False)      # the same
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence, Union

from .._tooling.options import PYTHON_NAMES, OptionNames, cli_flags, library_only, option

if TYPE_CHECKING:
    from ..check import Report

PathLike = Union[str, "os.PathLike[str]"]

_PORT_HELP = "port (default {port} when free, else a free one)"


@dataclass(frozen=True)
class ServerOptions:
    """The options of :class:`~tritonpy.server.TritonServer` (its docstring says what each
    does); the fields without a flag are for library callers only (callbacks, the command
    line's extra arguments and environment)."""

    tritonserver: Optional[PathLike] = option(None, help="another tritonserver binary to run")
    backend_directory: Optional[PathLike] = option(None, help="its backend directory")
    python: Optional[PathLike] = option(
        None, metavar="PYTHON", help="interpreter whose stub serves the models"
    )
    http_port: Optional[int] = option(None, help=_PORT_HELP.format(port=8000))
    grpc_port: Optional[int] = option(None, help=_PORT_HELP.format(port=8001))
    metrics_port: Optional[int] = option(None, help=_PORT_HELP.format(port=8002))
    host: str = option("127.0.0.1", help="address to bind (default {default})")
    startup_timeout: float = option(
        120.0, flags=["--timeout"], help="startup timeout in seconds (default {default})"
    )
    log_verbose: int = option(0, help="tritonserver --log-verbose level")
    log_file: Optional[PathLike] = option(
        None, help="write the server log here (default: a new file in ~/.cache/tritonpy/logs)"
    )
    # serve checks the repository first; a TritonServer made in Python does not unless asked
    check: bool = option(
        False,
        flags=["--no-check"],
        cli_default=True,
        help="start without running 'tritonpy check' first",
    )
    env_stubs: bool = option(
        True,
        flags=["--no-env-stubs"],
        help="do not give models whose environment has another Python the wheel's stub for it",
    )
    unpacked_envs: bool = option(
        True,
        flags=["--no-unpacked-envs"],
        help="let tritonserver extract each environment archive at every start instead of "
        "using tritonpy's unpacked copy of it",
    )
    heal: bool = option(
        True,
        flags=["--no-heal"],
        help="do not reload a model whose stub process died (Triton then fails its requests)",
    )
    extra_args: Sequence[str] = library_only(())
    env: Optional[Mapping[str, str]] = library_only(None)
    default_ports: Optional[Sequence[int]] = library_only(None)
    log_echo: Optional[Callable[[str], None]] = library_only(None)
    option_names: OptionNames = library_only(PYTHON_NAMES)
    heal_report: Optional[Callable[[str], None]] = library_only(None)
    reloadable: bool = library_only(False)
    check_report: Optional[Callable[[Report], None]] = library_only(None)
    allow_failures: bool = library_only(False)


#: how messages name TritonServer's options to a user of ``tritonpy serve`` (``--timeout``)
SERVE_NAMES = OptionNames(cli=True, flags=cli_flags(ServerOptions))
