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
import inspect
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

from .._runtime.errors import TritonRequestError
from . import fake_pb_utils as pb
from ._config import (
    _CONFIG_TO_WIRE,
    _fill_defaults,
    _normalize_after_autocomplete,
    _validate_config,
    parse_config_pbtxt,
)
from ._errors import HarnessError, ModelBugError, ModelLoadError
from ._install import (
    fake_pb_utils_installed,
    install_fake_pb_utils,
    uninstall_fake_pb_utils,
)
from ._loading import import_model_file, pick_version, target_version
from ._process_guard import (
    ModelProcessDiedError,
    ProcessEnded,
    guard_process_exit,
    stub_not_healthy,
)
from ._requests import (
    _check_requested_outputs,
    _to_client_array,
    _validate_request,
)
from ._reschedule import execute_with_rescheduling
from ._responses import (
    Outputs,
    _check_responses,
    _client_outputs,
    _collect_sent,
    decoupled_refused,
)
from ._targets import bls_handler
from .fake_pb_utils import errors as pb_errors
from .fake_pb_utils import metrics as _pb_metrics
from .fake_pb_utils import models as _pb_models

__all__ = [
    "HarnessError",
    "ModelBugError",
    "ModelHarness",
    "ModelLoadError",
    "ModelProcessDiedError",
    "fake_pb_utils_installed",
    "install_fake_pb_utils",
    "parse_config_pbtxt",
    "uninstall_fake_pb_utils",
]

_HARNESS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

# --------------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------------


