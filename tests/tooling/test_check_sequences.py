"""tritonpy check's sequence rules (TP7xx, tritonpy/check/_sequences.py): each against its
golden repositories (tests/golden/check/<CODE>/fail and .../pass) with the exact message, and
a tritonpy model imported inside its own environment judged by the declarations read there."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Dict, List

import pytest

from tritonpy.check import RULES, check_repository
from tritonpy.check._context import ModelEntry
from tritonpy.check._envimport import stand_in
from tritonpy.check._sequences import CODES, check_sequences, declared_sequence
from tritonpy.envs import EnvImport

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "check"

EXPECTED: Dict[str, List[str]] = {
    "TP701": [
        (
            "sums/config.pbtxt [sequence_batching.control_input]: warning TP701: config.pbtxt "
            "names control inputs ['START', 'CORRID'] that RunningSum in sums/1/model.py does "
            "not declare: the server adds them to every request and tritonpy drops them (infer "
            "cannot read them); tritonpy reads the correlation id and the START/END flags from "
            "each request itself (sequence.id, sequence.start, sequence.end)\n    fix: remove "
            "them from control_input: infer's sequence argument gives the id and the flags (a "
            "model that needs the control tensors themselves is a pb_utils model)"
        ),
    ],
    "TP702": [
        (
            "sums/config.pbtxt [sequence_batching.state]: error TP702: sequence_batching "
            "declares implicit state ['INPUT_STATE'], which the Python backend does not support "
            "(Triton implements it for the ONNX Runtime, TensorRT and PyTorch backends only; "
            "server issues 8006 and 3580): the model never receives an updated state\n    fix: "
            "remove sequence_batching.state and keep the state in the model per correlation id: "
            "a tp.Model declares sequence = tp.Sequence(...) and keeps it in sequence.state "
            "(docs/stateful.md); a pb_utils model keeps a dict keyed by "
            "request.correlation_id(), freed when request.flags() & 2 (END)"
        ),
    ],
    "TP703": [
        (
            "sums/config.pbtxt [sequence_batching.max_sequence_idle_microseconds]: error TP703: "
            "config.pbtxt's idle timeout is 5000000 us (5 s) but RunningSum in sums/1/model.py "
            "evicts a sequence's state after tp.Sequence(idle_timeout_s=60): the model refuses "
            "to load, since the server would end an idle sequence first and refuse its next "
            "request without START, while tritonpy kept its state\n    fix: set "
            "max_sequence_idle_microseconds: 60000000 (run 'tritonpy config REPO/sums'), or "
            "change idle_timeout_s on the class"
        ),
    ],
    "TP704": [
        (
            "sums/config.pbtxt [sequence_batching.oldest]: warning TP704: the oldest strategy "
            "batches requests of several sequences along the batch dimension, but "
            "max_batch_size is 0: every execute() gets one request\n    fix: set max_batch_size "
            "> 0 (on a tp.Model: max_batch_size = N), or use the direct strategy"
        ),
    ],
    "TP705": [
        (
            "sums/config.pbtxt [sequence_batching.oldest.preserve_ordering]: warning TP705: a "
            "decoupled model under the oldest strategy without preserve_ordering: a decoupled "
            "model may release a request before its last response, the sequence's next request "
            "then runs, and their responses can interleave\n    fix: set preserve_ordering: "
            "true in oldest { } (a tp.Model: tp.Sequence(strategy='oldest', "
            "preserve_ordering=True)) where the order of a sequence's responses matters"
        ),
    ],
    "TP706": [
        (
            "sums/config.pbtxt [sequence_batching]: error TP706: RunningSum in sums/1/model.py "
            "declares tp.Sequence(strategy='oldest') but config.pbtxt has no sequence_batching: "
            "auto-complete cannot add sequence_batching (Triton's auto-complete API has no "
            "setter for it), so the model refuses to load\n    fix: run 'tritonpy config "
            "REPO/sums' to write sequence_batching { oldest { } max_sequence_idle_microseconds: "
            "60000000 }"
        ),
    ],
    "TP707": [
        (
            "sums/config.pbtxt [sequence_batching]: error TP707: config.pbtxt sets both "
            "dynamic_batching and sequence_batching: a model has one scheduler, and Triton "
            "refuses the configuration\n    fix: keep sequence_batching for a stateful model "
            "(its oldest strategy batches requests of several sequences) and remove "
            "dynamic_batching; keep dynamic_batching alone for a stateless one"
        ),
    ],
    "TP708": [
        (
            "sums/config.pbtxt [sequence_batching]: warning TP708: config.pbtxt has "
            "sequence_batching but Echo in sums/1/model.py declares no sequence = "
            "tp.Sequence(...): infer() never sees the correlation id or the START/END flags and "
            "no state is kept per sequence (each request is answered alone)\n    fix: declare "
            "sequence = tp.Sequence(strategy='oldest', idle_timeout_s=60) on the class and take "
            "an argument named 'sequence' in infer (docs/stateful.md), or remove "
            "sequence_batching"
        ),
    ],
    "TP709": [
        (
            "sums/config.pbtxt [sequence_batching]: error TP709: config.pbtxt's "
            "sequence_batching has strategy 'direct' (declared 'oldest'), which disagrees with "
            "the tp.Sequence of RunningSum in sums/1/model.py: the model refuses to load\n    "
            "fix: make them agree: change the declaration, or run 'tritonpy config REPO/sums' "
            "to write the declared sequence_batching"
        ),
    ],
    "TP710": [
        (
            "sums/config.pbtxt [sequence_batching.control_input[0]]: error TP710: control input "
            "'START' is also an input of the model: a client would have to send it, though the "
            "sequence batcher supplies it from the request's sequence flags and correlation "
            "id\n    fix: remove 'START' from the inputs (a tp.Model: from inputs = {...}; "
            "tritonpy reads the flags and the id itself: sequence.start, sequence.end, "
            "sequence.id)"
        ),
    ],
    "TP711": [
        (
            "sums/config.pbtxt [sequence_batching.oldest.preferred_batch_size]: error TP711: "
            "preferred_batch_size [16] is not between 1 and max_batch_size 8; Triton refuses "
            "the configuration\n    fix: use preferred sizes between 1 and 8, or leave "
            "preferred_batch_size out"
        ),
    ],
    "TP712": [
        (
            "sums/config.pbtxt [sequence_batching.control_input[0].control.data_type]: error "
            "TP712: control 'CORRID' (CONTROL_SEQUENCE_CORRID) is TYPE_FP32; Triton refuses the "
            "configuration (allowed: TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32, "
            "TYPE_STRING)\n    fix: use TYPE_UINT64 for numeric ids (TYPE_STRING for string "
            "ids)"
        ),
    ],
}


def golden(code: str, kind: str, tmp_path: Path) -> Path:
    target = tmp_path / f"{code}_{kind}"
    shutil.copytree(GOLDEN / code / kind, target)
    return target


def renders(report: object, code: str) -> List[str]:
    return [f.render() for f in report.findings if f.code == code]  # type: ignore[attr-defined]


@pytest.mark.parametrize("code", CODES)
def test_sequence_rule_fails_with_the_exact_message(code: str, tmp_path: Path) -> None:
    report = check_repository(golden(code, "fail", tmp_path))
    assert renders(report, code) == EXPECTED[code]


@pytest.mark.parametrize("code", CODES)
def test_sequence_rule_passes_on_the_fixed_repository(code: str) -> None:
    report = check_repository(GOLDEN / code / "pass")
    assert [f.render() for f in report.findings] == []
    assert report.exit_code(strict=True) == 0


def test_every_sequence_rule_is_registered_and_has_its_expected_message() -> None:
    assert check_sequences in RULES
    assert sorted(EXPECTED) == list(CODES)


def _config(repo: Path, text: str) -> None:
    (repo / "sums" / "config.pbtxt").write_text(f'name: "sums"\nbackend: "python"\n{text}\n')


def test_a_dynamic_batcher_in_place_of_the_declared_sequence_batcher(tmp_path: Path) -> None:
    repo = golden("TP706", "fail", tmp_path)
    _config(repo, "dynamic_batching { }")
    (finding,) = [f for f in check_repository(repo).findings if f.code == "TP706"]
    assert "but config.pbtxt sets dynamic_batching in its place" in finding.message
    assert finding.fix.endswith(
        "max_sequence_idle_microseconds: 60000000 } in place of dynamic_batching"
    )


@pytest.mark.parametrize(
    ("idle", "said"),
    [
        ("", "idle timeout is 1000000 us (1 s) (unset: Triton's default)"),
        ("max_sequence_idle_microseconds: 90000000", "idle timeout is 90000000 us (90 s) but"),
    ],
)
def test_an_idle_timeout_longer_or_left_to_the_default(
    idle: str, said: str, tmp_path: Path
) -> None:
    repo = golden("TP703", "fail", tmp_path)
    _config(repo, f"sequence_batching {{ oldest {{ }} {idle} }}")
    (finding,) = [f for f in check_repository(repo).findings if f.code == "TP703"]
    assert said in finding.message
    longer = "tritonpy would evict the state first"
    assert (longer in finding.message) == ("90 s" in said)


def test_settings_the_server_follows_are_a_warning(tmp_path: Path) -> None:
    repo = golden("TP709", "fail", tmp_path)
    _config(
        repo,
        "sequence_batching { oldest { preserve_ordering: true } "
        "max_sequence_idle_microseconds: 60000000 }",
    )
    (finding,) = [f for f in check_repository(repo).findings if f.code == "TP709"]
    assert finding.severity == "warning"
    assert "preserve_ordering: true (declared preserve_ordering=False)" in finding.message
    assert finding.message.endswith("the server follows config.pbtxt")


def test_a_model_imported_in_its_environment_is_judged_by_its_declarations(
    tmp_path: Path,
) -> None:
    declared = {
        "max_batch_size": 8,
        "input": [],
        "output": [],
        "sequence_batching": {"oldest": {}, "max_sequence_idle_microseconds": 60_000_000},
    }
    found = EnvImport(
        tmp_path / "env",
        tmp_path,
        "3.10",
        defined=True,
        is_tritonpy=True,
        class_name="RunningSum",
        declared=declared,
    )
    batching = declared_sequence(ModelEntry(tmp_path, tmp_path / "sums"), stand_in(found))
    assert batching is not None
    assert batching.WhichOneof("strategy_choice") == "oldest"
    assert batching.max_sequence_idle_microseconds == 60_000_000
    found_plain = EnvImport(
        tmp_path / "env",
        tmp_path,
        "3.10",
        defined=True,
        is_tritonpy=True,
        class_name="Echo",
        declared={"max_batch_size": 8, "input": [], "output": []},
    )
    entry = ModelEntry(tmp_path, tmp_path / "echo")
    assert declared_sequence(entry, stand_in(found_plain)) is None
