"""tune's companions: the sibling models a model needs (ensemble members at any depth, BLS
callees named in its code), and nothing else of the repository."""

from __future__ import annotations

from pathlib import Path

from tritonpy.perf._companions import companions, ensemble_members

ENSEMBLE = """name: "pipe"
platform: "ensemble"
ensemble_scheduling { step [
  { model_name: "router" model_version: -1 input_map { key: "X" value: "X" }
    output_map { key: "Y" value: "Y" } }
] }
"""
ROUTER = """import triton_python_backend_utils as pb_utils


def call(x):
    target = "scale" if x else "negate"
    return pb_utils.InferenceRequest(model_name=target, inputs=[], requested_output_names=[])
"""


def make(repo: Path, name: str, config: str = "", code: str = "") -> Path:
    (repo / name / "1").mkdir(parents=True)
    (repo / name / "config.pbtxt").write_text(config or f'name: "{name}"\nbackend: "python"\n')
    (repo / name / "1" / "model.py").write_text(code or "print('plain')\n")
    return repo / name


def test_members_and_callees_transitively(tmp_path: Path) -> None:
    pipe = make(tmp_path, "pipe", ENSEMBLE)
    (pipe / "1" / "model.py").unlink()
    router = make(tmp_path, "router", code=ROUTER)
    for name in ("scale", "negate", "unrelated"):
        make(tmp_path, name)
    assert [p.name for p in companions(pipe)] == ["negate", "router", "scale"]
    assert [p.name for p in companions(router)] == ["negate", "scale"]
    assert companions(tmp_path / "scale") == []
    assert ensemble_members(pipe) == ["router"] and ensemble_members(router) == []


def test_a_model_that_does_not_parse_needs_nothing(tmp_path: Path) -> None:
    broken = make(tmp_path, "broken", code="def (:\n")
    make(tmp_path, "scale")
    assert companions(broken) == []
