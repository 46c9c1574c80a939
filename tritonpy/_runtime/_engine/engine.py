"""The :class:`Engine`: the state ``execute()`` needs, computed once at ``initialize``, and the
dispatch of each call to its path.

One request's way through :meth:`Engine.execute`, in order:

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

import traceback
from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence

from ..errors import InputError, TritonPyError
from . import _alone, _decoding, _direct, _merged
from ._plain import plain_execute, plain_outputs
from ._tables import CodecTables
from ._traits import AUTO_CANCELLATION_SECONDS, Traits

if TYPE_CHECKING:
    from ._sequences import SequenceStore


class Engine(CodecTables):
    """Everything ``Model.execute`` does for one model instance.

    Built once by ``Model.initialize`` (``Engine(model, pb, builtin, traits)``) after
    ``setup()``; its attributes are the per-instance facts the hot path reads as they are.
    """

    def __init__(self, model: Any, pb: Any, builtin: Any, traits: Traits) -> None:
        self.pb = pb
        self.error_codes = pb.TritonError
        self.logger = model.logger
        self.model_name: str = model.model_name
        self.class_name = type(model).__name__
        #: the model configuration Triton passed (JSON form)
        self.model_config: Dict[str, Any] = model.model_config
        #: the user's infer, bound once: the hot path makes no lookup on the model
        self.infer = model.infer
        #: tritonpy's own per-model metrics, or None
        self.builtin = builtin
        self.traits = traits
        self.batched: bool = model.batched
        super().__init__(model.inputs, model.outputs, self.batched)
        #: a stateful model's open sequences (``_sequences.py``), None for other models
        self.sequences: Optional[SequenceStore] = None
        if traits.sequence is not None:
            self._set_up_sequences(model, traits.sequence)
        self.wants_sequence = traits.wants_sequence
        # streams never merge (each request gets its own generator), nor do the requests of
        # sequences (each has its own state)
        self.merge = (
            self.batched
            and traits.merge_requests
            and not traits.decoupled
            and self.sequences is None
        )
        self.wants_parameters = traits.wants_parameters
        # a call merges in one pass unless requests carry parameters (see _merged.py)
        self.merges_directly = self.merge and not traits.wants_parameters
        # every model but streams, async infer and sequences (which _bind_execute gives
        # execute() paths of their own)
        self.plain = not traits.decoupled and traits.synchronous and self.sequences is None
        #: True/False from check_cancellation, None for "auto"
        self.check_cancellation = traits.check_cancellation
        # typical infer() seconds per call (see record_seconds); "auto" checks until it is known
        self.infer_seconds = AUTO_CANCELLATION_SECONDS
        #: whether requests are asked if they were cancelled, kept by record_seconds
        self.checks_cancelled = traits.check_cancellation is not False
        # a request alone gets its decoded values as they are unless some are merged, rows are
        # counted or the request parameters are added
        self.reshapes_alone = traits.wants_parameters or (
            self.batched and (bool(self.merged_alone) or builtin is not None)
        )
        if traits.wants_parameters or builtin is not None:
            self.direct_inputs = None  # infer() gets more than the inputs' values
        # a fast call that is not a new minimum leaves the figures of record_seconds as they
        # are (it would keep the checks off), so timed_infer calls it only from there
        self.records_from = AUTO_CANCELLATION_SECONDS if builtin is None else 0.0
        #: a stream's outputs when all are plain numpy tensors (see Stream.send_parts)
        self.part_outputs = plain_outputs(self) if traits.decoupled else None
        self._bind_execute()

    def _bind_execute(self) -> None:
        """Bind ``execute`` on the instance where a model's calls have a path of their own."""
        # a model whose inputs and outputs are plain numpy tensors: execute() is the
        # plain-tensor path (_plain.py)
        plain = plain_execute(self)
        if plain is not None:
            self.execute = plain  # type: ignore[method-assign,assignment]
        elif self.sequences is not None:  # a stateful model's calls go straight to its path
            # (plain tensors of a batched model: each request served by _plain.serve_rows)
            from ._sequences import sequence_execute

            self.execute = sequence_execute(self)  # type: ignore[method-assign,assignment]
        elif self.traits.decoupled:
            # a stream's calls go straight to its path, as an async infer's do: a dispatch per
            # call (an import statement and two frames) cost ~5 us in process (48.9 -> 43.3
            # us a request of 16 responses, issue 32)
            from ._streaming import decoupled_execute

            self.execute = decoupled_execute(self)  # type: ignore[method-assign,assignment]
        elif not self.traits.synchronous:  # an async infer's calls (a coroutine each)
            from ._async import execute_async

            self.execute = partial(execute_async, self)  # type: ignore[method-assign]

    def _set_up_sequences(self, model: Any, declared: Any) -> None:
        """A stateful model's store and sequence path."""
        from ._sequences import SequenceStore, compute_in_sequence

        self.sequences = SequenceStore(declared, model.start_sequence, model.end_sequence)
        #: the general path of a request of a sequence (the direct path's fallback)
        self.compute_in_sequence = partial(compute_in_sequence, self)

    def execute(self, requests: Sequence[Any]) -> Any:
        """Serve one batch of requests (what ``Model.execute`` returns). Streams, async
        ``infer`` and sequences never come here: ``_bind_execute`` gives them their own."""
        if not self.merge or len(requests) == 1:
            # the hot path of most calls: nothing to merge, each request straight through
            if self.direct_inputs is not None:
                if len(requests) == 1:
                    return [self.serve_direct(0, requests[0])]
                return [self.serve_direct(index, r) for index, r in enumerate(requests)]
            return [self.serve_alone(index, request) for index, request in enumerate(requests)]
        if self.direct_inputs is not None and self.merges_directly and not self.checks_cancelled:
            merged = self.merge_direct(requests)  # the usual merged call, in one pass
            if merged is not None:
                return merged
        return self.execute_merged(requests)

    # -- the paths (see the modules named) -----------------------------------------------------
    decode = _decoding.decode
    decode_present = _decoding.decode_present
    decode_rows = _decoding.decode_rows
    one_values = _decoding.one_values
    requested_of = _decoding.requested_of
    serve_alone = _alone.serve_alone
    compute_alone = _alone.compute_alone
    respond = _alone.respond
    check_result = _alone.check_result
    serve_direct = _direct.serve_direct
    merge_direct = _direct.merge_direct
    direct_arrays = _direct.direct_arrays
    sliced = _direct.sliced
    execute_merged = _merged.execute_merged
    merge_directly = _merged.merge_directly
    isolate = _merged.isolate
    decode_all = _merged.decode_all
    run_group = _merged.run_group
    run_one = _merged.run_one
    merged_values = _merged.merged_values
    split = _merged.split
    log_isolation = _merged.log_isolation

    # -- infer() timing and the cancellation checks --------------------------------------------
    def timed_infer(self, values: Dict[str, Any]) -> Any:
        """``infer(**values)``, its seconds recorded (see :meth:`record_seconds`)."""
        started = perf_counter()
        result = self.infer(**values)
        elapsed = perf_counter() - started
        # a fast call that is not a new minimum would leave the figures as they are
        # (serve_direct writes these lines out, to save the call per request)
        if elapsed < self.infer_seconds or elapsed >= self.records_from:
            self.record_seconds(elapsed)
        return result

    def record_seconds(self, elapsed: float) -> None:
        """Keep the typical seconds of an infer() call, which turn the "auto" checks on."""
        # A slowly rising minimum, not an average: under CPU contention a fast call is now and
        # then descheduled for milliseconds, which must not switch the checks on; a model that
        # really is slow reaches its duration within a few dozen calls (+10 % a call).
        # (a comparison, not min(): this runs once per infer() call)
        rising = self.infer_seconds * 1.1
        self.infer_seconds = seconds = elapsed if elapsed < rising else rising
        if self.check_cancellation is None:
            self.checks_cancelled = seconds >= AUTO_CANCELLATION_SECONDS
        if self.builtin is not None:
            self.builtin.infer_seconds(elapsed)

    # -- error responses ------------------------------------------------------------------------
    def cancelled_response(self) -> Any:
        return self.error_response(
            "request cancelled by the client before the model computed it",
            self.error_codes.CANCELLED,
        )

    def refused(self, exc: InputError) -> Any:
        """INVALID_ARG for a request whose input is bad (counted by the built-in metrics)."""
        if self.builtin is not None:
            self.builtin.refused(exc.input_name)
        return self.error_response(str(exc), self.error_codes.INVALID_ARG)

    def error_response(self, message: str, code: Any) -> Any:
        pb = self.pb
        return pb.InferenceResponse(output_tensors=[], error=pb.TritonError(message, code))

    def internal_error(self, exc: BaseException, during: str) -> Any:
        """INTERNAL for an unexpected failure, logged with its traceback."""
        if isinstance(exc, TritonPyError):
            message = str(exc)
        else:
            message = f"{type(exc).__name__} while {during}: {exc}"
        self.logger.log_error(f"{self.model_name}: {message}\n{traceback.format_exc()}")
        return self.error_response(message, self.error_codes.INTERNAL)


def engine_of(model: Any) -> Engine:
    """The engine of an initialized model (for tests that look inside)."""
    engine: Engine = model._Model__engine
    return engine
