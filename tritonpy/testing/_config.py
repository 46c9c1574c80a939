"""Model configuration for the harness: parsing config.pbtxt, the defaults Triton fills in,
normalisation after ``auto_complete_config`` and the checks Triton makes at load time."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import copy
import json
from pathlib import Path
from typing import Any, Dict, Literal, Union

from .._runtime.dtypes import DTYPES
from .._tooling.errors import ModelLoadError
from . import fake_pb_utils as pb
from ._sequences import normalize_sequence_batching


def parse_config_pbtxt(text: str, source: str = "config.pbtxt") -> Dict[str, Any]:
    """Parse config.pbtxt text into the JSON-like dict Triton hands to the Python backend
    (field names as in the proto, int64 values as ints). Needs the ``testing`` extra
    (tritonclient[grpc] and protobuf)."""
    from .._runtime._optional import require

    # checked here so that the message names the extra a model's tests need
    require(
        "tritonclient.grpc",
        "google.protobuf",
        extra="testing",
        feature="tritonpy.testing.ModelHarness",
    )
    from .._tooling.pbtxt import ConfigError, config_to_dict, parse_config

    try:
        return config_to_dict(parse_config(text, source))
    except ConfigError as exc:
        raise ModelLoadError(str(exc)) from exc


#: the instance group kinds of a model configuration
InstanceKind = Literal["KIND_AUTO", "KIND_CPU", "KIND_GPU", "KIND_MODEL"]


def directory_config(model_dir: Path, config: Union[Dict[str, Any], str, None]) -> Dict[str, Any]:
    """The configuration of a model directory as Triton reads it: ``config`` (a dict, or
    pbtxt text) when given, else its ``config.pbtxt`` (empty when there is none)."""
    if isinstance(config, dict):
        return copy.deepcopy(config)
    if isinstance(config, str):
        text, source = config, "config="
    else:
        path = model_dir / "config.pbtxt"
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        source = str(path)
    return parse_config_pbtxt(text, source=source) if text.strip() else {}


def _fill_io_defaults(config: Dict[str, Any]) -> None:
    for inp in config.get("input", []):
        inp.setdefault("data_type", "TYPE_INVALID")
        inp.setdefault("format", "FORMAT_NONE")
        inp.setdefault("dims", [])
        inp.setdefault("is_shape_tensor", False)
        inp.setdefault("allow_ragged_batch", False)
        inp.setdefault("optional", False)
        inp.setdefault("is_non_linear_format_io", False)
    for out in config.get("output", []):
        out.setdefault("data_type", "TYPE_INVALID")
        out.setdefault("dims", [])
        out.setdefault("label_filename", "")
        out.setdefault("is_shape_tensor", False)
        out.setdefault("is_non_linear_format_io", False)


def fill_defaults(config: Dict[str, Any], instance_kind: InstanceKind, device_id: int) -> None:
    """The defaults Triton fills in before it calls auto_complete_config (measured, r24.10)."""
    config.setdefault("platform", "")
    config.setdefault("backend", "python")
    config.setdefault("runtime", "")
    config.setdefault("version_policy", {"latest": {"num_versions": 1}})
    config.setdefault("max_batch_size", 0)
    config.setdefault("input", [])
    config.setdefault("output", [])
    config.setdefault("batch_input", [])
    config.setdefault("batch_output", [])
    config.setdefault(
        "optimization",
        {
            "priority": "PRIORITY_DEFAULT",
            "input_pinned_memory": {"enable": True},
            "output_pinned_memory": {"enable": True},
            "gather_kernel_buffer_threshold": 0,
            "eager_batching": False,
        },
    )
    groups = config.setdefault("instance_group", [])
    if not groups:
        # no instance_group in config.pbtxt: Triton's own group is named after the model, so
        # its instance is <model>_0 (measured, r24.10: 'sysexit_0' in error messages)
        groups.append({"kind": instance_kind, "name": config["name"]})
    for idx, group in enumerate(groups):
        # Triton names an unnamed group <model>_<group index>, even when it is the only one
        # (measured, r24.10: instance_group [{name: "add_sub_0", ...}])
        group.setdefault("name", f"{config['name']}_{idx}")
        group.setdefault("kind", "KIND_GPU" if group.get("gpus") else instance_kind)
        group.setdefault("count", 1)
        group.setdefault("gpus", [device_id] if group["kind"] == "KIND_GPU" else [])
        group.setdefault("secondary_devices", [])
        group.setdefault("profile", [])
        group.setdefault("passive", False)
        group.setdefault("host_policy", "")
    config.setdefault("default_model_filename", "model.py")
    config.setdefault("cc_model_filenames", {})
    config.setdefault("metric_tags", {})
    config.setdefault("parameters", {})
    config.setdefault("model_warmup", [])
    _fill_io_defaults(config)


def normalize_after_autocomplete(config: Dict[str, Any]) -> None:
    _fill_io_defaults(config)
    normalize_sequence_batching(config)
    dyn = config.get("dynamic_batching")
    if dyn is not None:
        mbs = int(config.get("max_batch_size", 0))
        if not dyn.get("preferred_batch_size") and mbs > 0:
            dyn["preferred_batch_size"] = [mbs]
        dyn.setdefault("preferred_batch_size", [])
        dyn.setdefault("max_queue_delay_microseconds", 0)
        dyn.setdefault("preserve_ordering", False)
        dyn.setdefault("priority_levels", 0)
        dyn.setdefault("default_priority_level", 0)
        dyn.setdefault("priority_queue_policy", {})


def validate_config(config: Dict[str, Any]) -> None:
    name = config.get("name", "")
    if not name:
        raise ModelLoadError("model configuration must specify 'name'")
    mbs = config.get("max_batch_size", 0)
    if not isinstance(mbs, int) or mbs < 0:
        raise ModelLoadError(
            f"model '{name}': 'max_batch_size' must be a non-negative integer, got {mbs!r}"
        )
    if "dynamic_batching" in config and mbs == 0:
        raise ModelLoadError(
            f"model '{name}': dynamic batching needs 'max_batch_size' > 0 (the batcher "
            f"merges requests along a batch dimension)"
        )
    for pref in config.get("dynamic_batching", {}).get("preferred_batch_size", []):
        if pref > mbs:
            raise ModelLoadError(
                f"model '{name}': dynamic batching preferred size must be <= max batch size"
            )
    for section, what in (("input", "input"), ("output", "output")):
        seen = set()
        for io in config.get(section, []):
            io_name = io.get("name", "")
            if not io_name:
                raise ModelLoadError(f"model '{name}': model {what} must specify 'name'")
            if io_name in seen:
                raise ModelLoadError(
                    f"model '{name}': {what} '{io_name}' is specified more than once"
                )
            seen.add(io_name)
            dtype = io.get("data_type", "TYPE_INVALID")
            if dtype == "TYPE_INVALID" or dtype not in CONFIG_TO_WIRE:
                raise ModelLoadError(
                    f"model {what} '{io_name}' must specify 'data_type' for model '{name}'"
                )
            dims = io.get("dims", [])
            if not dims and not io.get("reshape"):
                raise ModelLoadError(
                    f"model {what} '{io_name}' must specify 'dims' for model '{name}'"
                )
            for d in dims:
                if d != -1 and d < 1:
                    raise ModelLoadError(
                        f"model {what} '{io_name}' dimension must be integer >= 1, or -1 to "
                        f"indicate a variable-size dimension, for model '{name}'"
                    )


#: config.pbtxt data type -> wire name, from tritonpy's one dtype table
CONFIG_TO_WIRE = {d.config_name: d.name for d in DTYPES.values()}


def completed_config(
    model_class: type, raw: Dict[str, Any], name: str, auto_complete: bool
) -> Dict[str, Any]:
    """The configuration after the model's ``auto_complete_config`` (unless disabled),
    with what Triton adds and checks then."""
    auto = getattr(model_class, "auto_complete_config", None)
    if auto_complete and auto is not None:
        completed = auto(pb.ModelConfig(json.dumps(raw)))
        if not isinstance(completed, pb.ModelConfig):
            raise ModelLoadError(
                f"model '{name}': auto_complete_config must return the "
                f"pb_utils.ModelConfig object it was given, got {type(completed).__name__}"
            )
        raw = completed.as_dict()
    normalize_after_autocomplete(raw)
    validate_config(raw)
    return raw


def initialize_args(
    config: Dict[str, Any],
    name: str,
    instance_name: str,
    device_id: int,
    model_dir: Path,
    version: int,
) -> Dict[str, str]:
    """The ``args`` Triton passes to ``initialize``."""
    kind = config["instance_group"][0]["kind"]
    return {
        "model_config": json.dumps(config),
        "model_instance_kind": kind.replace("KIND_", ""),
        "model_instance_name": instance_name,
        "model_instance_device_id": str(device_id),
        "model_repository": str(model_dir),
        "model_version": str(version),
        "model_name": name,
    }
