"""tritonpy export for the releases users deploy (24.11, 25.08, 26.02, 26.07) of repositories
whose environments run Python 3.10 to 3.13: the stub decision (needed iff the environment's
Python is not the release container's, 3.12 on all four: 24.11 already), the numpy decision
(numpy 2 in an environment works from 24.11; the container's own Python keeps numpy<2) and the
names 25.08 refuses, each by the release table and citing it.

Environments are the minimal layouts of test_export.py (the check reads names, not contents).
Where a stub is needed, stubs come only from the stub cache (empty here) and the wheel (24.10
stubs only): none can be placed, and the export must say so with the stub tooling's own way
out (Dockerfile.stub, build_stub.sh)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest
from test_export import MODEL, env_archive

import tritonpy.stubs
from tritonpy._tooling.release_facts import facts_for
from tritonpy._tooling.releases import TritonRelease
from tritonpy.envs import stub_decision
from tritonpy.envs._runtime import runtime_requirements
from tritonpy.export import ExportError, export_repository

RELEASES = ["24.11", "25.08", "26.02", "26.07"]
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
ENV = 'parameters { key: "EXECUTION_ENV_PATH" value { string_value: "%s" } }\n'


def _repo(root: Path, python: str, *, name: str = "double", numpy: str = "1.26.4") -> Path:
    model = root / name
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(MODEL)
    env_archive(model / "env.tar.gz", python=python, numpy=numpy)
    (model / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "python"\n' + ENV % "$$TRITON_MODEL_DIRECTORY/env.tar.gz"
    )
    return root


@pytest.fixture
def stub_calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> List[Dict[str, Any]]:
    """Record every stub request; serve it from the (empty) cache and the wheel only, so
    that no native or Docker build starts."""
    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    calls: List[Dict[str, Any]] = []
    real = tritonpy.stubs.provision_stub

    def provision(model_dir: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(model_dir, sources=("cache", "wheel"), **kwargs)

    monkeypatch.setattr(tritonpy.stubs, "provision_stub", provision)
    return calls


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("release", RELEASES)
def test_stub_decision_by_the_table(release: str, python: str) -> None:
    decision = stub_decision(python, TritonRelease.parse(release))
    assert decision.container_python == "3.12" == facts_for(release).python
    assert decision.needed is (python != "3.12")
    assert facts_for(release).cites("python") in decision.reason
    assert f"release {release} container" in decision.reason


@pytest.mark.parametrize("python", ["3.10", "3.11", "3.13"])
@pytest.mark.parametrize("release", RELEASES)
def test_a_stub_is_needed_and_the_export_says_none_can_be_placed(
    tmp_path: Path, stub_calls: List[Dict[str, Any]], release: str, python: str
) -> None:
    repo = _repo(tmp_path / "repo", python)
    with pytest.raises(ExportError) as caught:
        export_repository(repo, tmp_path / "deploy", triton_version=release, pack=False)
    message = str(caught.value)
    assert [(call["triton_version"], call["python"]) for call in stub_calls] == [(release, python)]
    assert message.startswith("model 'double': model.py imports tritonpy")
    assert (
        f"environment Python {python} differs from the Python 3.12 of the release {release} "
        f"container ({facts_for(release).cites('python')}): it needs its own "
        "triton_python_backend_stub, and none could be placed here" in message
    )
    # the stub tooling's reasons and its ways out, whole
    assert f"no triton_python_backend_stub for Python {python}, release {release}" in message
    assert "Dockerfile.stub" in message and "build_stub.sh" in message
    assert not (tmp_path / "deploy").exists() or not any((tmp_path / "deploy").iterdir())


@pytest.mark.parametrize("release", RELEASES)
def test_the_containers_python_needs_no_stub_and_numpy_2_is_kept(
    tmp_path: Path, stub_calls: List[Dict[str, Any]], release: str
) -> None:
    repo = _repo(tmp_path / "repo", "3.12", numpy="2.1.3")
    result = export_repository(repo, tmp_path / "deploy", triton_version=release, pack=False)
    double = result.models[0]
    assert (double.environment, double.python, double.stub) == ("kept", "3.12", None)
    assert stub_calls == []
    assert not (result.repository / "double" / "triton_python_backend_stub").exists()
    # numpy: an environment may hold numpy 2 (the stub's pybind11 handles BYTES with it) ...
    facts = facts_for(release)
    assert facts.numpy2_bytes_ok and runtime_requirements(TritonRelease.parse(release)) == [
        "numpy>=1.21"
    ]
    # ... while the install into the container's own Python keeps its numpy<2, cited
    dockerfile = (tmp_path / "deploy" / "Dockerfile").read_text()
    assert "'tritonclient[grpc]' 'numpy<2'" in dockerfile
    assert (
        f"# numpy<2: the release {release} container installs numpy<2 "
        f"({facts.cites('numpy_pin')})." in dockerfile
    )


def test_before_24_11_environments_keep_numpy_below_2() -> None:
    assert runtime_requirements(TritonRelease.parse("24.10")) == ["numpy<2"]
    assert not facts_for("24.10").numpy2_bytes_ok


@pytest.mark.parametrize("release", ["25.08", "26.02", "26.07"])
def test_shell_characters_in_names_are_refused_before_anything_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub_calls: List[Dict[str, Any]], release: str
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing may be built for a refused name")

    monkeypatch.setattr("tritonpy.envs._envcache.pack_env", refuse)
    repo = _repo(tmp_path / "repo", "3.12", name="double;rm")
    grouped = repo / "grouped"
    (grouped / "1").mkdir(parents=True)
    (grouped / "1" / "model.py").write_text(MODEL)
    (grouped / "config.pbtxt").write_text(
        'name: "grouped"\nbackend: "python"\ninstance_group [{ name: "cpu(1)" kind: KIND_CPU }]\n'
    )
    with pytest.raises(ExportError) as caught:
        export_repository(repo, tmp_path / "deploy", triton_version=release)
    message = str(caught.value)
    where = facts_for(release).cites("refuses_shell_names")
    assert message.startswith("2 problems found before anything was copied or built")
    assert (
        f"model 'double;rm': model name 'double;rm' holds ;: Triton {release} refuses the stub "
        "of a Python model whose name holds any of" in message
    )
    assert f"model 'grouped': instance group name 'cpu(1)' holds ( ): Triton {release}" in message
    assert message.count(f"({where})") == 2
    assert stub_calls == [] and not (tmp_path / "deploy").exists()


def test_shell_characters_pass_before_25_08() -> None:
    from tritonpy.envs import model_name_problems

    assert model_name_problems("double;rm", None, TritonRelease.parse("24.11")) == []
    assert model_name_problems("double_rm", None, TritonRelease.parse("26.07")) == []
    # the backslash is in python_backend's INVALID_CHARS too
    assert model_name_problems("a\\b", None, TritonRelease.parse("25.08"))


def test_a_packed_environment_of_another_python_fails_clearly_without_a_stub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub_calls: List[Dict[str, Any]]
) -> None:
    """The environment export packs (a spec pinning this machine's Python, 3.11 or so) on
    a release whose container runs another Python: the stub decision again, after the build."""
    import tarfile
    from types import SimpleNamespace

    from mini_envs import XY, FakeBuilds, mini_env

    # a release whose container Python is not this machine's: 26.07 (3.12), else 24.10 (3.10)
    release = "26.07" if XY != "3.12" else "24.10"
    container = facts_for(release).python

    def build(model_dir: Path, **options: Any) -> Any:
        # a mini environment without the empty libpython of mini_env's layout: 26.07 puts
        # <env>/lib first on LD_LIBRARY_PATH, where it would shadow the real one
        env = mini_env(tmp_path / "sources" / Path(model_dir).name)
        (env / "lib" / f"libpython{XY}.so.1.0").unlink()
        archive = Path(model_dir) / f"{options['name']}_py{XY}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(env, arcname=".")
        return SimpleNamespace(archive=archive, python=XY, builder="local")

    FakeBuilds(tmp_path / "unused").install(monkeypatch)
    monkeypatch.setattr("tritonpy.envs._envcache.pack_env", build)
    model = tmp_path / "repo" / "double"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(MODEL)
    (model / "config.pbtxt").write_text('name: "double"\nbackend: "python"\n')
    (model / "environment.yml").write_text(
        f"name: e\ndependencies:\n  - python={XY}\n  - pip\n  - pip:\n    - numpy<2\n"
    )
    with pytest.raises(ExportError) as caught:
        export_repository(tmp_path / "repo", tmp_path / "deploy", triton_version=release)
    message = str(caught.value)
    assert [(call["triton_version"], call["python"]) for call in stub_calls] == [(release, XY)]
    assert message.startswith(
        f"model 'double': environment Python {XY} differs from the Python {container} of the "
        f"release {release} container"
    )
    assert "none could be placed here" in message and "Dockerfile.stub" in message
    assert not (tmp_path / "deploy" / "model_repository").exists()
