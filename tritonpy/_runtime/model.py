"""``Model``: the base class that implements Triton's ``TritonPythonModel`` for you.

One request's way through :meth:`Model.execute`, in order:

1. cancelled requests get ``CANCELLED`` and are not computed;
2. each request's inputs are decoded by their codecs (a bad input fails that request alone
   with ``INVALID_ARG``);
3. with batching, requests are merged: rows of every request joined into one value per input
   (requests whose ragged shapes differ go to separate groups);
4. ``infer(**inputs)`` runs once per group (once per request without batching);
5. outputs are checked and encoded once for the group, split back into per-request views,
   and every request gets exactly one ``InferenceResponse``.

If ``infer`` raises on a merged group, the group's requests are re-run one by one so that a
poison request fails alone and its neighbours still succeed.
"""

from __future__ import annotations

import importlib
import json
import traceback
from pathlib import Path
from time import perf_counter
from typing import (
    Any,
    ClassVar,
    Dict,
    FrozenSet,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from . import _malloc
from ._calls import ModelCalls
from ._config_parameters import resolve_config_parameters
from ._context import ModelContext
from ._declarations import (
    INFER_SYNC,
    CancellationSetting,
    cancellation_policy,
    check_batch_size,
    check_config_tensors,
    check_instance_codecs,
    completion,
    validate_declarations,
)
from ._decoded import Decoded
from ._direct import DirectOutputs, DirectPath
from ._merged import MergedExecution, rows_error
from ._request_decoding import RequestDecoding
from ._torch_threads import apply_torch_threads
from .codecs.base import BY_CODEC, Codec, DirectSpec, PlainArray, plain_fits
from .errors import DeclarationError, InputError, OutputError, TritonPyError
from .metrics import bind_metrics
from .response import Response, make_inference_response

#: with check_cancellation = "auto", requests are checked while infer() takes this long or more
AUTO_CANCELLATION_SECONDS = 0.002


class Model(ModelCalls, ModelContext, RequestDecoding, MergedExecution, DirectPath):
    """Base class of a tritonpy model. Subclass it, declare ``inputs`` and ``outputs``, write
    ``infer``, and bind the class to the name Triton looks for.

    Example (``model_repository/double/1/model.py``; ``config.pbtxt`` needs only
    ``name: "double"`` and ``backend: "python"``)::

        import tritonpy as tp

        class Double(tp.Model):
            inputs = {"X": tp.Tensor("FP32", [-1])}
            outputs = {"Y": tp.Tensor("FP32", [-1])}
            max_batch_size = 8

            def infer(self, X):
                return {"Y": X * 2}

        TritonPythonModel = Double

    Class attributes:

    * ``inputs`` / ``outputs``: ``{name: codec}`` (``tp.Tensor``, ``tp.Text``, ``tp.Image``...;
      see docs/codecs.md);
    * ``max_batch_size``: 0 (default) for no batching: ``infer`` runs once per request with
      values without a batch dimension. Above 0, every value has a leading row dimension, and
      ``infer`` gets the rows of all requests of one ``execute()`` merged;
    * ``dynamic_batching``: when batching, ask Triton's dynamic batcher to gather requests
      (default True);
    * ``merge_requests``: set to False when ``infer`` cannot take rows from several requests at
      once: it is then called once per request (values keep their row dimension);
    * ``check_cancellation``: ask each request whether its client cancelled it, and answer
      ``CANCELLED`` without computing it. Each check is a round trip from the stub to the
      server, so ``"auto"`` (default) checks while ``infer`` takes 2 ms or more per call on
      average (there a check costs under 2 % and can save real work) and skips it for fast
      models (Triton itself already drops requests cancelled while they wait in its queue);
      ``True`` always checks, ``False`` never;
    * ``tune_malloc``: True (default) raises glibc's trim and mmap thresholds in the stub
      process, so the large buffers each call allocates (decoded images, output batches) are
      reused by the next call instead of being returned to the kernel and faulted in again
      (up to 64 MB of freed memory stays with the instance); False keeps glibc's defaults;
    * ``torch_threads``: torch's intra-op threads in the instance's stub (None: torch's
      default, one per core). 1 suits a small model in a busy server: torch's idle threads
      spin after every parallel operation, CPU the server and other stubs lose.

    Hooks: ``setup()`` once per instance after the configuration is known (it may replace a
    codec on the instance, keeping its data type and dims, e.g.
    ``self.inputs = {"IMAGE": tp.Image(color=self.parameter("color", "RGB"))}``),
    ``infer(**inputs)``
    returning ``{output name: value}``, ``teardown()`` when Triton unloads the model. During
    ``setup`` these attributes are set: ``model_config`` (dict), ``model_name``,
    ``model_version``, ``model_dir`` (the directory holding config.pbtxt), ``version_dir``,
    ``instance_name``, ``instance_kind``, ``device_id``, ``batched`` and ``logger``
    (``pb_utils.Logger``). Helpers for ``setup``: ``parameter(key, default, cast)`` (a
    ``config.pbtxt`` parameter), ``model_file(name)`` (a file the model needs, or a clear load
    error), ``read_labels()`` (``labels.txt``, one class name per line) and ``torch_device``
    (``"cuda:N"`` for a GPU instance, else ``"cpu"``).
    """

    # Not ClassVar: setup() may replace a codec on the instance (self.inputs = {...}), and the
    # type checker must accept that documented idiom in user code.
    inputs: Mapping[str, Codec] = {}
    outputs: Mapping[str, Codec] = {}
    max_batch_size: ClassVar[int] = 0
    dynamic_batching: ClassVar[bool] = True
    merge_requests: ClassVar[bool] = True
    check_cancellation: ClassVar[CancellationSetting] = "auto"
    #: {name: tp.Counter(...) | tp.Gauge(...) | tp.Histogram(...)}; on the instance, the bound
    #: metrics (``self.metrics["name"].increment(1)``)
    metrics: Mapping[str, Any] = {}
    #: record tritonpy's own per-model metrics (rows per infer() call, refused requests per
    #: input, infer() seconds)
    builtin_metrics: ClassVar[bool] = False
    #: Triton's decoupled transaction policy (responses sent through the response sender).
    #: None: decided by ``infer``: a generator (``yield``) streams and sets it True
    decoupled: ClassVar[Optional[bool]] = None
    #: keep freed memory for the next call instead of returning it to the kernel (glibc's
    #: trim and mmap thresholds raised in the stub process; see ``_malloc.py``)
    tune_malloc: ClassVar[bool] = True
    #: torch's intra-op threads in this instance's stub (``torch.set_num_threads``); None
    #: leaves torch's default, one per core (see ``_torch_threads.py``)
    torch_threads: ClassVar[Optional[int]] = None
    _infer_kind: ClassVar[str] = INFER_SYNC
    _wants_parameters: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        validate_declarations(cls)

    # -- hooks for subclasses ----------------------------------------------------------------
    def setup(self) -> None:
        """Called once per model instance, after the configuration is known: load weights,
        label files, build lookup tables here, not in ``infer``."""

    # Typed (*args: Any, **inputs: Any) -> Any, which mypy accepts as the base of any override:
    # users name their parameters after the inputs and annotate them as they like
    # (def infer(self, LOGITS: NDArray[np.float32]) -> Dict[str, Any]); tritonpy calls it with
    # keywords only, and checks the names against the declarations at class definition.
    def infer(self, *args: Any, **inputs: Any) -> Any:
        """Compute the outputs from the decoded inputs, returning ``{output name: value}``.
        Override it, with one parameter per declared input::

            def infer(self, LOGITS: NDArray[np.float32]) -> Dict[str, Any]:
                return {"SCORE": LOGITS.max(axis=1)}
        """
        raise NotImplementedError(
            f"{type(self).__name__}.infer is not implemented: define "
            f"'def infer(self, {', '.join(self.inputs) or '...'})' returning a dict of outputs"
        )

    def teardown(self) -> None:
        """Called once when Triton unloads the model instance."""

    # -- declarations ------------------------------------------------------------------------
    @classmethod
    def declared_config(cls) -> Dict[str, Any]:
        """The model configuration fields the declarations determine, as a dict in the JSON
        form of Triton's ``ModelConfig`` (used by auto-complete and the config tooling)."""
        config: Dict[str, Any] = {
            "max_batch_size": cls.max_batch_size,
            "input": [c.config_entry(n, is_input=True) for n, c in cls.inputs.items()],
            "output": [c.config_entry(n, is_input=False) for n, c in cls.outputs.items()],
        }
        if cls.max_batch_size > 0 and cls.dynamic_batching:
            config["dynamic_batching"] = {}
        if cls.decoupled:
            config["model_transaction_policy"] = {"decoupled": True}
        return config

    # -- the TritonPythonModel interface -----------------------------------------------------
    @classmethod
    def auto_complete_config(cls, auto_complete_model_config: Any) -> Any:
        """Fill the model configuration from the declarations (Triton calls this before
        ``initialize`` unless the server runs with ``--disable-auto-complete-config``)."""
        config = auto_complete_model_config
        current = config.as_dict()
        configured = int(current.get("max_batch_size", 0) or 0)
        check_batch_size(cls, configured, auto_completing=True)
        steps = completion(cls, configured, current)
        try:
            if steps.max_batch_size is not None:
                config.set_max_batch_size(steps.max_batch_size)
            if steps.dynamic_batching:
                config.set_dynamic_batching()
            for entry in steps.inputs:
                config.add_input(entry)
            for entry in steps.outputs:
                config.add_output(entry)
            if steps.decoupled:
                config.set_model_transaction_policy({"decoupled": True})
        except ValueError as exc:
            raise DeclarationError(
                f"{cls.__name__}: config.pbtxt disagrees with the class declarations: {exc}. "
                f"Fix config.pbtxt or remove the field and let auto-complete fill it"
            ) from None
        return config

    def initialize(self, args: Mapping[str, str]) -> None:
        """Read the configuration Triton passes, check it against the declarations, then call
        :meth:`setup`."""
        self._pb = importlib.import_module("triton_python_backend_utils")
        config: Dict[str, Any] = json.loads(args["model_config"])
        cls = type(self)
        configured = int(config.get("max_batch_size", 0) or 0)
        check_batch_size(cls, configured, auto_completing=False)
        check_config_tensors(cls, config)

        self.model_config = config
        self.model_name = args.get("model_name", config.get("name", cls.__name__))
        self.model_version = int(args.get("model_version", "1") or 1)
        self.model_dir = Path(args.get("model_repository", "."))
        self.version_dir = self.model_dir / str(self.model_version)
        self.instance_name = args.get("model_instance_name", "")
        self.instance_kind = args.get("model_instance_kind", "CPU")
        self.device_id = int(args.get("model_instance_device_id", "0") or 0)
        self.batched = configured > 0
        self.logger = self._pb.Logger
        # declared config parameters may set the knobs below on the instance
        resolve_config_parameters(self)
        self.metrics, self._builtin = bind_metrics(self)
        if self.tune_malloc:
            _malloc.tune_malloc()
        apply_torch_threads(self.torch_threads, self.model_name)

        self.setup()
        # setup() may replace codecs on the instance (e.g. an Image color read from a
        # parameter) as long as what Triton sees stays the same
        check_instance_codecs(cls, self)

        # Everything execute() needs, computed once: the hot path does no lookups.
        self._input_plan: Tuple[Tuple[str, Codec], ...] = tuple(self.inputs.items())
        self._output_plan: Tuple[Tuple[str, Codec], ...] = tuple(self.outputs.items())
        self._output_names: FrozenSet[str] = frozenset(self.outputs)
        # plain Tensors are checked and wrapped without a codec call (Codec._plain_array)
        self._input_entries: Dict[str, Tuple[Codec, Optional[PlainArray]]] = {
            name: (codec, codec._plain_array()) for name, codec in self._input_plan
        }
        self._output_entries: Tuple[Tuple[str, Codec, Optional[PlainArray]], ...] = tuple(
            (name, codec, codec._plain_array()) for name, codec in self._output_plan
        )
        # the inputs that can keep two requests apart (the others' group key is always None)
        self._key_inputs = tuple(
            (name, codec)
            for name, codec in self._input_plan
            if codec.optional or codec._groups_requests()
        )
        # with one output, a request asks for it or for everything: no need to ask which
        self._may_request_fewer = len(self._output_plan) > 1
        # streams never merge: each request gets its own generator
        self._merge = self.batched and cls.merge_requests and not cls.decoupled
        # a call merges in one pass unless requests carry parameters (see _merged.py)
        self._merges_directly = self._merge and not cls._wants_parameters
        # execute() leaves the plain path only for streams and async infer (one check a call)
        self._plain = not cls.decoupled and cls._infer_kind == INFER_SYNC
        self._error_codes = self._pb.TritonError
        self._check_cancellation = cancellation_policy(cls)
        # typical infer() seconds per call (see _record_seconds); "auto" checks until it is
        # known
        self._infer_seconds = AUTO_CANCELLATION_SECONDS
        #: whether requests are asked if they were cancelled, kept by _record_seconds
        self._checks_cancelled = self._check_cancellation is not False
        # the inputs whose value for a request alone is not the decoded one (ragged="pad"
        # gives a Padded, an Image decodes its rows when merged)
        self._merged_alone: Tuple[Tuple[str, Codec], ...] = tuple(
            (name, codec) for name, codec in self._input_plan if not codec.merge_keeps_one()
        )
        # a request alone gets its decoded values as they are unless some are merged, rows are
        # counted or the request parameters are added
        self._reshapes_alone = cls._wants_parameters or (
            self.batched and (bool(self._merged_alone) or self._builtin is not None)
        )
        # a request alone, and a merged call, take the direct path (see _direct.py) when
        # every input and output has one
        self._direct_inputs, self._direct_outputs = self._direct_plan()
        # a fast call that is not a new minimum leaves the figures of _record_seconds as they
        # are (it would keep the checks off), so _timed_infer calls it only from there
        self._records_from = AUTO_CANCELLATION_SECONDS if self._builtin is None else 0.0

    def _direct_plan(self) -> Tuple[Optional[Dict[str, DirectSpec]], DirectOutputs]:
        """The direct path's steps for every input and output (see ``_direct.py``), or None
        when some input or output has none, or infer() gets more than the inputs' values."""
        if type(self)._wants_parameters or self._builtin is not None:
            return None, ()
        outputs = []
        for name, codec in self._output_plan:
            spec = codec._direct_output(self.batched)
            if spec is None:
                return None, ()
            outputs.append((name, *spec))
        inputs: Dict[str, DirectSpec] = {}
        for name, codec in self._input_plan:
            spec = codec._direct_input(self.batched)
            if spec is None:
                return None, ()
            # with batching, a codec's own steps must give what merge() would; the plain arrays
            # of several requests merge only when their shapes agree (else: the general path)
            if self.batched and (
                codec._groups_requests() if spec[0] == BY_CODEC else not codec.merge_keeps_one()
            ):
                return None, ()
            inputs[name] = spec
        return inputs, tuple(outputs)

    def execute(self, requests: Sequence[Any]) -> Any:
        """Serve one batch of requests: one response per request, in order. A streaming
        (decoupled) model sends its responses through each request's response sender and
        returns None; an ``async def infer`` makes this return a coroutine, which Triton
        (24.04+) runs on its event loop."""
        if not self._plain:
            return self._execute_special(requests)
        if not self._merge or len(requests) == 1:
            # the hot path of most calls: nothing to merge, each request straight through
            if self._direct_inputs is not None:
                if len(requests) == 1:
                    return [self._serve_direct(0, requests[0])]
                return [self._serve_direct(index, r) for index, r in enumerate(requests)]
            return [self._serve_alone(index, request) for index, request in enumerate(requests)]
        if self._direct_inputs is not None and self._merges_directly and not self._checks_cancelled:
            merged = self._merge_direct(requests)  # the usual merged call, in one pass
            if merged is not None:
                return merged
        return self._execute_merged(requests)

    def _execute_special(self, requests: Sequence[Any]) -> Any:
        # imported here: plain models never load these modules
        if type(self).decoupled:
            from ._streaming import execute_decoupled

            return execute_decoupled(self, requests)
        from ._async import execute_async

        return execute_async(self, requests)

    def _serve_alone(self, index: int, request: Any) -> Any:
        """One request on its own, from its inputs to its response (the same steps and errors
        as a merged group, with no merge or split in between)."""
        if self._checks_cancelled and request.is_cancelled():
            return self._cancelled_response()
        return self._compute_alone(index, request)

    def _compute_alone(self, index: int, request: Any) -> Any:
        """:meth:`_serve_alone` once the request is known not to be cancelled."""
        try:
            item = self._decode(index, request, keyed=False)
        except InputError as exc:
            return self._refused(exc)
        except Exception as exc:
            return self._internal_error(exc, "decoding the inputs")
        try:
            values = self._one_values(item) if self._reshapes_alone else item.values
            started = perf_counter()
            result = self.infer(**values)
            self._record_seconds(perf_counter() - started)
            return self._respond(item, result)
        except InputError as exc:
            return self._refused(exc)
        except Exception as exc:
            return self._internal_error(exc, "running infer()")

    def _respond(self, item: Decoded, result: Any) -> Any:
        """The response of one request alone: each output encoded, checked and wrapped into
        its tensor in one pass."""
        parameters: Optional[Mapping[str, Any]] = None
        if type(result) is not dict and isinstance(result, Response):
            result, parameters = result.outputs, result.parameters
        self._check_result(result)
        pb, requested, batched = self._pb, item.requested, self.batched
        tensors = []
        for name, codec, plain in self._output_entries:
            if name not in result:
                self._check_not_needed(name, requested, result)
                continue
            value = result[name]
            if plain is not None and plain_fits(value, plain, batched):
                if batched and len(value) != item.rows:
                    raise rows_error(name, item.rows, value)
                if requested is None or name in requested:
                    tensors.append(pb.Tensor(name, value))
                continue
            value = codec.encode(name, value, batched)
            if batched and len(value) != item.rows:
                raise rows_error(name, item.rows, value)
            if requested is None or name in requested:
                tensors.append(codec.to_tensor(name, value, pb))
        if parameters:
            return make_inference_response(pb, tensors, parameters)
        return pb.InferenceResponse(output_tensors=tensors)

    def _cancelled_response(self) -> Any:
        return self._error_response(
            "request cancelled by the client before the model computed it",
            self._error_codes.CANCELLED,
        )

    def _refused(self, exc: InputError) -> Any:
        """INVALID_ARG for a request whose input is bad (counted by the built-in metrics)."""
        if self._builtin is not None:
            self._builtin.refused(exc.input_name)
        return self._error_response(str(exc), self._error_codes.INVALID_ARG)

    def finalize(self) -> None:
        """Triton's unload hook: calls :meth:`teardown`."""
        self.teardown()

    # -- internals ---------------------------------------------------------------------------
    def _finish_one(self, item: Decoded, result: Any, responses: List[Any]) -> None:
        responses[item.index] = self._respond(item, result)

    def _cancellation_checked(self) -> bool:
        """Whether this call asks its requests if they were cancelled (see
        ``check_cancellation``)."""
        return self._checks_cancelled

    def _timed_infer(self, values: Dict[str, Any]) -> Any:
        started = perf_counter()
        result = self.infer(**values)
        elapsed = perf_counter() - started
        # a fast call that is not a new minimum would leave the figures as they are
        # (_serve_direct writes these lines out, to save the call per request)
        if elapsed < self._infer_seconds or elapsed >= self._records_from:
            self._record_seconds(elapsed)
        return result

    def _record_seconds(self, elapsed: float) -> None:
        # A slowly rising minimum, not an average: under CPU contention a fast call is now and
        # then descheduled for milliseconds, which must not switch the checks on; a model that
        # really is slow reaches its duration within a few dozen calls (+10 % a call).
        # (a comparison, not min(): this runs once per infer() call)
        rising = self._infer_seconds * 1.1
        self._infer_seconds = seconds = elapsed if elapsed < rising else rising
        if self._check_cancellation is None:
            self._checks_cancelled = seconds >= AUTO_CANCELLATION_SECONDS
        if self._builtin is not None:
            self._builtin.infer_seconds(elapsed)

    def _check_result(self, result: Any) -> None:
        """infer() returned a mapping of declared output names."""
        # type() first: isinstance against the Mapping ABC costs a microsecond a call
        if type(result) is not dict and not isinstance(result, Mapping):
            raise OutputError(
                f"{type(self).__name__}.infer() must return a dict {{output name: value}}, got "
                f"{type(result).__name__}; declared outputs: {sorted(self._output_names)}"
            )
        if not self._output_names.issuperset(result):
            unknown = [name for name in result if name not in self._output_names]
            raise OutputError(
                f"{type(self).__name__}.infer() returned {unknown}, which are not declared "
                f"outputs; declared: {sorted(self._output_names)}"
            )

    def _check_not_needed(
        self, name: str, needed: Optional[FrozenSet[str]], result: Mapping[str, Any]
    ) -> None:
        """An output infer() left out is fine only when no request asked for it."""
        if needed is None or name in needed:
            raise OutputError(
                f"{type(self).__name__}.infer() did not return output {name!r}; "
                f"it returned {sorted(result)}"
            )

    def _error_response(self, message: str, code: Any) -> Any:
        pb = self._pb
        return pb.InferenceResponse(output_tensors=[], error=pb.TritonError(message, code))

    def _internal_error(self, exc: BaseException, during: str) -> Any:
        if isinstance(exc, TritonPyError):
            message = str(exc)
        else:
            message = f"{type(exc).__name__} while {during}: {exc}"
        self.logger.log_error(
            f"{getattr(self, 'model_name', type(self).__name__)}: {message}\n"
            f"{traceback.format_exc()}"
        )
        return self._error_response(message, self._error_codes.INTERNAL)
