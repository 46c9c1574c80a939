"""``Model``: the base class that implements Triton's ``TritonPythonModel`` for you.

The class holds what users touch: the hooks (``setup``, ``infer``, ``teardown``), the
declarations (class attributes, :meth:`Model.declared_config`), the helpers of
:class:`~tritonpy._runtime._context.ModelContext` and
:class:`~tritonpy._runtime._calls.ModelCalls`, and the ``TritonPythonModel`` methods.
Everything ``execute()`` does lives in one private engine (``_engine/``), built by
``initialize`` and kept in one name-mangled attribute, so no name a model defines can replace
a step of tritonpy's.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any, ClassVar, Dict, Mapping, Optional, Sequence

from . import _malloc, _sequence
from ._calls import ModelCalls, bind_calls
from ._config_parameters import resolve_config_parameters
from ._context import ModelContext
from ._declarations import (
    BASE_INFER_FACTS,
    CancellationSetting,
    InferFacts,
    check_batch_size,
    check_config_tensors,
    check_instance_codecs,
    completion,
    validate_declarations,
)
from ._engine._traits import traits_of
from ._engine.engine import Engine
from ._release_hooks import check_response_parameters, defines_ready, is_ready_hook
from ._sequence import SequenceInfo, check_sequence_config
from ._torch_threads import apply_torch_threads
from .codecs.base import Codec
from .errors import DeclarationError
from .metrics import bind_metrics


class Model(ModelCalls, ModelContext):
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
      a stream is asked before a part once its generator worked 2 ms since the last check or
      0.1 s passed (every part of a slow stream, a fast one seldom); ``True`` always checks,
      ``False`` never;
    * ``tune_malloc``: True (default) raises glibc's trim and mmap thresholds in the stub
      process, so the large buffers each call allocates (decoded images, output batches) are
      reused by the next call instead of being returned to the kernel and faulted in again
      (up to 64 MB of freed memory stays with the instance); False keeps glibc's defaults;
    * ``torch_threads``: torch's intra-op threads in the instance's stub (None: torch's
      default, one per core). 1 suits a small model in a busy server: torch's idle threads
      spin after every parallel operation, CPU the server and other stubs lose;
    * ``sequence``: ``tp.Sequence(...)`` makes a stateful model, served by Triton's sequence
      batcher: ``infer`` then takes an argument ``sequence`` (a ``tp.SequenceInfo``: its
      correlation ``id``, ``start``/``end`` flags and the ``state`` tritonpy keeps for it from
      ``start_sequence`` until END or the idle timeout, when ``end_sequence`` is called; see
      docs/stateful.md).

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
    #: tp.Sequence(...): a stateful model served by Triton's sequence batcher (state per
    #: correlation id, hooks start_sequence/end_sequence); None: requests are independent
    sequence: ClassVar[Optional[_sequence.Sequence]] = None
    #: infer returns tp.Response(..., parameters=...): refuse to load on a release without
    #: response parameters (before 25.02) instead of failing every request there
    response_parameters: ClassVar[bool] = False
    #: what the class definition found out about infer (see _declarations.InferFacts)
    __infer: ClassVar[InferFacts] = BASE_INFER_FACTS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__infer = validate_declarations(cls, cls.__infer)
        if defines_ready(cls, Model.ready):
            # only then: without is_ready the server answers readiness without the stub
            cls.is_ready = is_ready_hook  # type: ignore[attr-defined]

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

    def start_sequence(self, sequence: SequenceInfo) -> Any:
        """A stateful model's hook (``sequence = tp.Sequence(...)``): called at the START of a
        sequence, before ``infer`` gets its first request; returns the sequence's new state
        (``sequence.state``; default None)::

            def start_sequence(self, sequence):
                return {"sum": 0}
        """
        return None

    def end_sequence(self, sequence: SequenceInfo) -> None:
        """A stateful model's hook: called once a sequence ended, after ``infer`` of its END
        request, or when tritonpy evicted it (``sequence.evicted``: no request for
        ``idle_timeout_s``, or a new START under the same id). Its state is freed after it."""

    def ready(self) -> bool:
        """Whether the instance can serve now (``async def ready`` too): define it and Triton
        26.03 and later call it when asked for the model's readiness (False: not ready; 5 s
        at most); older releases never call it (the test harness warns). Example::

            def ready(self):
                return self.cache.is_warm()
        """
        return True

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
        if cls.sequence is not None:  # the sequence batcher schedules it, never the dynamic one
            config["sequence_batching"] = cls.sequence.config_entry()
        elif cls.max_batch_size > 0 and cls.dynamic_batching:
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
        """Read the configuration Triton passes, check it against the declarations, call
        :meth:`setup`, then build the engine that serves :meth:`execute`."""
        pb = importlib.import_module("triton_python_backend_utils")
        config: Dict[str, Any] = json.loads(args["model_config"])
        cls = type(self)
        configured = int(config.get("max_batch_size", 0) or 0)
        check_batch_size(cls, configured, auto_completing=False)
        check_config_tensors(cls, config)
        check_sequence_config(cls, config)
        _set_context(self, args, config, configured > 0)
        self.logger = pb.Logger
        check_response_parameters(self, pb)
        bind_calls(self, pb)
        # declared config parameters may set the knobs below on the instance
        resolve_config_parameters(self)
        self.metrics, builtin = bind_metrics(self, pb)
        if self.tune_malloc:
            _malloc.tune_malloc()
        apply_torch_threads(self.torch_threads, self.model_name)

        self.setup()
        # setup() may replace codecs on the instance (e.g. an Image color read from a
        # parameter) as long as what Triton sees stays the same
        check_instance_codecs(cls, self)
        facts = cls.__infer
        traits = traits_of(self, facts.kind, facts.wants_parameters, facts.wants_sequence)
        self.__engine = Engine(self, pb, builtin, traits)
        if type(self).execute is Model.execute:
            # the stub calls the engine's execute itself: one Python frame less per call
            # (about 0.5 us under load, benchmarks/HISTORY.md's issue 12 passes)
            self.execute = self.__engine.execute  # type: ignore[method-assign]

    def execute(self, requests: Sequence[Any]) -> Any:
        """Serve one batch of requests: one response per request, in order. A streaming
        (decoupled) model sends its responses through each request's response sender and
        returns None; an ``async def infer`` makes this return a coroutine, which Triton
        (24.04+) runs on its event loop."""
        return self.__engine.execute(requests)

    def finalize(self) -> None:
        """Triton's unload hook: calls :meth:`teardown`."""
        self.teardown()


def _set_context(
    model: Model, args: Mapping[str, str], config: Dict[str, Any], batched: bool
) -> None:
    """The attributes ``setup()`` may read, from the arguments Triton passes."""
    model.model_config = config
    model.model_name = args.get("model_name", config.get("name", type(model).__name__))
    model.model_version = int(args.get("model_version", "1") or 1)
    model.model_dir = Path(args.get("model_repository", "."))
    model.version_dir = model.model_dir / str(model.model_version)
    model.instance_name = args.get("model_instance_name", "")
    model.instance_kind = args.get("model_instance_kind", "CPU")
    model.device_id = int(args.get("model_instance_device_id", "0") or 0)
    model.batched = batched
