"""An ablation of the sequence workload, not a variant of it: sequence_checked.py (the
hand-written model plus tritonpy's output checks and the timing of its computation) written
in the shape of the tritonpy model, sequence_tritonpy.py: each sequence's state made by a
``start_sequence`` method and held on a small object, and an ``infer`` method of the input and
that object returning a dict of the outputs, each checked and made into its tensor in
``execute()``. What it costs over sequence_checked is what that shape costs; what tritonpy
costs over it is the rest of its engine (issue 32). Served with sequence_raw's configuration:

    python benchmarks/cpu_split.py --workload sequence --concurrency 16 --execute-cpu \\
        --extra checked=raw:benchmarks/workloads/models/sequence_checked.py \\
        --extra shaped=raw:benchmarks/workloads/models/sequence_shaped_checked.py \\
        --against checked --against shaped
"""

import json
import time
from time import perf_counter

import numpy as np
import triton_python_backend_utils as pb_utils

START = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
END = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END
#: Triton's default idle timeout (max_sequence_idle_microseconds), in seconds
DEFAULT_IDLE_S = 1.0


class Sequence:
    __slots__ = ("last", "state")

    def __init__(self, now):
        self.state = None
        self.last = now


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.outputs = tuple(
            (
                name,
                np.dtype(
                    pb_utils.triton_string_to_numpy(
                        pb_utils.get_output_config_by_name(config, name)["data_type"]
                    )
                ),
                tuple(int(d) for d in pb_utils.get_output_config_by_name(config, name)["dims"]),
            )
            for name in ("SUM", "MEAN")
        )
        idle_us = config["sequence_batching"].get("max_sequence_idle_microseconds")
        self.idle_s = int(idle_us) / 1e6 if idle_us else DEFAULT_IDLE_S
        self.sequences = {}  # correlation id -> Sequence
        self.next_sweep = 0.0
        self.slowest = 0.0

    def start_sequence(self, sequence):
        return {"sum": 0.0, "count": 0}

    def infer(self, VALUE, sequence):
        state = sequence.state
        total = state["sum"] = state["sum"] + VALUE
        state["count"] += 1
        return {"SUM": total, "MEAN": total / state["count"]}

    def execute(self, requests):
        now = time.monotonic()
        if now >= self.next_sweep:
            self._evict_idle(now)
        sequences = self.sequences
        responses = []
        for request in requests:
            corrid, flags = request.correlation_id(), request.flags()
            if flags & START:
                sequence = sequences[corrid] = Sequence(now)
                sequence.state = self.start_sequence(sequence)
            else:
                sequence = sequences.get(corrid)
                if sequence is None:
                    responses.append(self._unknown(corrid))
                    continue
            value = pb_utils.get_input_tensor_by_name(request, "VALUE").as_numpy()
            started = perf_counter()
            result = self.infer(value, sequence)
            elapsed = perf_counter() - started
            if elapsed > self.slowest:
                self.slowest = elapsed
            sequence.last = now
            if flags & END:
                del sequences[corrid]
            rows = value.shape[0]
            tensors = []
            for name, dtype, dims in self.outputs if type(result) is dict else ():
                out = result.get(name)
                shape = out.shape if type(out) is np.ndarray else None
                if shape is None or out.dtype != dtype or shape[0] != rows or shape[1:] != dims:
                    raise pb_utils.TritonModelException(f"output {name!r} does not fit")
                tensors.append(pb_utils.Tensor(name, out))
            if len(tensors) != len(result):
                raise pb_utils.TritonModelException("infer() returned undeclared outputs")
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses

    def _evict_idle(self, now):
        idle = [k for k, seq in self.sequences.items() if now - seq.last > self.idle_s]
        for corrid in idle:
            del self.sequences[corrid]
        self.next_sweep = now + min(1.0, self.idle_s)

    def _unknown(self, corrid):
        return pb_utils.InferenceResponse(
            error=pb_utils.TritonError(
                f"sequence {corrid}: no state (its first request must carry START)",
                pb_utils.TritonError.INVALID_ARG,
            )
        )
