"""A failing user test shows the user's frames, not the testing kit's: the kit's modules hide
their frames from pytest (``__tracebackhide__``) and errors read with their public class
(``tritonpy.TritonRequestError: ...``, never ``tritonpy._runtime.errors...``).

Each case runs pytest in a subprocess on a small user test file, as a user's run would."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict

import pytest

USER_TESTS = '''
import numpy as np
import tritonpy as tp
from tritonpy.testing import ModelHarness


class Picky(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}

    def infer(self, X):
        if (X < 0).any():
            raise tp.InputError("input 'X': expected values >= 0", input_name="X")
        return {"Y": X}


class RawCrash:
    """A plain pb_utils model whose execute fails."""

    def execute(self, requests):
        return crash_here(requests)


def crash_here(requests):
    raise ValueError("the user's own bug")


RAW_CONFIG = {
    "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [-1]}],
    "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": [-1]}],
}


def test_refused_by_the_model():
    with ModelHarness(Picky) as harness:
        harness.infer({"X": np.array([-1.0], np.float32)})


def test_refused_by_the_server_rules():
    with ModelHarness(Picky) as harness:
        harness.infer({"X": np.array([1], np.int64)})


def test_refused_on_a_stream():
    with ModelHarness(Picky) as harness:
        harness.infer_stream({"X": np.array([-1.0], np.float32)})


def test_load_error(tmp_path):
    ModelHarness(tmp_path / "no_such_model")


def test_model_bug():
    with ModelHarness(RawCrash, config=RAW_CONFIG) as harness:
        harness.infer({"X": np.array([1.0], np.float32)})
'''


@pytest.fixture(scope="module")
def failures(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    """pytest's report of each failing user test, by test name."""
    where = tmp_path_factory.mktemp("user_project")
    (where / "pytest.ini").write_text("[pytest]\n")
    (where / "test_user.py").write_text(textwrap.dedent(USER_TESTS))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=long", "-q"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    sections = re.split(r"^_{3,} (test_\w+) _{3,}$", run.stdout, flags=re.MULTILINE)
    return dict(zip(sections[1::2], sections[2::2]))


KIT = str(Path(__file__).resolve().parents[2] / "tritonpy" / "testing")

CASES = {
    "test_refused_by_the_model": "tritonpy.TritonRequestError: [INVALID_ARG]",
    "test_refused_by_the_server_rules": "tritonpy.TritonRequestError: [INVALID_ARG]",
    "test_refused_on_a_stream": "tritonpy.TritonRequestError: [INVALID_ARG]",
    "test_load_error": "tritonpy.testing.ModelLoadError: model directory",
    "test_model_bug": "tritonpy.TritonRequestError: [INTERNAL]",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_failing_user_test_shows_the_users_frames(name: str, failures: Dict[str, str]) -> None:
    report = failures[name]
    # the exception line names the public class
    assert re.search(r"^E +" + re.escape(CASES[name]), report, re.MULTILINE), report
    # the user's test line is shown, none of the kit's frames
    assert f"def {name}(" in report, report
    assert KIT not in report and "tritonpy/testing/" not in report, report
    assert "tritonpy._runtime" not in report and "_tooling.errors" not in report, report


def test_the_model_bug_shows_where_the_user_code_failed(failures: Dict[str, str]) -> None:
    report = failures["test_model_bug"]
    # the cause, ValueError, comes with the user's frames: execute, then crash_here
    assert re.search(r"^E +ValueError: the user's own bug", report, re.MULTILINE), report
    assert "return crash_here(requests)" in report and 'raise ValueError("the user' in report
    assert KIT not in report, report