class ModelHarness:
    """Load and run one Triton Python-backend model in-process.

    ``model`` is a model directory (``config.pbtxt`` + ``<version>/model.py``) or a
    ``TritonPythonModel``-like class. ``config`` replaces the directory's config.pbtxt (a dict, or
    pbtxt text), or for a class, is merged over the default
    ``{"name": ..., "backend": "python", "max_batch_size": 0, "input": [], "output": []}``.
    ``targets`` maps model names to what BLS requests to them run on (see
    :meth:`register_bls_model`).
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
        targets: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self._closed = False
        self._bls_names: List[str] = []
        # registered first: a model may call other models (or is_model_ready) in initialize()
        for target_name, target in (targets or {}).items():
            self.register_bls_model(target_name, target)
        self._ended: Optional[ProcessEnded] = None  # set when the model ended its own process
        self._tmpdir: Optional[str] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._sys_path_entries: List[str] = []
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
            self.version = pick_version(self.model_dir, version, filename)
            model_file = self.model_dir / str(self.version) / filename
            # the stub puts the version directory and the model directory on sys.path
            self._sys_path_entries = [str(model_file.parent), str(self.model_dir)]
            self.module = import_model_file(model_file, self._running)
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

    @contextmanager
    def _running(self) -> Iterator[None]:
        """While the model's code runs: fake pb_utils importable, the model's version directory
        on sys.path (as the stub does), instance name for metric messages."""
        install_fake_pb_utils()
        added = [e for e in self._sys_path_entries if e not in sys.path]
        sys.path[:0] = added
        # module globals of the fake's submodules, read there at call time
        previous_instance, previous_dir = _pb_metrics._instance_name, _pb_models._model_dir
        _pb_metrics._instance_name = getattr(self, "instance_name", _pb_metrics._instance_name)
        _pb_models._model_dir = str(getattr(self, "model_dir", ""))
        try:
            with guard_process_exit():
                yield
        except ProcessEnded as ended:
            self._ended = ended
            raise self._process_died() from None
        except pb_errors.ServerAbort as abort:
            raise ModelBugError(f"model '{getattr(self, 'name', '?')}': {abort}") from None
        finally:
            _pb_metrics._instance_name, _pb_models._model_dir = previous_instance, previous_dir
            for entry in added:
                with suppress(ValueError):
                    sys.path.remove(entry)
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
        declared = {
            io["name"]: _CONFIG_TO_WIRE.get(io.get("data_type", ""))
            for io in self.config.get("input", [])
        }
        arrays = {n: _to_client_array(v, n, declared.get(n)) for n, v in inputs.items()}
        _validate_request(self.config, self.name, arrays, request_id)
        requested = _check_requested_outputs(self.config, self.name, requested_outputs)
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

    def _process_died(self) -> ModelProcessDiedError:
        ended = self._ended
        assert ended is not None
        instance = getattr(self, "instance_name", f"{self.name}_0")
        return ModelProcessDiedError(
            f"model '{self.name}' ended its own process: {ended.call} at {ended.where}. In "
            f"Triton its stub process is gone: that request and every later one fail with "
            f"{stub_not_healthy(instance)!r} while the server still reports the model READY "
            "(tritonpy serve reloads it). Raise an exception instead (tp.InputError for a bad "
            "request), so that only the request fails."
        )

    def _execute(self, requests: List[pb.InferenceRequest]) -> Any:
        if self._ended is not None:  # as in Triton: a dead stub answers nothing any more
            raise self._process_died()
        self.execute_calls += 1
        with self._running():
            try:
                return self._call(self.model.execute, requests)
            except (Exception, SystemExit) as exc:  # the stub reports sys.exit() as an error
                # the model's frames only, innermost first, as the stub lists them
                frames = "".join(
                    f"  {f.filename}({f.lineno}): {f.name}\n"
                    for f in reversed(traceback.extract_tb(exc.__traceback__))
                    if not f.filename.startswith(_HARNESS_DIR)
                )
                raise TritonRequestError(
                    "INTERNAL",
                    f"Failed to process the request(s) for model '{self.instance_name}', "
                    f"message: {type(exc).__name__}: {exc}\n\nAt:\n{frames}",
                ) from exc

    def _run(self, requests: List[pb.InferenceRequest]) -> Any:
        """``execute``, and again for the requests the model rescheduled."""
        return execute_with_rescheduling(self.name, self.config, requests, self._execute)

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
        of bytes). Raises TritonRequestError for a rejected request or an error response, and
        for a decoupled model (UNSUPPORTED, as the server's HTTP and gRPC endpoints refuse
        non-streaming inference on those: use :meth:`infer_stream`)."""
        if self.decoupled:
            raise decoupled_refused(self.name)
        request, requested = self._build_request(
            inputs, requested_outputs, parameters, request_id, correlation_id, flags
        )
        returned = self._run([request])
        (response,) = _check_responses(self.name, [request], returned, self.stream_timeout)
        return _client_outputs(response, requested)

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
            raise decoupled_refused(self.name)
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
                responses = _check_responses(
                    self.name, batch, self._run(batch), self.stream_timeout
                )
            except TritonRequestError as exc:
                for idx, _, _ in pending:
                    results[idx] = exc
            else:
                for (idx, _, requested), response in zip(pending, responses):
                    try:
                        results[idx] = _client_outputs(response, requested)
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
        cancel_after: Optional[int] = None,
        errors: str = "raise",
    ) -> List[Any]:
        """Send one request to a decoupled model; return every response's outputs, in order,
        up to the FINAL flag (a flags-only final response adds nothing). An error response
        raises TritonRequestError; with ``errors="return"`` it takes its place in the list
        instead (as a TritonRequestError), after the parts sent before it, as a streaming
        client's callback receives them.

        ``cancel=True`` cancels the request before ``execute`` sees it. ``cancel_after=n``
        cancels it once the model has sent ``n`` responses, as a gRPC client's
        ``stop_stream(cancel_requests=True)`` after its n-th response does: the model's
        ``is_cancelled()`` turns True and the first ``n`` responses are returned (the client
        has closed its stream; what the model sends later never reaches it).

        Example::

            parts = harness.infer_stream({"TEXT": ["a long text"]}, cancel_after=2)
            assert len(parts) == 2
        """
        if errors not in ("raise", "return"):
            raise HarnessError(f"infer_stream(errors={errors!r}): expected 'raise' or 'return'")
        request, requested = self._build_request(inputs, requested_outputs, parameters, request_id)
        if cancel:
            request._cancel()
        if cancel_after is not None:
            if cancel_after < 1:
                raise HarnessError(
                    f"infer_stream(cancel_after={cancel_after}): expected a number of "
                    "responses >= 1; use cancel=True to cancel before execute()"
                )
            request.get_response_sender()._cancel_after = cancel_after
        returned = self._run([request])
        if returned is not None:
            if self.decoupled:
                raise ModelBugError(
                    f"model '{self.name}' is decoupled: execute() must return None and send "
                    f"responses through request.get_response_sender(), got "
                    f"{type(returned).__name__}"
                )
            (response,) = _check_responses(self.name, [request], returned, self.stream_timeout)
            return [_client_outputs(response, requested)]
        sent = _collect_sent(self.name, request, self.stream_timeout, cancel_after)
        if errors == "raise":
            return [_client_outputs(r, requested) for r in sent]
        results: List[Any] = []
        for response in sent:
            try:
                results.append(_client_outputs(response, requested))
            except TritonRequestError as exc:
                results.append(exc)
        return results

    def register_bls_model(self, name: str, target: Any) -> None:
        """Make BLS requests to ``name`` run on ``target``: another ModelHarness, a model class
        or model directory (run in a harness of its own), a plain function on numpy inputs
        (``fn(inputs: dict) -> dict``), or ``RawTarget(fn)`` for a function taking the
        pb_utils.InferenceRequest and returning an InferenceResponse."""
        handler = bls_handler(target)
        version = target_version(target)
        if version is not None and not hasattr(handler, "model_version"):
            # is_model_ready(name, version) answers for the version the target has
            with suppress(AttributeError):
                handler.model_version = version  # type: ignore[attr-defined]
        pb.register_bls_model(name, handler)
        self._bls_names.append(name)

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
            for bls_name in self._bls_names:
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
        # getattr: also called on a harness whose __init__ failed (in tracebacks)
        name, version = getattr(self, "name", "?"), getattr(self, "version", "?")
        directory = str(getattr(self, "model_dir", "?"))
        return f"ModelHarness({name!r}, version={version}, dir={directory!r})"


async def _await(awaitable: Any) -> Any:
    return await awaitable
