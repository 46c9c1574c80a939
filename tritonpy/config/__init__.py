"""Model configuration (``config.pbtxt``) tooling: read, write and edit it through Triton's
protobuf ``ModelConfig`` message (never a hand-made parser).

Needs ``tritonclient[grpc]`` and ``protobuf`` (``pip install 'tritonpy[config]'``); the runtime
never imports this package. The reading and writing functions are those of the one reader and
writer of model configurations (``tritonpy._tooling.pbtxt``); ``sync_config``,
``apply_declarations`` and ``autocomplete_config`` derive a configuration from a model's
declarations, ``load_model_class`` imports a model.py the way Triton's stub does.
"""

from __future__ import annotations

from .._runtime._public_names import publish as _publish
from .._tooling.pbtxt import (
    CONFIG_MODULES,
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
from ._declarations import ConfigDiff, apply_declarations, autocomplete_config, sync_config

# the face this package shows tritonpy's other tooling packages: not in __all__, not public API
from ._declarations import NotDerivableError as NotDerivableError
from ._declarations import declared_decoupled as declared_decoupled
from ._declarations import declared_message as declared_message
from ._loader import LoadedModel, load_model_class
from ._loader import ModelImportError as ModelImportError
from ._loader import defines_triton_python_model as defines_triton_python_model
from ._loader import find_model_file as find_model_file
from ._loader import version_dirs as version_dirs

__all__ = [
    "CONFIG_MODULES",
    "ConfigDiff",
    "ConfigError",
    "LoadedModel",
    "apply_declarations",
    "autocomplete_config",
    "config_from_dict",
    "config_to_dict",
    "format_config",
    "load_config",
    "load_model_class",
    "new_config",
    "parse_config",
    "set_parameter",
    "sync_config",
    "write_config",
]

# the pbtxt functions and ConfigError are written in tritonpy._tooling, shared with the tools
_publish(
    __name__,
    globals(),
    adopt=[
        "ConfigError",
        "config_from_dict",
        "config_to_dict",
        "format_config",
        "load_config",
        "new_config",
        "parse_config",
        "set_parameter",
        "write_config",
    ],
)
