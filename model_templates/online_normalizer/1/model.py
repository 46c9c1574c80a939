"""Normalises a stream of feature vectors online: each sequence (one client's stream, one
correlation id) keeps its own running mean and variance, and every value comes back
normalised by the statistics of its sequence so far.

The model is stateful: ``sequence = tp.Sequence(...)`` makes Triton's sequence batcher route
every request of a sequence to it with the sequence's correlation id and START/END flags;
``start_sequence`` creates the state at START, ``infer`` reads and updates
``sequence.state``, and tritonpy frees it after the END request, or after the idle timeout
when a client walks away without END.

config.pbtxt parameters: ``epsilon`` (added to the variance before its square root, default
1e-8) and ``clip`` (normalised values are clipped to [-clip, clip], default 10; 0: no clip).
"""

from typing import Any, Dict

import numpy as np
from numpy.typing import NDArray

import tritonpy as tp


class RunningMoments:
    """Count, mean and sum of squared deviations of one sequence's values (Welford's
    update, stable for long sequences)."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = np.zeros(0, np.float64)
        self.m2 = np.zeros(0, np.float64)

    def add(self, value: NDArray[np.float64]) -> None:
        if self.count == 0:
            self.mean = np.zeros(value.shape, np.float64)
            self.m2 = np.zeros(value.shape, np.float64)
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (value - self.mean)

    @property
    def variance(self) -> NDArray[np.float64]:
        return self.m2 / max(self.count, 1)


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError(f"{text} is negative")
    return value


class OnlineNormalizer(tp.Model):
    inputs = {"VALUE": tp.Tensor("FP32", [-1])}  # one feature vector per step
    outputs = {
        "NORMALIZED": tp.Tensor("FP32", [-1]),  # (value - mean) / sqrt(variance + epsilon)
        "COUNT": tp.Tensor("INT64", [1]),  # values seen in this sequence, this one included
    }
    max_batch_size = 8
    # the oldest strategy puts requests of several sequences in one execute(); tritonpy
    # computes each on its own sequence's state. A sequence idle for 60 s is ended.
    sequence = tp.Sequence(strategy="oldest", idle_timeout_s=60)
    epsilon = tp.config_parameter("epsilon", 1e-8, cast=_non_negative)
    clip = tp.config_parameter("clip", 10.0, cast=_non_negative)

    def start_sequence(self, sequence: tp.SequenceInfo) -> RunningMoments:
        return RunningMoments()

    def infer(self, VALUE: NDArray[np.float32], sequence: tp.SequenceInfo) -> Dict[str, Any]:
        moments: RunningMoments = sequence.state
        rows = np.asarray(VALUE, np.float64).reshape(-1, VALUE.shape[-1])
        if moments.count and rows.shape[-1] != moments.mean.shape[-1]:
            raise tp.InputError(
                f"input 'VALUE' has {rows.shape[-1]} features but sequence {sequence.id!r} "
                f"started with {moments.mean.shape[-1]}; send vectors of one length in a "
                f"sequence (start a new sequence for another length)",
                input_name="VALUE",
            )
        normalized = np.empty_like(rows)
        counts = np.empty((len(rows), 1), np.int64)
        # Triton sends a sequence's requests one row each (batch size 1); more rows are read
        # as consecutive steps
        for index, row in enumerate(rows):
            moments.add(row)
            normalized[index] = (row - moments.mean) / np.sqrt(moments.variance + self.epsilon)
            counts[index] = moments.count
        if self.clip:
            np.clip(normalized, -self.clip, self.clip, out=normalized)
        return {"NORMALIZED": normalized.astype(np.float32), "COUNT": counts}

    def end_sequence(self, sequence: tp.SequenceInfo) -> None:
        how = "closed without END" if sequence.evicted else "ended"
        count = sequence.state.count if sequence.state is not None else 0
        self.logger.log_verbose(f"sequence {sequence.id!r} {how} after {count} values")


TritonPythonModel = OnlineNormalizer
