"""README command 1, the main job: the digits ensemble in a real tritonserver."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonpy.demo import main, run_demo

pytestmark = pytest.mark.integration


def test_demo_serves_the_ensemble_and_classifies_held_out_digits(tmp_path: Path) -> None:
    messages: list[str] = []
    result = run_demo(tmp_path / "models", concurrency=4, progress=messages.append)
    assert result.models == [
        "digits",
        "digits_classifier",
        "digits_postprocess",
        "digits_preprocess",
    ]
    assert len(result.predictions) == 360  # every held-out digit got an answer
    assert result.accuracy >= 0.9
    # the server computes what torch computed on the same held-out digits
    assert result.accuracy == pytest.approx(result.training_accuracy, abs=0.01)
    first = result.predictions[0]
    assert len(first.labels) == 3 and first.scores == sorted(first.scores, reverse=True)
    assert any("starting tritonserver" in m for m in messages)


def test_demo_command_prints_accuracy_and_latency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["--repo", str(tmp_path / "repo"), "--limit", "40", "--protocol", "http"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "accuracy (server)    : " in out
    assert "latency per request  : p50 " in out
    assert "held-out digits      : 40 sent through 'digits' (http)" in out
