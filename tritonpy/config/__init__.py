"""Model configuration (``config.pbtxt``) tooling: read, write and edit it through Triton's
protobuf ``ModelConfig`` message (never a hand-made parser).

Needs ``tritonclient[grpc]`` and ``protobuf`` (``pip install 'tritonpy[config]'``); the runtime
never imports this package.
"""

from __future__ import annotations

from .._tooling.pbtxt import (
    ConfigError,
    config_from_dict,
    config_to_dict,
    format_config,
    load_config,
    new_config,
    parse_config,
    set_parameter,
    write_config,
)

__all__ = [
    "ConfigError",
    "config_from_dict",
    "config_to_dict",
    "format_config",
    "load_config",
    "new_config",
    "parse_config",
    "set_parameter",
    "write_config",
]
