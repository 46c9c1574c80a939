"""EnsembleHarness on a two-step ensemble of small tritonpy models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.testing import EnsembleHarness, HarnessError

STEP = """
import numpy as np
import tritonpy as tp


class Step(tp.Model):
    inputs = {{"X": tp.Tensor("FP32", [2])}}
    outputs = {{"Y": tp.Tensor("FP32", [2])}}
    max_batch_size = 8

    def infer(self, X):
        if (X < 0).any():
            raise tp.InputError("input 'X': expected non-negative values")
        return {{"Y": X {op}}}


TritonPythonModel = Step
"""

ENSEMBLE = """
name: "chain"
platform: "ensemble"
max_batch_size: 8
input [{ name: "IN" data_type: TYPE_FP32 dims: [2] }]
output [{ name: "OUT" data_type: TYPE_FP32 dims: [2] }]
ensemble_scheduling { step [
  { model_name: "add_one" model_version: -1
    input_map { key: "X" value: "doubled" } output_map { key: "Y" value: "OUT" } },
  { model_name: "double" model_version: -1
    input_map { key: "X" value: "IN" } output_map { key: "Y" value: "doubled" } }
] }
"""


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    for name, op in (("double", "* 2"), ("add_one", "+ 1")):
        (tmp_path / name / "1").mkdir(parents=True)
        (tmp_path / name / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
        (tmp_path / name / "1" / "model.py").write_text(STEP.format(op=op))
    (tmp_path / "chain" / "1").mkdir(parents=True)
    (tmp_path / "chain" / "config.pbtxt").write_text(ENSEMBLE)
    return tmp_path


def test_steps_run_in_dependency_order_not_file_order(repository: Path) -> None:
    with EnsembleHarness(repository, "chain") as chain:
        out = chain.infer({"IN": np.array([[1, 2]], np.float32)})
        assert sorted(chain.members) == ["add_one", "double"]
    assert out["OUT"].tolist() == [[3.0, 5.0]]


def test_a_failing_request_stops_at_its_step_and_the_others_go_on(repository: Path) -> None:
    with EnsembleHarness(repository, "chain") as chain:
        bad, good = chain.infer_requests(
            [{"IN": np.array([[-1, 0]], np.float32)}, {"IN": np.array([[0, 1]], np.float32)}]
        )
        with pytest.raises(TritonRequestError):
            chain.infer({"IN": np.array([[-1, -1]], np.float32)})
    assert isinstance(bad, TritonRequestError) and bad.code == "INVALID_ARG"
    assert not isinstance(good, TritonRequestError) and good["OUT"].tolist() == [[1.0, 3.0]]


def test_only_ensembles_are_accepted(repository: Path) -> None:
    with pytest.raises(HarnessError, match="'double' is not an ensemble"):
        EnsembleHarness(repository, "double")
    with pytest.raises(HarnessError, match="not found"):
        EnsembleHarness(repository, "absent")
