"""Our own renditions of NVIDIA python_backend's example models, run through ModelHarness."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tritonpy._runtime.errors import TritonRequestError
from tritonpy.testing import ModelHarness

EXAMPLES = Path(__file__).parents[1] / "runtime" / "nvidia_examples"


def test_add_sub():
    with ModelHarness(EXAMPLES / "add_sub") as h:
        a = np.array([1, 2, 3, 4], np.float32)
        b = np.array([0.5, 0.5, 1, 1], np.float32)
        out = h.infer({"INPUT0": a, "INPUT1": b})
        np.testing.assert_array_equal(out["OUTPUT0"], a + b)
        np.testing.assert_array_equal(out["OUTPUT1"], a - b)
        assert out["OUTPUT0"].dtype == np.float32
        assert h.model.out_dtypes == {"OUTPUT0": np.float32, "OUTPUT1": np.float32}
        only = h.infer({"INPUT0": a, "INPUT1": b}, requested_outputs=["OUTPUT1"])
        assert list(only) == ["OUTPUT1"]
        with pytest.raises(TritonRequestError) as e:
            h.infer({"INPUT0": a})
        assert e.value.code == "INVALID_ARG"
    assert h.model.finalized is True


def test_auto_complete_fills_the_config():
    with ModelHarness(EXAMPLES / "auto_complete") as h:
        cfg = h.config
        assert cfg["max_batch_size"] == 4
        assert cfg["dynamic_batching"]["preferred_batch_size"] == [4]
        assert [(i["name"], i["data_type"], i["dims"]) for i in cfg["input"]] == [
            ("INPUT0", "TYPE_FP32", [4]),
            ("INPUT1", "TYPE_FP32", [4]),
        ]
        assert [(o["name"], o["data_type"], o["dims"]) for o in cfg["output"]] == [
            ("OUTPUT0", "TYPE_FP32", [4]),
            ("OUTPUT1", "TYPE_FP32", [4]),
        ]
        assert cfg["input"][0]["optional"] is False
        x = np.arange(8, dtype=np.float32).reshape(2, 4)
        out = h.infer({"INPUT0": x, "INPUT1": x})
        np.testing.assert_array_equal(out["OUTPUT0"], 2 * x)
        with pytest.raises(TritonRequestError, match="batch-size must be <= 4"):
            h.infer({"INPUT0": np.ones((5, 4), np.float32), "INPUT1": np.ones((5, 4), np.float32)})


def test_auto_complete_can_be_disabled():
    with ModelHarness(EXAMPLES / "auto_complete", auto_complete=False) as h:
        assert h.config["input"] == [] and h.config["max_batch_size"] == 0
        assert "dynamic_batching" not in h.config


def test_repeat_streams_each_element():
    with ModelHarness(EXAMPLES / "repeat") as h:
        assert h.decoupled is True
        out = h.infer_stream({"IN": np.array([4, 2, 0, 1], np.int32)})
        assert [o["OUT"].tolist() for o in out] == [[4], [2], [0], [1]]
        assert [o["IDX"].tolist() for o in out] == [[0], [1], [2], [3]]
        delayed = h.infer_stream(
            {
                "IN": np.array([7], np.int32),
                "DELAY": np.array([1], np.uint32),
                "WAIT": np.array([1], np.uint32),
            }
        )
        assert [o["OUT"].tolist() for o in delayed] == [[7]]
        assert h.infer_stream({"IN": np.array([], np.int32)}) == []
        with pytest.raises(TritonRequestError, match="DELAY must have as many elements"):
            h.infer_stream({"IN": np.array([1, 2], np.int32), "DELAY": np.array([1], np.uint32)})


def test_repeat_stops_when_cancelled():
    with ModelHarness(EXAMPLES / "repeat") as h:
        parts = h.infer_stream({"IN": np.array([1, 2, 3], np.int32)}, cancel=True, errors="return")
    # the client sees its own CANCELLED; the model stopped without sending a part
    assert [(p.code, p.model_result) for p in parts] == [("CANCELLED", [])]


def test_square_sends_n_responses():
    with ModelHarness(EXAMPLES / "square") as h:
        out = h.infer_stream({"IN": np.array([3], np.int32)})
        assert [o["OUT"].tolist() for o in out] == [[9], [9], [9]]
        assert h.infer_stream({"IN": np.array([0], np.int32)}) == []
        with pytest.raises(TritonRequestError) as e:
            h.infer_stream({"IN": np.array([-1], np.int32)})
        assert (e.value.code, e.value.message) == ("INVALID_ARG", "IN must be >= 0, got -1")
