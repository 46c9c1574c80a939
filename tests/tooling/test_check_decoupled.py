"""tritonpy check and streaming models: a two-line config.pbtxt is complete (auto-complete
sets the decoupled policy a generator infer implies); an explicit contradiction is TP207."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MODEL = """
import tritonpy as tp


class Words(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"WORD": tp.Text()}

    def infer(self, TEXT):
        for word in TEXT.split():
            yield {"WORD": word}


TritonPythonModel = Words
"""


def make_model(root: Path, policy: str) -> Path:
    model = root / "repo" / "words"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(MODEL)
    (model / "config.pbtxt").write_text(f'name: "words"\nbackend: "python"\n{policy}')
    return root / "repo"


def check(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tritonpy", "check", str(repo)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_two_line_config_of_a_streaming_model_is_complete(tmp_path: Path) -> None:
    result = check(make_model(tmp_path, ""))
    assert "TP207" not in result.stdout + result.stderr
    assert result.returncode == 0, result.stdout + result.stderr


def test_decoupled_false_in_the_config_contradicts_a_generator_infer(tmp_path: Path) -> None:
    result = check(make_model(tmp_path, "model_transaction_policy { decoupled: false }\n"))
    assert result.returncode != 0
    assert "TP207" in result.stdout + result.stderr
