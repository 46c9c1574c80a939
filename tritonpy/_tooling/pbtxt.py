"""Read, write and edit ``config.pbtxt`` through the protobuf ``ModelConfig`` message.

Example::

    from tritonpy.config import load_config, set_parameter, write_config

    config = load_config("model_repository/preprocess/config.pbtxt")
    set_parameter(config, "EXECUTION_ENV_PATH", "$$TRITON_MODEL_DIRECTORY/env.tar.gz")
    write_config("model_repository/preprocess/config.pbtxt", config)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Mapping, Union

from .._runtime._optional import require
from .._runtime.errors import ToolError

PathLike = Union[str, "os.PathLike[str]"]

# protobuf field types whose JSON form is a string (64-bit integers); Triton's JSON for the
# Python backend has numbers there
_INT64_TYPES = (3, 4, 6, 16, 18)  # INT64, UINT64, FIXED64, SFIXED64, SINT64


class ConfigError(ToolError):
    """A model configuration cannot be read, parsed or written."""


#: what the ModelConfig protobuf message needs (the ``config`` extra)
CONFIG_MODULES = ("tritonclient.grpc", "google.protobuf")


def _modules() -> Any:
    # MissingDependencyError (not ConfigError): the CLI shows it as one line and exits 2
    require(*CONFIG_MODULES, extra="config", feature="reading config.pbtxt")
    from google.protobuf import json_format, text_format
    from tritonclient.grpc import model_config_pb2

    return model_config_pb2, text_format, json_format


def new_config() -> Any:
    """An empty ``inference.ModelConfig`` message."""
    model_config_pb2, _, _ = _modules()
    return model_config_pb2.ModelConfig()


def parse_config(text: str, source: str = "config.pbtxt") -> Any:
    """Parse protobuf text into a ``ModelConfig`` message. Errors name the source, line and
    column, as protobuf reports them."""
    model_config_pb2, text_format, _ = _modules()
    message = model_config_pb2.ModelConfig()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as exc:
        raise ConfigError(
            f"{source}: not a valid model configuration: {exc} (line:column). Field names and "
            f"values must follow Triton's model_config.proto"
        ) from exc
    return message


def load_config(path: PathLike) -> Any:
    """Read and parse a ``config.pbtxt`` file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return parse_config(text, str(path))


def format_config(message: Any) -> str:
    """The protobuf text form of a ``ModelConfig``: stable (same message, same text)."""
    _, text_format, _ = _modules()
    return str(text_format.MessageToString(message, as_utf8=True))


def write_config(path: PathLike, message: Any) -> Path:
    """Write a ``ModelConfig`` to ``path`` atomically (temporary file, then rename): an
    interrupted write leaves the previous file intact."""
    path = Path(path)
    text = format_config(message)
    handle, temporary = tempfile.mkstemp(prefix=".config.", suffix=".pbtxt", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        # mkstemp makes the file private (0600); a server running as another user must still
        # read it: keep the mode of the file it replaces, or the usual 0644
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def config_to_dict(message: Any) -> Dict[str, Any]:
    """The JSON form Triton hands to the Python backend (``args["model_config"]``): proto
    field names, 64-bit integers as numbers."""
    _, _, json_format = _modules()
    result: Dict[str, Any] = json_format.MessageToDict(message, preserving_proto_field_name=True)
    _int64_to_int(result, message.DESCRIPTOR)
    return result


def config_from_dict(data: Mapping[str, Any]) -> Any:
    """A ``ModelConfig`` message from its JSON form (unknown fields are an error)."""
    model_config_pb2, _, json_format = _modules()
    message = model_config_pb2.ModelConfig()
    try:
        json_format.ParseDict(dict(data), message)
    except json_format.ParseError as exc:
        raise ConfigError(f"not a valid model configuration: {exc}") from exc
    return message


def set_parameter(message: Any, key: str, value: str) -> None:
    """Set ``parameters { key: KEY value { string_value: VALUE } }``."""
    message.parameters[key].string_value = value


def _int64_to_int(data: Any, descriptor: Any) -> None:
    if not isinstance(data, dict):
        return
    for field in descriptor.fields:
        key = field.name
        if key not in data:
            continue
        value = data[key]
        if field.message_type is not None:
            if field.message_type.GetOptions().map_entry:
                value_field = field.message_type.fields_by_name["value"]
                if value_field.message_type is not None:
                    for item in value.values():
                        _int64_to_int(item, value_field.message_type)
                elif value_field.type in _INT64_TYPES:
                    for map_key in list(value):
                        value[map_key] = int(value[map_key])
            elif isinstance(value, list):
                for item in value:
                    _int64_to_int(item, field.message_type)
            else:
                _int64_to_int(value, field.message_type)
        elif field.type in _INT64_TYPES:
            data[key] = [int(v) for v in value] if isinstance(value, list) else int(value)


def data_type_name(value: int) -> str:
    """The ``DataType`` enum name of a number (``data_type_name(11) == "TYPE_FP32"``)."""
    model_config_pb2, _, _ = _modules()
    return str(model_config_pb2.DataType.Name(value))
