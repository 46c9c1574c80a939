"""The online_normalizer template under the fake pb_utils: every sequence is normalised by its
own running statistics, interleaved with others or batched with them in one execute(), and a
sequence left open is freed after its idle timeout."""

import math
from pathlib import Path

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness, fake_pb_utils, parse_config_pbtxt

MODEL_DIR = Path(__file__).resolve().parents[1]
START, END = 1, 2
STREAM = [[1.0, 10.0], [3.0, 10.0], [2.0, 40.0], [6.0, 20.0], [8.0, 30.0]]


def expected(values, epsilon=1e-8, clip=10.0):
    """Each value normalised by the mean and (population) variance of the values up to it."""
    values = np.asarray(values, np.float64)
    rows = []
    for index, value in enumerate(values):
        seen = values[: index + 1]
        rows.append((value - seen.mean(0)) / np.sqrt(seen.var(0) + epsilon))
    return np.clip(rows, -clip, clip) if clip else np.array(rows)


def config(**parameters):
    result = parse_config_pbtxt((MODEL_DIR / "config.pbtxt").read_text())
    for key, value in parameters.items():
        result["parameters"][key] = {"string_value": value}
    return result


def normalize(harness, sequence, values):
    """One whole sequence (START on the first value, END on the last): the normalised rows."""
    with harness.sequence(sequence) as seq:
        outputs = [
            seq.send(VALUE=[value], end=i == len(values) - 1) for i, value in enumerate(values)
        ]
    assert [int(out["COUNT"][0, 0]) for out in outputs] == list(range(1, len(values) + 1))
    return np.array([out["NORMALIZED"][0] for out in outputs])


def test_the_config_schedules_it_as_an_oldest_sequence_model():
    with ModelHarness(MODEL_DIR) as harness:
        assert harness.config["max_batch_size"] == 8
        batching = harness.config["sequence_batching"]
        assert "oldest" in batching and "dynamic_batching" not in harness.config
        assert int(batching["max_sequence_idle_microseconds"]) == 60_000_000


def test_a_sequence_is_normalised_by_its_running_statistics():
    with ModelHarness(MODEL_DIR) as harness:
        rows = normalize(harness, 7, STREAM)
    np.testing.assert_allclose(rows, expected(STREAM), rtol=1e-5)
    assert rows[0].tolist() == [0.0, 0.0]  # one value: no deviation yet


def test_interleaved_sequences_keep_their_own_statistics():
    other = [[100.0, -1.0], [50.0, -3.0], [75.0, -2.0]]
    got = {7: [], "camera-2": []}
    with ModelHarness(MODEL_DIR) as harness:
        with harness.sequence(7) as first, harness.sequence("camera-2") as second:
            for index, value in enumerate(STREAM):
                got[7].append(first.send(VALUE=[value], end=index == 4)["NORMALIZED"][0])
                if index < len(other):
                    out = second.send(VALUE=[other[index]], end=index == 2)
                    got["camera-2"].append(out["NORMALIZED"][0])
    np.testing.assert_allclose(got[7], expected(STREAM), rtol=1e-5)
    np.testing.assert_allclose(got["camera-2"], expected(other), rtol=1e-5)


def test_several_sequences_in_one_execute_each_use_their_own_statistics():
    with ModelHarness(MODEL_DIR) as harness:
        first = harness.infer_requests(
            [{"VALUE": [[1.0]]}, {"VALUE": [[100.0]]}, {"VALUE": [[-5.0]]}],
            correlation_ids=[1, 2, 3],
            flags=[START, START, START],
        )
        second = harness.infer_requests(
            [{"VALUE": [[3.0]]}, {"VALUE": [[300.0]]}, {"VALUE": [[-5.0]]}],
            correlation_ids=[1, 2, 3],
            flags=[END, END, END],
        )
        assert harness.execute_calls == 2
    assert [int(out["COUNT"][0, 0]) for out in first + second] == [1, 1, 1, 2, 2, 2]
    # 1 then 3: mean 2, deviation 1, normalised 1 (100 then 300 the same, scaled); -5 twice: 0
    normalized = [float(out["NORMALIZED"][0, 0]) for out in second]
    np.testing.assert_allclose(normalized, [1.0, 1.0, 0.0], atol=1e-6)


def test_a_one_request_sequence_carries_start_and_end():
    with ModelHarness(MODEL_DIR) as harness:
        out = harness.infer({"VALUE": [[4.0]]}, correlation_id=9, flags=START | END)
        assert out["NORMALIZED"].tolist() == [[0.0]] and out["COUNT"].tolist() == [[1]]
        again = harness.infer({"VALUE": [[8.0]]}, correlation_id=9, flags=START)
        assert again["COUNT"].tolist() == [[1]]  # ended: the same id starts afresh


def test_a_sequence_left_open_is_freed_after_its_idle_timeout():
    evicted = "sequence 21 closed without END after 2 values"  # logged by end_sequence
    with ModelHarness(MODEL_DIR) as harness:
        with harness.sequence(21) as seq:
            seq.send(VALUE=[[1.0]])
            seq.send(VALUE=[[2.0]])
        harness.clock.advance(59.0)
        harness.infer({"VALUE": [[5.0]]}, correlation_id=22, flags=START | END)
        assert evicted not in [record.message for record in fake_pb_utils.log_records]
        harness.clock.advance(2.0)  # 61 s without a request: the client walked away
        harness.infer({"VALUE": [[5.0]]}, correlation_id=22, flags=START | END)
        assert evicted in [record.message for record in fake_pb_utils.log_records]
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer({"VALUE": [[3.0]]}, correlation_id=21)
        restarted = harness.infer({"VALUE": [[3.0]]}, correlation_id=21, flags=START)
    assert caught.value.code == "INVALID_ARG"
    assert "must specify the START flag" in caught.value.message
    assert restarted["COUNT"].tolist() == [[1]]  # the old statistics are gone


def test_a_vector_of_another_length_fails_that_request_alone():
    with ModelHarness(MODEL_DIR) as harness:
        with harness.sequence(5) as seq:
            seq.send(VALUE=[[1.0, 2.0]])
            with pytest.raises(tp.TritonRequestError) as caught:
                seq.send(VALUE=[[1.0, 2.0, 3.0]])
            last = seq.send(VALUE=[[3.0, 4.0]], end=True)
    assert caught.value.code == "INVALID_ARG"
    assert "input 'VALUE' has 3 features but sequence 5 started with 2" in caught.value.message
    assert last["COUNT"].tolist() == [[2]]  # the sequence went on


# one outlier after 149 equal values lies sqrt(149) = 12.2 deviations away
@pytest.mark.parametrize(("clip", "limit"), [(None, 10.0), ("2", 2.0), ("0", math.sqrt(149))])
def test_clip_bounds_the_normalised_values(clip, limit):
    values = [[0.0]] * 149 + [[1000.0]]
    parameters = {} if clip is None else {"clip": clip}
    with ModelHarness(MODEL_DIR, config=config(**parameters)) as harness:
        rows = normalize(harness, 11, values)
    assert rows[-1][0] == pytest.approx(limit, rel=1e-5)


def test_a_negative_epsilon_fails_the_load():
    with pytest.raises(tp.DeclarationError, match="epsilon"):
        ModelHarness(MODEL_DIR, config=config(epsilon="-1"))
