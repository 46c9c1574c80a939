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

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import copy
import inspect
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
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
    Set,
    Tuple,
    Union,
)

from .._runtime.errors import TritonRequestError
from .._tooling.closing import Closing
from .._tooling.errors import ModelLoadError
from . import fake_pb_utils as pb
from ._cancellation import (
    BatchCancels,
    CancelAt,
    cancelled_before_infer,
    cancelled_infer,
    cancelled_stream,
    run_stream,
    stream_cancelled,
)
from ._clock import ManualClock, bind_clock
from ._config import (
    InstanceKind,
    completed_config,
    directory_config,
    fill_defaults,
    initialize_args,
    parse_config_pbtxt,
)
from ._errors import HarnessError, ModelBugError
from ._finalize import run_finalize
from ._harness_responses import ResponseViews
from ._install import install_fake_pb_utils, uninstall_fake_pb_utils
from ._load_checks import check_before_running, import_failed
from ._loading import import_model_file, on_sys_path, pick_version
from ._process_guard import ModelProcessDiedError, ProcessEnded, guard_process_exit, process_died
from ._release import check_names, target_facts, warn_unused_hooks
from ._requests import build_request
from ._reschedule import execute_with_rescheduling
from ._responses import (
    Outputs,
    StreamErrors,
    batch_answers,
    check_returned,
    client_outputs,
    decoupled_refused,
    execute_failed,
    outputs_or_error,
)
from ._sequence_batches import request_rounds, run_sequence_batch
from ._sequence_driver import SequenceDriver
from ._sequences import CorrelationId, SequenceRules
from ._stub_loop import StubLoop
from ._targets import versioned_handler
from .fake_pb_utils import _errors as pb_errors
from .fake_pb_utils._models import model_running
from .fake_pb_utils._release import release_closed, release_opened, release_running

# --------------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------------


