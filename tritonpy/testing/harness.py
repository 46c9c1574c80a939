"""Run any Triton Python-backend model in-process, the way tritonserver would.

:class:`ModelHarness` loads a model directory (``config.pbtxt`` + ``<version>/model.py``) or a
``TritonPythonModel`` class, runs ``auto_complete_config`` / ``initialize`` with the arguments
Triton passes, validates requests like the server does before the model sees them, and turns
responses back into what a client receives. pb_utils is the fake from
:mod:`tritonpy.testing.fake_pb_utils`, installed into ``sys.modules`` only while the model's code
runs.

Example::

    with ModelHarness("models/add_sub") as h:
        out = h.infer({"INPUT0": np.ones(4, np.float32), "INPUT1": np.ones(4, np.float32)})
        assert out["OUTPUT0"].tolist() == [2, 2, 2, 2]
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import inspect
import itertools
import json
import os
import shutil
import sys
import tempfile
import threading
import traceback
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType, TracebackType
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
)

import numpy as np

from ..errors import TritonPyError, TritonRequestError
from . import fake_pb_utils as pb

__all__ = [
    "HarnessError",
    "ModelBugError",
    "ModelHarness",
    "ModelLoadError",
    "fake_pb_utils_installed",
    "install_fake_pb_utils",
    "parse_config_pbtxt",
    "uninstall_fake_pb_utils",
]

PB_UTILS = "triton_python_backend_utils"
_MISSING = object()
_module_counter = itertools.count()
_install_lock = threading.RLock()
_install_stack: List[Any] = []

NDArray = Any  # numpy arrays (kept loose: the harness runs on numpy 1.21+)


class HarnessError(TritonPyError):
    """The harness itself could not do what was asked (missing tritonclient, bad arguments)."""


class ModelLoadError(HarnessError):
    """The model would fail to load in Triton: bad config, missing model.py, invalid
    auto-completed configuration."""


class ModelBugError(HarnessError):
    """The model broke the Python-backend contract: wrong number of responses, a non-response
    object, no FINAL flag in decoupled mode..."""


# --------------------------------------------------------------------------------------------
# Installing the fake pb_utils
# --------------------------------------------------------------------------------------------


def install_fake_pb_utils() -> ModuleType:
    """Put the fake pb_utils into ``sys.modules["triton_python_backend_utils"]`` and return it.
    Undo with :func:`uninstall_fake_pb_utils` (calls nest)."""
    with _install_lock:
        _install_stack.append(sys.modules.get(PB_UTILS, _MISSING))
        sys.modules[PB_UTILS] = pb
    return pb


def uninstall_fake_pb_utils() -> None:
    """Restore what ``sys.modules["triton_python_backend_utils"]`` held before the matching
    :func:`install_fake_pb_utils`."""
    with _install_lock:
        if not _install_stack:
            return
        previous = _install_stack.pop()
        if previous is _MISSING:
            sys.modules.pop(PB_UTILS, None)
        else:
            sys.modules[PB_UTILS] = previous


@contextmanager
def fake_pb_utils_installed() -> Iterator[ModuleType]:
    """``with fake_pb_utils_installed() as pb_utils:`` the fake is importable inside."""
    module = install_fake_pb_utils()
    try:
        yield module
    finally:
        uninstall_fake_pb_utils()


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


def parse_config_pbtxt(text: str, source: str = "config.pbtxt") -> Dict[str, Any]:
    """Parse config.pbtxt text into the JSON-like dict Triton hands to the Python backend
    (field names as in the proto, int64 values as ints). Needs tritonclient[grpc]."""
    from ..config.pbtxt import ConfigError, config_to_dict, parse_config

    try:
        return config_to_dict(parse_config(text, source))
    except ConfigError as exc:
        raise ModelLoadError(str(exc)) from exc


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


def _fill_defaults(config: Dict[str, Any], instance_kind: str, device_id: int) -> None:
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
        groups.append({"kind": instance_kind})
    for idx, group in enumerate(groups):
        group.setdefault("name", config["name"] if len(groups) == 1 else f"{config['name']}_{idx}")
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


def _normalize_after_autocomplete(config: Dict[str, Any]) -> None:
    _fill_io_defaults(config)
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


def _validate_config(config: Dict[str, Any]) -> None:
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
            if dtype == "TYPE_INVALID" or dtype not in _CONFIG_TO_WIRE:
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


_CONFIG_TO_WIRE = {
    "TYPE_BOOL": "BOOL",
    "TYPE_UINT8": "UINT8",
    "TYPE_UINT16": "UINT16",
    "TYPE_UINT32": "UINT32",
    "TYPE_UINT64": "UINT64",
    "TYPE_INT8": "INT8",
    "TYPE_INT16": "INT16",
    "TYPE_INT32": "INT32",
    "TYPE_INT64": "INT64",
    "TYPE_FP16": "FP16",
    "TYPE_FP32": "FP32",
    "TYPE_FP64": "FP64",
    "TYPE_STRING": "BYTES",
    "TYPE_BF16": "BF16",
}


def _wire_dtype(array: NDArray) -> str:
    kind = array.dtype.kind
    if kind in ("O", "S"):
        return "BYTES"
    code = pb.numpy_to_triton_type(array.dtype)
    names = {
        1: "BOOL",
        2: "UINT8",
        3: "UINT16",
        4: "UINT32",
        5: "UINT64",
        6: "INT8",
        7: "INT16",
        8: "INT32",
        9: "INT64",
        10: "FP16",
        11: "FP32",
        12: "FP64",
    }
    if code is None or code not in names:
        raise HarnessError(f"numpy dtype {array.dtype} has no Triton data type")
    return names[code]


def _shape_str(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _to_client_array(value: Any, name: str) -> NDArray:
    """Convert a value the way a client library would before sending it."""
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, (bytes, str)):
        array = np.array([value], dtype=np.object_)
    elif isinstance(value, (list, tuple)):
        array = np.array(value)
        if array.dtype.kind in ("U", "S"):
            # built again as objects: an "S" array would drop trailing NUL bytes
            array = np.array(value, dtype=np.object_)
    else:
        array = np.asarray(value)
    if array.dtype.kind == "U":
        array = array.astype(np.object_)
    if array.dtype.kind == "O":
        flat = [v.encode("utf-8") if isinstance(v, str) else v for v in array.reshape(-1).tolist()]
        for v in flat:
            if not isinstance(v, bytes):
                raise HarnessError(
                    f"input '{name}': BYTES elements must be bytes or str, got {type(v).__name__}"
                )
        converted = np.empty(len(flat), dtype=np.object_)
        converted[:] = flat
        array = converted.reshape(array.shape)
    elif array.dtype.kind == "S":
        converted = np.empty(array.size, dtype=np.object_)
        converted[:] = list(array.reshape(-1).tolist())
        array = converted.reshape(array.shape)
    # np.ascontiguousarray would turn a 0-d array into a 1-d one
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def _client_view(array: NDArray) -> NDArray:
    """What a client receives for an output tensor."""
    if array.dtype.kind in ("O", "S"):
        flat = array.reshape(-1).tolist()
        out = np.empty(len(flat), dtype=np.object_)
        out[:] = [v if type(v) is bytes else str(v).encode("utf-8") for v in flat]
        return out.reshape(array.shape)
    return np.array(array, copy=True)


# --------------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------------

Outputs = Dict[str, NDArray]


class ModelHarness:
    """Load and run one Triton Python-backend model in-process.

    ``model`` is a model directory (``config.pbtxt`` + ``<version>/model.py``) or a
    ``TritonPythonModel``-like class. ``config`` replaces the directory's config.pbtxt (a dict, or
    pbtxt text), or for a class, is merged over the default
    ``{"name": ..., "backend": "python", "max_batch_size": 0, "input": [], "output": []}``.
    """

    def __init__(
        self,
        model: Union[str, os.PathLike, type],  # type: ignore[type-arg]
        *,
        config: Union[Dict[str, Any], str, None] = None,
        name: Optional[str] = None,
        version: Optional[int] = None,
        instance_kind: str = "KIND_CPU",
        device_id: int = 0,
        auto_complete: bool = True,
        stream_timeout: float = 30.0,
    ) -> None:
        self._closed = False
        self._tmpdir: Optional[str] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._sys_path_entry: Optional[str] = None
        self.stream_timeout = stream_timeout
        self.instance_kind = instance_kind
        self.device_id = device_id
        self.execute_calls = 0
        self.module: Optional[ModuleType] = None
        raw: Dict[str, Any]
        if isinstance(model, type):
            self.model_class: type = model
            self.version = 1 if version is None else int(version)
            model_name = name or model.__name__
            raw = {"name": model_name, "backend": "python", "max_batch_size": 0}
            if isinstance(config, str):
                raw.update(parse_config_pbtxt(config, source=f"config of {model_name}"))
            elif config is not None:
                raw.update(copy.deepcopy(config))
            if name:
                raw["name"] = name
            self._tmpdir = tempfile.mkdtemp(prefix=f"tritonpy-{model_name}-")
            self.model_dir = Path(self._tmpdir) / model_name
            (self.model_dir / str(self.version)).mkdir(parents=True)
        else:
            self.model_dir = Path(os.fspath(model)).resolve()
            if not self.model_dir.is_dir():
                raise ModelLoadError(f"model directory {self.model_dir} does not exist")
            if isinstance(config, dict):
                raw = copy.deepcopy(config)
            else:
                if isinstance(config, str):
                    text, source = config, "config="
                else:
                    path = self.model_dir / "config.pbtxt"
                    if path.is_file():
                        text, source = path.read_text(), str(path)
                    else:
                        text, source = "", str(path)
                raw = parse_config_pbtxt(text, source=source) if text.strip() else {}
            raw.setdefault("name", name or self.model_dir.name)
            if name:
                raw["name"] = name
            filename = raw.get("default_model_filename") or "model.py"
            self.version = self._pick_version(version, filename)
            model_file = self.model_dir / str(self.version) / filename
            self.module = self._import_model(model_file)
            cls = getattr(self.module, "TritonPythonModel", None)
            if not isinstance(cls, type):
                raise ModelLoadError(f"{model_file} does not define a class TritonPythonModel")
            self.model_class = cls
        self.name: str = raw["name"]
        _fill_defaults(raw, instance_kind, device_id)
        self.instance_name = f"{raw['instance_group'][0]['name']}_0"
        with self._running():
            auto = getattr(self.model_class, "auto_complete_config", None)
            if auto_complete and auto is not None:
                completed = auto(pb.ModelConfig(json.dumps(raw)))
                if not isinstance(completed, pb.ModelConfig):
                    raise ModelLoadError(
                        f"model '{self.name}': auto_complete_config must return the "
                        f"pb_utils.ModelConfig object it was given, got {type(completed).__name__}"
                    )
                raw = completed.as_dict()
            _normalize_after_autocomplete(raw)
            _validate_config(raw)
            self.config: Dict[str, Any] = raw
            self.decoupled = pb.using_decoupled_model_transaction_policy(raw)
            kind = raw["instance_group"][0]["kind"]
            self.args: Dict[str, str] = {
                "model_config": json.dumps(raw),
                "model_instance_kind": kind.replace("KIND_", ""),
                "model_instance_name": self.instance_name,
                "model_instance_device_id": str(device_id),
                "model_repository": str(self.model_dir),
                "model_version": str(self.version),
                "model_name": self.name,
            }
            self.model: Any = self.model_class()
            init = getattr(self.model, "initialize", None)
            if init is not None:
                self._call(init, self.args)

    # -- loading ---------------------------------------------------------------------------
    def _pick_version(self, version: Optional[int], filename: str) -> int:
        if version is not None:
            if not (self.model_dir / str(version) / filename).is_file():
                raise ModelLoadError(
                    f"model directory {self.model_dir}: version {version} has no {filename}"
                )
            return int(version)
        versions = sorted(
            (
                int(p.name)
                for p in self.model_dir.iterdir()
                if p.is_dir() and p.name.isdigit() and (p / filename).is_file()
            ),
            reverse=True,
        )
        if not versions:
            raise ModelLoadError(
                f"model directory {self.model_dir} has no version directory with {filename} "
                f"(expected {self.model_dir}/1/{filename})"
            )
        return versions[0]

    def _import_model(self, model_file: Path) -> ModuleType:
        module_name = f"_tritonpy_model_{self.model_dir.name}_{next(_module_counter)}"
        spec = importlib.util.spec_from_file_location(module_name, model_file)
        if spec is None or spec.loader is None:
            raise ModelLoadError(f"cannot import {model_file}")
        module = importlib.util.module_from_spec(spec)
        self._sys_path_entry = str(model_file.parent)
        with self._running():
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(module_name, None)
                raise
        return module

    @contextmanager
    def _running(self) -> Iterator[None]:
        """While the model's code runs: fake pb_utils importable, the model's version directory
        on sys.path (as the stub does), instance name for metric messages."""
        install_fake_pb_utils()
        added = False
        if self._sys_path_entry and self._sys_path_entry not in sys.path:
            sys.path.insert(0, self._sys_path_entry)
            added = True
        previous_instance, previous_dir = pb._instance_name, pb._model_dir
        pb._instance_name = getattr(self, "instance_name", pb._instance_name)
        pb._model_dir = str(getattr(self, "model_dir", ""))
        try:
            yield
        finally:
            pb._instance_name, pb._model_dir = previous_instance, previous_dir
            if added:
                with suppress(ValueError):
                    sys.path.remove(self._sys_path_entry)  # type: ignore[arg-type]
            uninstall_fake_pb_utils()

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call a model hook, running coroutines (``async def execute``) to completion."""
        result = fn(*args)
        if inspect.isawaitable(result):
            return self._run_coroutine(result)
        return result

    def _run_coroutine(self, awaitable: Any) -> Any:
        try:
            asyncio.get_running_loop()
            in_loop = True
        except RuntimeError:
            in_loop = False
        if not in_loop:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(awaitable)
        # Called from inside a running event loop (e.g. an async test): use a worker thread.
        box: Dict[str, Any] = {}

        def worker() -> None:
            try:
                box["result"] = asyncio.run(_await(awaitable))
            except BaseException as exc:
                box["error"] = exc

        thread = threading.Thread(target=worker, name="tritonpy-harness-async")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box.get("result")

    # -- requests --------------------------------------------------------------------------
    def _input_config(self) -> Dict[str, Dict[str, Any]]:
        return {io["name"]: io for io in self.config.get("input", [])}

    def _validate(self, arrays: Dict[str, NDArray], request_id: str) -> None:
        """Reject a request the way tritonserver does before the model sees it."""
        name = self.name
        prefix = f"[request id: {request_id or '<id_unknown>'}] "
        inputs = self._input_config()
        required = [n for n, io in inputs.items() if not io.get("optional", False)]
        given = list(arrays)
        missing = [n for n in required if n not in arrays]
        unknown = [n for n in given if n not in inputs]
        if len(given) > len(inputs) or len(given) < len(required) or (missing and not unknown):
            # The server lists the inputs from a hash map, in reverse order of arrival here.
            got = "[" + ",".join(f"'{n}'" for n in reversed(given)) + "]"
            missing_txt = ("[" + ",".join(f"'{n}'" for n in missing) + "]") if missing else "]"
            if len(inputs) == len(required):
                head = f"expected {len(inputs)} inputs but got {len(given)} inputs"
            else:
                head = (
                    f"expected number of inputs between {len(required)} and {len(inputs)} but "
                    f"got {len(given)} inputs"
                )
            raise TritonRequestError(
                "INVALID_ARG",
                f"{prefix}{head} for model '{name}'. Got input(s) {got}, but missing required "
                f"input(s) {missing_txt}. Please provide all required input(s).",
            )
        mbs = int(self.config.get("max_batch_size", 0))
        batch_size: Optional[int] = None
        for input_name, array in arrays.items():
            io = inputs.get(input_name)
            if io is None:
                raise TritonRequestError(
                    "INVALID_ARG",
                    f"{prefix}unexpected inference input '{input_name}' for model '{name}'",
                )
            expected_dtype = _CONFIG_TO_WIRE.get(io["data_type"], io["data_type"])
            got_dtype = _wire_dtype(array)
            if got_dtype != expected_dtype:
                raise TritonRequestError(
                    "INVALID_ARG",
                    f"{prefix}inference input '{input_name}' data-type is '{got_dtype}', but "
                    f"model '{name}' expects '{expected_dtype}'",
                )
            shape = [int(d) for d in array.shape]
            dims = [int(d) for d in io["dims"]]
            if mbs > 0:
                if not shape:
                    raise TritonRequestError(
                        "INVALID_ARG",
                        f"{prefix}input '{input_name}' has no shape but model requires batch "
                        f"dimension for '{name}'",
                    )
                if batch_size is None:
                    batch_size = shape[0]
                    if batch_size > mbs:
                        raise TritonRequestError(
                            "INVALID_ARG",
                            f"{prefix}inference request batch-size must be <= {mbs} for '{name}'",
                        )
                elif shape[0] != batch_size:
                    raise TritonRequestError(
                        "INVALID_ARG",
                        f"{prefix}input '{input_name}' batch size does not match other inputs "
                        f"for '{name}'",
                    )
                item_shape = shape[1:]
            else:
                item_shape = shape
            if len(item_shape) != len(dims) or any(
                d != -1 and d != s for d, s in zip(dims, item_shape)
            ):
                expected = ([-1] if mbs > 0 else []) + dims
                message = (
                    f"{prefix}unexpected shape for input '{input_name}' for model '{name}'. "
                    f"Expected {_shape_str(expected)}, got {_shape_str(shape)}. "
                )
                if mbs > 0:
                    message += (
                        "NOTE: Setting a non-zero max_batch_size in the model config requires a "
                        "batch dimension to be prepended to each input shape. If you want to "
                        "specify the full shape including the batch dim in your input dims "
                        "config, try setting max_batch_size to zero. See the model "
                        "configuration docs for more info on max_batch_size."
                    )
                raise TritonRequestError("INVALID_ARG", message)
            if mbs > 0 and batch_size == 0 and got_dtype != "BYTES":
                row = int(np.prod([max(d, 0) for d in item_shape])) * array.dtype.itemsize
                raise TritonRequestError(
                    "INVALID_ARG",
                    f"{prefix}input byte size mismatch for input '{input_name}' for model "
                    f"'{name}'. Expected {row}, got 0",
                )

    def _requested(self, requested_outputs: Optional[Iterable[str]]) -> List[str]:
        declared = [o["name"] for o in self.config.get("output", [])]
        if requested_outputs is None:
            return declared
        names = list(requested_outputs)
        for out in names:
            if declared and out not in declared:
                raise TritonRequestError(
                    "INVALID_ARG", f"unexpected inference output '{out}' for model '{self.name}'"
                )
        return names

    def _build_request(
        self,
        inputs: Mapping[str, Any],
        requested_outputs: Optional[Iterable[str]],
        parameters: Optional[Dict[str, Any]],
        request_id: str,
        correlation_id: Union[int, str] = 0,
        flags: int = 0,
    ) -> Tuple[pb.InferenceRequest, Optional[List[str]]]:
        self._check_open()
        arrays = {n: _to_client_array(v, n) for n, v in inputs.items()}
        self._validate(arrays, request_id)
        requested = self._requested(requested_outputs)
        tensors = [pb.Tensor(n, a) for n, a in arrays.items()]
        params_json = json.dumps(parameters or {}, separators=(",", ":"))
        request = pb.InferenceRequest(
            request_id=request_id,
            correlation_id=correlation_id,
            inputs=tensors,
            requested_output_names=requested,
            model_name=self.name,
            model_version=self.version,
            flags=flags,
            parameters=params_json,
        )
        request._decoupled = self.decoupled
        return request, (list(requested_outputs) if requested_outputs is not None else None)

    def _client_outputs(
        self, response: pb.InferenceResponse, requested: Optional[List[str]]
    ) -> Outputs:
        error = response.error()
        if error is not None:
            raise TritonRequestError(error.code().name, error.message())
        result: Outputs = {}
        for tensor in response.output_tensors():
            if requested is not None and tensor.name() not in requested:
                continue
            result[tensor.name()] = _client_view(tensor.as_numpy())
        return result

    def _execute(self, requests: List[pb.InferenceRequest]) -> Any:
        self.execute_calls += 1
        with self._running():
            try:
                return self._call(self.model.execute, requests)
            except Exception as exc:
                frames = "".join(
                    f"  {f.filename}({f.lineno}): {f.name}\n"
                    for f in reversed(traceback.extract_tb(exc.__traceback__)[1:])
                )
                raise TritonRequestError(
                    "INTERNAL",
                    f"Failed to process the request(s) for model '{self.instance_name}', "
                    f"message: {type(exc).__name__}: {exc}\n\nAt:\n{frames}",
                ) from exc

    def _collect_sent(self, request: pb.InferenceRequest) -> List[pb.InferenceResponse]:
        sender = request._sender
        if sender is None:
            raise ModelBugError(
                f"model '{self.name}': execute() returned None but never used the response "
                f"sender of request '{request.request_id()}'; return one InferenceResponse per "
                f"request, or send through request.get_response_sender()"
            )
        if not sender._wait_final(self.stream_timeout):
            raise ModelBugError(
                f"model '{self.name}': no response with flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL "
                f"within {self.stream_timeout}s for request '{request.request_id()}'; a real "
                f"server would wait forever"
            )
        return [r for r, _ in sender.sent if r is not None]

    def _responses(
        self, requests: List[pb.InferenceRequest], returned: Any
    ) -> List[pb.InferenceResponse]:
        """One response per request for a non-decoupled model."""
        if returned is None:
            responses = []
            for request in requests:
                sent = self._collect_sent(request)
                if len(sent) != 1:
                    raise ModelBugError(
                        f"model '{self.name}': a non-decoupled model must send exactly one "
                        f"response per request; request '{request.request_id()}' got {len(sent)}"
                    )
                responses.append(sent[0])
            return responses
        if not isinstance(returned, (list, tuple)):
            raise ModelBugError(
                f"model '{self.name}': execute() must return a list of InferenceResponse, "
                f"got {type(returned).__name__}"
            )
        if len(returned) != len(requests):
            raise ModelBugError(
                f"model '{self.name}': execute() got {len(requests)} request(s) but returned "
                f"{len(returned)} response(s); return exactly one InferenceResponse per request, "
                f"in order"
            )
        for item in returned:
            if not isinstance(item, pb.InferenceResponse):
                raise ModelBugError(
                    f"model '{self.name}': execute() returned a {type(item).__name__} where a "
                    f"pb_utils.InferenceResponse was expected"
                )
        return list(returned)

    # -- public API ------------------------------------------------------------------------
    def infer(
        self,
        inputs: Mapping[str, Any],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_id: str = "",
        correlation_id: Union[int, str] = 0,
        flags: int = 0,
    ) -> Outputs:
        """Send one request; return its outputs as a client sees them (BYTES as object arrays
        of bytes). Raises TritonRequestError for a rejected request or an error response."""
        if self.decoupled:
            raise HarnessError(
                f"model '{self.name}' is decoupled: use infer_stream() (the server refuses "
                f"non-streaming inference for decoupled models)"
            )
        request, requested = self._build_request(
            inputs, requested_outputs, parameters, request_id, correlation_id, flags
        )
        returned = self._execute([request])
        (response,) = self._responses([request], returned)
        return self._client_outputs(response, requested)

    def infer_requests(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_ids: Optional[Sequence[str]] = None,
        cancelled: Iterable[int] = (),
    ) -> List[Union[Outputs, TritonRequestError]]:
        """Send several requests in ONE ``execute()`` call, as the dynamic batcher does.

        Each entry of the result is that request's outputs or its TritonRequestError (a request
        the server would reject never reaches ``execute``). ``cancelled`` lists indexes of
        requests marked cancelled before ``execute``."""
        if self.decoupled:
            raise HarnessError(f"model '{self.name}' is decoupled: use infer_stream()")
        requested_list = list(requested_outputs) if requested_outputs is not None else None
        cancel = set(cancelled)
        results: List[Union[Outputs, TritonRequestError, None]] = []
        pending: List[Tuple[int, pb.InferenceRequest, Optional[List[str]]]] = []
        for idx, inputs in enumerate(requests):
            rid = request_ids[idx] if request_ids is not None else ""
            try:
                request, requested = self._build_request(inputs, requested_list, parameters, rid)
            except TritonRequestError as exc:
                results.append(exc)
                continue
            if idx in cancel:
                request._cancel()
            results.append(None)
            pending.append((idx, request, requested))
        if pending:
            batch = [r for _, r, _ in pending]
            try:
                responses = self._responses(batch, self._execute(batch))
            except TritonRequestError as exc:
                for idx, _, _ in pending:
                    results[idx] = exc
            else:
                for (idx, _, requested), response in zip(pending, responses):
                    try:
                        results[idx] = self._client_outputs(response, requested)
                    except TritonRequestError as exc:
                        results[idx] = exc
        return [r for r in results if r is not None]

    def infer_stream(
        self,
        inputs: Mapping[str, Any],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_id: str = "",
        cancel: bool = False,
    ) -> List[Outputs]:
        """Send one request to a decoupled model; return every response's outputs, in order,
        up to the FINAL flag (a flags-only final response adds nothing). An error response
        raises TritonRequestError."""
        request, requested = self._build_request(inputs, requested_outputs, parameters, request_id)
        if cancel:
            request._cancel()
        returned = self._execute([request])
        if returned is not None:
            if self.decoupled:
                raise ModelBugError(
                    f"model '{self.name}' is decoupled: execute() must return None and send "
                    f"responses through request.get_response_sender(), got "
                    f"{type(returned).__name__}"
                )
            (response,) = self._responses([request], returned)
            return [self._client_outputs(response, requested)]
        return [self._client_outputs(r, requested) for r in self._collect_sent(request)]

    def register_bls_model(self, name: str, target: Any) -> None:
        """Make BLS requests to ``name`` run on ``target``: another ModelHarness, or a callable
        taking the pb_utils.InferenceRequest and returning an InferenceResponse."""
        if isinstance(target, ModelHarness):
            harness = target

            def handler(request: pb.InferenceRequest) -> Any:
                inputs = {t.name(): t.as_numpy() for t in request.inputs()}
                names = request.requested_output_names() or None
                try:
                    if harness.decoupled:
                        outs = harness.infer_stream(inputs, requested_outputs=names)
                        return [_response_from(o) for o in outs]
                    return _response_from(harness.infer(inputs, requested_outputs=names))
                except TritonRequestError as exc:
                    code = getattr(pb.ErrorCode, exc.code, pb.ErrorCode.INTERNAL)
                    return pb.InferenceResponse(error=pb.TritonError(exc.message, code))

            pb.register_bls_model(name, handler)
        else:
            pb.register_bls_model(name, target)
        self._bls_names = [*getattr(self, "_bls_names", []), name]

    def close(self) -> None:
        """Call ``finalize()`` (once) and release what the harness holds."""
        if self._closed:
            return
        self._closed = True
        try:
            finalize = getattr(getattr(self, "model", None), "finalize", None)
            if finalize is not None:
                with self._running():
                    self._call(finalize)
        finally:
            for bls_name in getattr(self, "_bls_names", []):
                pb.unregister_bls_model(bls_name)
            if self._loop is not None:
                self._loop.close()
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)

    def _check_open(self) -> None:
        if self._closed:
            raise HarnessError(f"ModelHarness for model '{self.name}' is closed")

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> ModelHarness:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ModelHarness({self.name!r}, version={self.version}, dir={str(self.model_dir)!r})"


def _response_from(outputs: Outputs) -> pb.InferenceResponse:
    return pb.InferenceResponse([pb.Tensor(n, a) for n, a in outputs.items()])


async def _await(awaitable: Any) -> Any:
    return await awaitable
