"""config.pbtxt of a stateful model: ``tritonpy config`` writes ``sequence_batching`` from
``sequence = tp.Sequence(...)`` (Triton's auto-complete cannot add it), keeps what the user
wrote in it (control inputs, queue delays), replaces a dynamic batcher, and ``--check`` fails
on a file that schedules the model otherwise."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Optional

import pytest

from tritonpy.cli import main
from tritonpy.config import load_config
from tritonpy.config._declarations import sync_config

SOURCE = textwrap.dedent(
    """\
    import numpy as np
    import tritonpy as tp


    class RunningSum(tp.Model):
        inputs = {"VALUE": tp.Tensor("INT32", [1])}
        outputs = {"SUM": tp.Tensor("INT32", [1])}
        max_batch_size = 8
        sequence = tp.Sequence(STRATEGY)

        def start_sequence(self, sequence):
            return {"sum": 0}

        def infer(self, VALUE, sequence):
            sequence.state["sum"] += int(VALUE.sum())
            return {"SUM": np.array([[sequence.state["sum"]]], np.int32)}


    TritonPythonModel = RunningSum
    """
)
OLDEST = 'strategy="oldest", idle_timeout_s=60, max_candidate_sequences=4'


def make_model(root: Path, declaration: str = OLDEST, config: Optional[str] = None) -> Path:
    model_dir = root / "running_sum"
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "1" / "model.py").write_text(SOURCE.replace("STRATEGY", declaration))
    (model_dir / "config.pbtxt").write_text(
        config if config is not None else 'name: "running_sum"\nbackend: "python"\n'
    )
    return model_dir


def test_config_writes_sequence_batching_from_the_declaration(tmp_path: Path) -> None:
    model_dir = make_model(tmp_path)
    # auto-complete cannot add sequence_batching: the two-line file contradicts the class
    assert sync_config(model_dir, check=True).contradicts
    sync_config(model_dir)
    config = load_config(model_dir / "config.pbtxt")
    batching = config.sequence_batching
    assert batching.WhichOneof("strategy_choice") == "oldest"
    assert batching.oldest.max_candidate_sequences == 4
    assert batching.max_sequence_idle_microseconds == 60_000_000
    assert not batching.iterative_sequence
    assert not config.HasField("dynamic_batching")
    assert config.max_batch_size == 8
    assert not sync_config(model_dir, check=True).changed


def test_a_dynamic_batcher_is_replaced_and_user_fields_are_kept(tmp_path: Path) -> None:
    written = textwrap.dedent(
        """\
        name: "running_sum"
        backend: "python"
        max_batch_size: 4
        dynamic_batching { max_queue_delay_microseconds: 500 }
        """
    )
    model_dir = make_model(tmp_path, config=written)
    sync_config(model_dir)
    config = load_config(model_dir / "config.pbtxt")
    assert config.WhichOneof("scheduling_choice") == "sequence_batching"
    assert config.max_batch_size == 4

    kept = textwrap.dedent(
        """\
        name: "running_sum"
        backend: "python"
        max_batch_size: 8
        sequence_batching {
          direct { max_queue_delay_microseconds: 100 }
          max_sequence_idle_microseconds: 5000000
          control_input [ { name: "START", control [ { kind: CONTROL_SEQUENCE_START,
                                                        int32_false_true: [ 0, 1 ] } ] } ]
        }
        """
    )
    (model_dir / "config.pbtxt").write_text(kept)
    sync_config(model_dir)
    batching = load_config(model_dir / "config.pbtxt").sequence_batching
    assert batching.WhichOneof("strategy_choice") == "oldest"  # the declared strategy
    assert batching.max_sequence_idle_microseconds == 60_000_000
    assert [entry.name for entry in batching.control_input] == ["START"]  # the user's


def test_direct_keeps_its_own_settings(tmp_path: Path) -> None:
    written = textwrap.dedent(
        """\
        name: "running_sum"
        backend: "python"
        max_batch_size: 8
        sequence_batching {
          direct { max_queue_delay_microseconds: 100 }
          max_sequence_idle_microseconds: 2000000
        }
        """
    )
    model_dir = make_model(tmp_path, 'strategy="direct", idle_timeout_s=2', written)
    assert not sync_config(model_dir, check=True).contradicts  # auto-complete adds the rest
    written = written.replace("2000000", "1000000")
    (model_dir / "config.pbtxt").write_text(written)
    sync_config(model_dir)
    batching = load_config(model_dir / "config.pbtxt").sequence_batching
    assert batching.max_sequence_idle_microseconds == 2_000_000
    assert batching.direct.max_queue_delay_microseconds == 100


ITERATIVE = textwrap.dedent(
    """\
    import numpy as np
    import tritonpy as tp


    class Countdown(tp.Model):
        inputs = {"IN": tp.Tensor("INT32", [1])}
        outputs = {"OUT": tp.Tensor("INT32", [1])}
        sequence = tp.Sequence(iterative=True)

        def infer(self, IN):
            for left in range(int(IN[0]) - 1, -1, -1):
                yield {"OUT": np.array([left], np.int32)}


    TritonPythonModel = Countdown
    """
)


def test_an_iterative_model_gets_iterative_sequence_and_the_decoupled_policy(
    tmp_path: Path,
) -> None:
    model_dir = tmp_path / "countdown"
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "1" / "model.py").write_text(ITERATIVE)
    sync_config(model_dir)
    config = load_config(model_dir / "config.pbtxt")
    assert config.sequence_batching.iterative_sequence
    assert config.sequence_batching.WhichOneof("strategy_choice") == "direct"
    assert config.model_transaction_policy.decoupled
    assert config.max_batch_size == 0


@pytest.mark.parametrize(
    "batching",
    [
        "sequence_batching { direct { } max_sequence_idle_microseconds: 60000000 }",
        "sequence_batching { oldest { max_candidate_sequences: 4 } }",
        "dynamic_batching { }",
    ],
)
def test_check_fails_on_another_schedule(
    batching: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = f'name: "running_sum"\nbackend: "python"\nmax_batch_size: 8\n{batching}\n'
    model_dir = make_model(tmp_path, config=written)
    assert main(["config", "--check", str(model_dir)]) == 1
    assert "sequence_batching" in capsys.readouterr().out
    assert main(["config", str(model_dir)]) == 0
    assert main(["config", "--check", str(model_dir)]) == 0