class ModelHarness(Closing, ResponseViews):
    """Load and run one Triton Python-backend model in-process.

    ``model`` is a model directory (``config.pbtxt`` + ``<version>/model.py``) or a
    ``TritonPythonModel``-like class. ``config`` replaces the directory's config.pbtxt (a dict, or
    pbtxt text), or for a class, is merged over the default
    ``{"name": ..., "backend": "python", "max_batch_size": 0, "input": [], "output": []}``.
    ``targets`` maps model names to what BLS requests to them run on (see
    :meth:`register_bls_model`). ``clock`` (default: a new :class:`ManualClock` at 0, on
    ``harness.clock``) is what a sequence's idle timeout is measured in. ``release`` (``YY.MM``,
    default ``"24.10"``, the bundled server's) is the Triton release whose pb_utils surface,
    name rules and readiness the harness shows (docs/testing.md, "Target release").
    """

    #: what the model's finalize() raised at close (the server logs it and unloads the model)
    finalize_error: Optional[BaseException] = None

    def __init__(
        self,
        model: Union[str, os.PathLike, type],  # type: ignore[type-arg]
        *,
        config: Union[Dict[str, Any], str, None] = None,
        name: Optional[str] = None,
        version: Optional[int] = None,
        instance_kind: InstanceKind = "KIND_CPU",
        device_id: int = 0,
        auto_complete: bool = True,
        stream_timeout: float = 30.0,
        targets: Optional[Mapping[str, Any]] = None,
        clock: Optional[ManualClock] = None,
        release: Optional[str] = None,
    ) -> None:
        self._closed = False
        self.release_facts = target_facts(release)
        self.clock = clock if clock is not None else ManualClock()
        self._bls_names: List[str] = []
        # registered first: a model may call other models (or is_model_ready) in initialize()
        for target_name, target in (targets or {}).items():
            self.register_bls_model(target_name, target)
        self._ended: Optional[ProcessEnded] = None  # set when the model ended its own process
        self._tmpdir: Optional[str] = None
        self._coroutines = StubLoop()
        self._sys_path_entries: List[str] = []
        self.stream_timeout = stream_timeout
        self.instance_kind = instance_kind
        self.device_id = device_id
        self.execute_calls = 0
        self.module: Optional[ModuleType] = None
        if isinstance(model, type):
            raw = self._class_config(model, config, name, version)
        else:
            raw = self._directory_model(Path(os.fspath(model)).resolve(), config, name, version)
        self.name: str = raw["name"]
        fill_defaults(raw, instance_kind, device_id)
        check_names(self.release_facts, raw)
        self.instance_name = f"{raw['instance_group'][0]['name']}_0"
        with self._running():
            self.config: Dict[str, Any] = completed_config(
                self.model_class, raw, self.name, auto_complete
            )
            self.decoupled = pb.using_decoupled_model_transaction_policy(self.config)
            self.sequence_rules = SequenceRules.from_config(self.config, self.clock)
            self.args: Dict[str, str] = initialize_args(
                self.config,
                self.name,
                self.instance_name,
                self.device_id,
                self.model_dir,
                self.version,
            )
            self.model: Any = self.model_class()
            init = getattr(self.model, "initialize", None)
            if init is not None:
                self._call(init, self.args)
            bind_clock(self.model, self.clock)
        warn_unused_hooks(self.release_facts, self.model, self.name)
        release_opened(self.release_facts)  # threads the model started see its release

    def _class_config(
        self,
        model_class: type,
        config: Union[Dict[str, Any], str, None],
        name: Optional[str],
        version: Optional[int],
    ) -> Dict[str, Any]:
        """A model given as a class: ``config`` over the defaults, in a temporary model
        directory of its own (the model's ``model_dir``)."""
        self.model_class: type = model_class
        self.version = 1 if version is None else int(version)
        model_name = name or model_class.__name__
        raw: Dict[str, Any] = {"name": model_name, "backend": "python", "max_batch_size": 0}
        if isinstance(config, str):
            raw.update(parse_config_pbtxt(config, source=f"config of {model_name}"))
        elif config is not None:
            raw.update(copy.deepcopy(config))
        if name:
            raw["name"] = name
        self._tmpdir = tempfile.mkdtemp(prefix=f"tritonpy-{model_name}-")
        self.model_dir = Path(self._tmpdir) / model_name
        (self.model_dir / str(self.version)).mkdir(parents=True)
        check_before_running(raw, self.model_dir)
        return raw

    def _directory_model(
        self,
        model_dir: Path,
        config: Union[Dict[str, Any], str, None],
        name: Optional[str],
        version: Optional[int],
    ) -> Dict[str, Any]:
        """A model directory: its configuration (or ``config``), and its ``model.py`` of the
        chosen version imported the way the stub imports it."""
        self.model_dir = model_dir
        if not model_dir.is_dir():
            raise ModelLoadError(f"model directory {model_dir} does not exist")
        raw = directory_config(model_dir, config)
        raw.setdefault("name", name or model_dir.name)
        if name:
            raw["name"] = name
        check_before_running(raw, model_dir)
        filename = raw.get("default_model_filename") or "model.py"
        self.version = pick_version(model_dir, version, filename)
        model_file = model_dir / str(self.version) / filename
        # the stub puts the version directory and the model directory on sys.path
        self._sys_path_entries = [str(model_file.parent), str(model_dir)]
        try:
            self.module = import_model_file(model_file, self._running)
        except (HarnessError, ModelLoadError):
            raise  # the process guard's and the fake's own verdicts
        except Exception as exc:
            raise import_failed(exc, model_file, raw["name"]) from exc
        cls = getattr(self.module, "TritonPythonModel", None)
        if not isinstance(cls, type):
            raise ModelLoadError(f"{model_file} does not define a class TritonPythonModel")
        self.model_class = cls
        return raw

    @contextmanager
    def _running(self) -> Iterator[None]:
        """While the model's code runs: fake pb_utils importable, the model's version directory
        on sys.path (as the stub does), instance name and model directory for pb_utils."""
        install_fake_pb_utils()
        instance = getattr(self, "instance_name", None)  # None until the config is read
        identity = model_running(instance, str(getattr(self, "model_dir", "")))
        try:
            release = release_running(self.release_facts)
            with on_sys_path(self._sys_path_entries), identity, release, guard_process_exit():
                yield
        except ProcessEnded as ended:
            self._ended = ended
            raise self._process_died() from None
        except pb_errors.ServerAbort as abort:
            raise ModelBugError(f"model '{getattr(self, 'name', '?')}': {abort}") from None
        finally:
            uninstall_fake_pb_utils()

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call a model hook, running coroutines (``async def execute``) to completion."""
        result = fn(*args)
        if inspect.isawaitable(result):
            return self._coroutines.run(result)
        return result

    # -- requests ------------------------------------------------------------------------
    def _build_request(
        self, inputs: Mapping[str, Any], requested_outputs: Optional[Iterable[str]], *rest: Any
    ) -> Tuple[pb.InferenceRequest, Optional[List[str]]]:
        """:func:`build_request` for this harness (``rest``: parameters, request id and, for a
        sequence, correlation id and flags), and the requested output names (None: all)."""
        self._check_open()
        request = build_request(self, inputs, requested_outputs, *rest)
        return request, (list(requested_outputs) if requested_outputs is not None else None)

    def _process_died(self) -> ModelProcessDiedError:
        assert self._ended is not None
        name = getattr(self, "name", self.model_dir.name)
        return process_died(name, getattr(self, "instance_name", f"{name}_0"), self._ended)

    def _execute(self, requests: List[pb.InferenceRequest]) -> Any:
        if self._ended is not None:  # as in Triton: a dead stub answers nothing any more
            raise self._process_died()
        self.execute_calls += 1
        with self._running():
            try:
                returned = self.model.execute(requests)
                if inspect.iscoroutine(returned) and self.decoupled:
                    # the stub runs it in the background and never looks at what it returns
                    self._coroutines.run(returned)
                    return None
                if inspect.isawaitable(returned):
                    returned = self._coroutines.run(returned)
            except (Exception, SystemExit) as exc:  # the stub reports sys.exit() as an error
                raise execute_failed(self.instance_name, exc) from exc
        check_returned(self.instance_name, requests, returned, self.decoupled)
        return returned

    def _run(self, requests: List[pb.InferenceRequest]) -> Any:
        """``execute``, and again for the requests the model rescheduled (for a sequence
        model, on the batch the sequence batcher makes)."""
        if self.sequence_rules is not None:
            return run_sequence_batch(self, requests, self._execute)
        return execute_with_rescheduling(
            self.name, self.config, requests, self._execute, instance=self.instance_name
        )

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
        cancel: Union[bool, CancelAt] = False,
    ) -> Outputs:
        """Send one request; return its outputs as a client sees them (BYTES as object arrays
        of bytes). Raises TritonRequestError for a rejected request or an error response, and
        for a decoupled model (UNSUPPORTED, as the server's HTTP and gRPC endpoints refuse
        non-streaming inference on those: use :meth:`infer_stream`).

        ``correlation_id`` and ``flags`` (START 1, END 2, both 3) are the request's sequence
        id and flags, for a model with ``sequence_batching``: the harness then checks them as
        the sequence batcher does and adds the control tensors its config names.
        ``cancel=CancelAt(check=k)`` / ``CancelAt(after_s=t)``: the client cancels meanwhile;
        ``cancel=True``: before ``execute()`` (which still runs, as on the server): either way
        the client's :class:`ClientCancelledError`, the model's answer in its ``model_result``.

        Example::

            model.infer({"VALUE": [[5]]}, correlation_id=7, flags=1)   # START of sequence 7
        """
        rest = (parameters, request_id, correlation_id, flags)
        if cancel is True:  # the client's CANCELLED, always
            cancelled_before_infer(self, inputs, requested_outputs, rest)
        if isinstance(cancel, CancelAt):  # the client's CANCELLED, unless the model answered first
            return cancelled_infer(self, cancel, inputs, requested_outputs, rest)
        return client_outputs(*self._respond(inputs, requested_outputs, *rest))

    def _respond(
        self, inputs: Mapping[str, Any], requested_outputs: Optional[Iterable[str]], *rest: Any
    ) -> Tuple[pb.InferenceResponse, Optional[List[str]]]:
        """One request to a model that is not decoupled: its response, the requested names."""
        if self.decoupled:
            raise decoupled_refused(self.name)
        request, requested = self._build_request(inputs, requested_outputs, *rest)
        (answer,) = batch_answers(self.name, [request], self._run, self.stream_timeout)
        if isinstance(answer, TritonRequestError):
            raise answer
        return answer, requested

    def infer_requests(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_ids: Optional[Sequence[str]] = None,
        cancelled: Union[Iterable[int], Mapping[int, Union[bool, CancelAt]]] = (),
        correlation_ids: Optional[Sequence[Union[int, str]]] = None,
        flags: Optional[Sequence[int]] = None,
    ) -> List[Union[Outputs, TritonRequestError]]:
        """Send several requests at once: in ONE ``execute()`` call, as the dynamic batcher
        does; for a sequence model, in the calls its sequence batcher makes (see
        :func:`~tritonpy.testing._sequence_batches.request_rounds`: requests of several
        sequences together, one request of a sequence and ``max_batch_size`` at most each).

        Each entry of the result is that request's outputs or its TritonRequestError (a request
        the server would reject never reaches ``execute``). ``cancelled`` lists indexes of
        requests marked cancelled before ``execute``, ``{index: CancelAt(...)}`` cancels them
        while it runs (see :class:`BatchCancels`). ``correlation_ids`` and ``flags`` (one per
        request) are the sequence id and START (1) / END (2) flags of each request.

        Example::

            model.infer_requests([{"VALUE": [[1]]}, {"VALUE": [[10]]}],
                                 correlation_ids=[7, 8], flags=[1, 1])   # two new sequences
        """
        if self.decoupled:
            raise decoupled_refused(self.name)
        requested = list(requested_outputs) if requested_outputs is not None else None
        ids = list(correlation_ids) if correlation_ids is not None else [0] * len(requests)
        cancels = BatchCancels(cancelled, self.name)

        def build(idx: int, busy: Set[int]) -> pb.InferenceRequest:
            rid = request_ids[idx] if request_ids is not None else ""
            flag = flags[idx] if flags is not None else 0
            rest = (parameters, rid, ids[idx], flag, busy)
            request, _ = self._build_request(requests[idx], requested, *rest)
            cancels.arm(idx, request)
            return request

        results: Dict[int, Union[Outputs, TritonRequestError]] = {}
        for round_ in request_rounds(self.sequence_rules, ids, build, results):
            batch = [r for _, r in round_]
            answers = batch_answers(self.name, batch, self._run, self.stream_timeout)
            for (idx, _), answer in zip(round_, answers):
                results[idx] = outputs_or_error(answer, requested)
            cancels.settle(results)
        return [results[idx] for idx in range(len(requests))]

    def infer_stream(
        self,
        inputs: Mapping[str, Any],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_id: str = "",
        cancel: Union[bool, CancelAt] = False,
        cancel_after: Optional[int] = None,
        errors: StreamErrors = "raise",
        correlation_id: Union[int, str] = 0,
        flags: int = 0,
    ) -> List[Any]:
        """Send one request to a decoupled model; return every response's outputs, in order,
        up to the FINAL flag (a flags-only final response adds nothing). An error response
        raises TritonRequestError; with ``errors="return"`` it takes its place in the list
        instead (as a TritonRequestError), after the parts sent before it, as a streaming
        client's callback receives them. ``correlation_id`` and ``flags``: as for :meth:`infer`.

        ``cancel=True`` cancels before ``execute`` (``CancelAt``: while it runs). ``cancel_after=n``
        cancels it once the model has sent ``n`` responses, as a gRPC client's
        ``stop_stream(cancel_requests=True)`` after its n-th response does: the model's
        ``is_cancelled()`` turns True, the client gets the first ``n`` responses, then its own
        :class:`ClientCancelledError` (what the model sends later never reaches it).

        Example::

            parts = harness.infer_stream({"TEXT": ["a long text"]}, cancel_after=2, errors="return")
            assert len(parts) == 3 and parts[2].code == "CANCELLED"
        """
        if errors not in ("raise", "return"):
            raise HarnessError(f"infer_stream(errors={errors!r}): expected 'raise' or 'return'")
        request, requested = self._build_request(
            inputs, requested_outputs, parameters, request_id, correlation_id, flags
        )
        if isinstance(cancel, CancelAt):
            return cancelled_stream(self, request, requested, cancel, errors)
        if cancel is True or cancel_after is not None:
            return stream_cancelled(self, request, requested, cancel_after, errors)
        return run_stream(self, request, requested, errors)

    def sequence(self, correlation_id: CorrelationId) -> SequenceDriver:
        """Drive one sequence of a model with ``sequence_batching``: each ``send`` is a
        request with this correlation id, START on the first, END on ``send(..., end=True)``.

        Example::

            with harness.sequence(7) as seq:
                seq.send(VALUE=[[1]])
                total = seq.send(VALUE=[[2]], end=True)["SUM"]
        """
        return SequenceDriver(self, correlation_id)

    def register_bls_model(self, name: str, target: Any) -> None:
        """Make BLS requests to ``name`` run on ``target``: another ModelHarness, a model class
        or model directory (run in a harness of its own), a plain function on numpy inputs
        (``fn(inputs: dict) -> dict``), or ``RawTarget(fn)`` for a function taking the
        pb_utils.InferenceRequest and returning an InferenceResponse."""
        pb.register_bls_model(name, versioned_handler(target))
        self._bls_names.append(name)

    def close(self) -> None:
        """Call ``finalize()`` (once; an exception it raises is logged and kept in
        ``finalize_error``, as the server unloads the model all the same) and release what the
        harness holds."""
        if self._closed:
            return
        self._closed = True
        try:
            finalize = getattr(getattr(self, "model", None), "finalize", None)
            if finalize is not None:
                with self._running():
                    self.finalize_error = run_finalize(self.name, lambda: self._call(finalize))
        finally:
            release_closed(self.release_facts)
            for bls_name in self._bls_names:
                pb.unregister_bls_model(bls_name)
            self._coroutines.close()
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)

    def _check_open(self) -> None:
        if self._closed:
            raise HarnessError(f"ModelHarness for model '{self.name}' is closed")

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        # getattr: also called on a harness whose __init__ failed (in tracebacks)
        name, version = getattr(self, "name", "?"), getattr(self, "version", "?")
        directory = str(getattr(self, "model_dir", "?"))
        return f"ModelHarness({name!r}, version={version}, dir={directory!r})"
