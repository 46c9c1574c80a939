"""tritonpy export: the deployable repository, its configs, environments and stubs, the
Dockerfile and Kubernetes manifests, and every refusal. Environments here are minimal layouts
(bin/activate, libpython, numpy's dist-info): the check reads names, not contents; the real
packed environment served by a real tritonserver is tests/integration/test_export_serve.py."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml

from tritonpy import __version__
from tritonpy._tooling.elf import linked_python
from tritonpy._tooling.release_facts import facts_for
from tritonpy.check import check_repository
from tritonpy.cli import main
from tritonpy.envs._selfwheel import running_tritonpy
from tritonpy.export import ExportError, export_repository
from tritonpy.export._manifests import to_yaml_documents

MODEL = """import tritonpy as tp


class Double(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}
    max_batch_size = 8

    def infer(self, X):
        return {"Y": X * 2}


TritonPythonModel = Double
"""

PLAIN = """import numpy as np


class TritonPythonModel:
    def execute(self, requests):
        return []
"""

PLAIN_CONFIG = """name: "plain"
backend: "python"
input { name: "A" data_type: TYPE_FP32 dims: [ 1 ] }
output { name: "B" data_type: TYPE_FP32 dims: [ 1 ] }
"""

ENV = 'parameters { key: "EXECUTION_ENV_PATH" value { string_value: "%s" } }\n'


def env_archive(path: Path, python: str = "3.10", numpy: str = "1.26.4") -> Path:
    """A minimal environment archive: bin/activate, lib/libpythonX.Y.so.1.0, numpy's
    dist-info, members named ./... like conda-pack's."""
    members: Dict[str, bytes] = {
        "./bin/activate": b"# activate\n",
        f"./lib/libpython{python}.so.1.0": b"",
        f"./lib/python{python}/site-packages/numpy-{numpy}.dist-info/METADATA": b"Name: numpy\n",
    }
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def make_repo(root: Path, *, env: Optional[str] = "$$TRITON_MODEL_DIRECTORY/env.tar.gz") -> Path:
    """``root/double`` (tritonpy, a two-line config, an environment unless ``env`` is None,
    plus a cache, a tests folder and a build record that must not be exported) and
    ``root/plain`` (a plain Python-backend model)."""
    model = root / "double"
    (model / "1" / "__pycache__").mkdir(parents=True)
    (model / "1" / "model.py").write_text(MODEL)
    (model / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\x00")
    (model / "tests").mkdir()
    (model / "tests" / "test_double.py").write_text("def test_it():\n    pass\n")
    (model / ".tritonpy-env.json").write_text("{}")
    config = 'name: "double"\nbackend: "python"\n'
    if env is not None:
        config += ENV % env
        env_archive(model / "env.tar.gz")
    (model / "config.pbtxt").write_text(config)
    plain = root / "plain"
    (plain / "1").mkdir(parents=True)
    (plain / "1" / "model.py").write_text(PLAIN)
    (plain / "config.pbtxt").write_text(PLAIN_CONFIG)
    return root


WHEEL = running_tritonpy().wheel_name
PROBE = ["tritonpy", "probe", "--url", "grpc://localhost:8001", "--timeout", "5"]


def tree(root: Path) -> List[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def load_manifests(path: Path) -> List[Any]:
    """The YAML documents of a written manifest file (PyYAML: the export itself needs it)."""
    return list(yaml.safe_load_all(path.read_text()))


# ----------------------------------------------------------------------------------- tests
def test_export_writes_a_deployable_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    before = tree(repo)
    result = export_repository(repo, tmp_path / "deploy", triton_version="24.10")
    out = tmp_path / "deploy"
    assert result.repository == out / "model_repository"
    assert tree(out) == [
        ".dockerignore",
        "Dockerfile",
        "README.md",
        "k8s/deployment.yaml",
        "k8s/inferenceservice.yaml",
        "model_repository/double/1/model.py",
        "model_repository/double/config.pbtxt",
        "model_repository/double/env.tar.gz",
        "model_repository/plain/1/model.py",
        "model_repository/plain/config.pbtxt",
        f"wheels/{WHEEL}",
    ]
    assert tree(repo) == before, "export changed the source repository"
    by_name = {m.name: m for m in result.models}
    assert (by_name["double"].kind, by_name["double"].config) == ("tritonpy", "materialised")
    assert (by_name["double"].environment, by_name["double"].python) == ("kept", "3.10")
    assert by_name["double"].parameter == "$$TRITON_MODEL_DIRECTORY/env.tar.gz"
    assert by_name["double"].stub is None  # 3.10 is the 24.10 container's Python
    assert (by_name["plain"].kind, by_name["plain"].config) == ("python", "kept")
    assert by_name["plain"].environment == "none"
    assert (out / "model_repository/plain/config.pbtxt").read_text() == PLAIN_CONFIG
    report = check_repository(out / "model_repository", triton_version="24.10")
    assert report.findings == [], report.render_text()
    assert result.report is not None and result.report.findings == []


def test_exported_config_is_what_tritonpy_config_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo")
    export_repository(repo, tmp_path / "deploy", triton_version="24.10")
    exported = (tmp_path / "deploy/model_repository/double/config.pbtxt").read_text()
    by_hand = tmp_path / "by_hand" / "double"
    shutil.copytree(repo / "double", by_hand)
    assert main(["config", str(by_hand)]) == 0
    capsys.readouterr()
    assert exported == (by_hand / "config.pbtxt").read_text()
    # and it is complete: the declarations, the environment, no auto-complete needed
    for expected in (
        "max_batch_size: 8",
        'name: "X"',
        "TYPE_FP32",
        'name: "Y"',
        "dynamic_batching",
        "$$TRITON_MODEL_DIRECTORY/env.tar.gz",
    ):
        assert expected in exported, exported


def test_dockerfile_and_dockerignore(tmp_path: Path) -> None:
    export_repository(make_repo(tmp_path / "repo"), tmp_path / "a", triton_version="24.10")
    text = (tmp_path / "a" / "Dockerfile").read_text()
    instructions = [line.split()[0] for line in text.splitlines() if line[:1].isupper()]
    assert instructions == ["FROM", "COPY", "RUN", "COPY", "EXPOSE", "HEALTHCHECK", "CMD"]
    assert "FROM nvcr.io/nvidia/tritonserver:24.10-py3\n" in text
    assert f"COPY wheels/{WHEEL} /tmp/{WHEEL}\n" in text
    run = text.split("\nRUN ", 1)[1].split("\n\n", 1)[0].replace("\\\n", " ")
    assert run.split() == [
        "PIP_BREAK_SYSTEM_PACKAGES=1",
        "python3",
        "-m",
        "pip",
        "install",
        "--no-cache-dir",
        f"/tmp/{WHEEL}",
        "'tritonclient[grpc]'",
        "'numpy<2'",  # the container's numpy pin, on every release
        "&&",
        "rm",
        f"/tmp/{WHEEL}",
    ]
    assert "COPY model_repository/ /models/\n" in text
    assert "EXPOSE 8000 8001 8002\n" in text
    healthcheck = text.split("\nHEALTHCHECK ", 1)[1].split("\n\n", 1)[0]
    assert healthcheck.split("CMD ", 1)[1] == " ".join(PROBE) + " || exit 1"
    assert 'CMD ["tritonserver", "--model-repository=/models"]\n' in text
    ignore = (tmp_path / "a" / ".dockerignore").read_text().splitlines()
    assert ignore[1:] == ["*", "!model_repository/", "!wheels/", "**/__pycache__"]

    export_repository(
        make_repo(tmp_path / "repo2"),
        tmp_path / "b",
        triton_version="24.10",
        base_image="my-triton:24.10-custom",
    )
    assert "FROM my-triton:24.10-custom\n" in (tmp_path / "b" / "Dockerfile").read_text()

    # the container's own Python keeps numpy<2 on every release (its build.py installs it),
    # even where environments may hold numpy 2
    export_repository(make_repo(tmp_path / "repo3"), tmp_path / "c", triton_version="24.12")
    text = (tmp_path / "c" / "Dockerfile").read_text()
    assert "'numpy<2'" in text
    where = facts_for("24.12").cites("numpy_pin")  # the Dockerfile says why, cited
    assert f"# numpy<2: the release 24.12 container installs numpy<2 ({where}).\n" in text


def test_the_wheel_is_the_running_tritonpy_with_the_probe(tmp_path: Path) -> None:
    export_repository(make_repo(tmp_path / "repo"), tmp_path / "out", triton_version="24.10")
    runtime = running_tritonpy()
    with zipfile.ZipFile(tmp_path / "out" / "wheels" / WHEEL) as wheel:
        names = set(wheel.namelist())
        assert {"tritonpy/probe/_cli.py", "tritonpy/client/_infer.py"} <= names
        for arcname, path in runtime.files:
            assert wheel.read(arcname) == path.read_bytes(), arcname
        metadata = wheel.read(f"tritonpy-{__version__}.dist-info/METADATA").decode()
    assert f"Version: {__version__}" in metadata


def test_kubernetes_manifests(tmp_path: Path) -> None:
    export_repository(
        make_repo(tmp_path / "repo"),
        tmp_path / "deploy",
        triton_version="24.10",
        name="digits",
        image="digits:1.0",
        replicas=3,
        cpu="2",
        memory="4Gi",
    )
    deployment, service, budget, autoscaler = load_manifests(
        tmp_path / "deploy" / "k8s" / "deployment.yaml"
    )
    assert (budget["kind"], budget["spec"]["maxUnavailable"]) == ("PodDisruptionBudget", 1)
    assert (autoscaler["kind"], autoscaler["spec"]["minReplicas"]) == ("HorizontalPodAutoscaler", 3)
    assert (deployment["apiVersion"], deployment["kind"]) == ("apps/v1", "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 3
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    (container,) = spec["template"]["spec"]["containers"]
    assert container["image"] == "digits:1.0"
    assert container["args"][:3] == [
        "tritonserver",
        "--model-repository=/models",
        "--exit-timeout-secs=30",
    ]
    assert [(p["name"], p["containerPort"]) for p in container["ports"]] == [
        ("http", 8000),
        ("grpc", 8001),
        ("metrics", 8002),
    ]
    assert container["resources"]["requests"].items() >= {"cpu": "2", "memory": "4Gi"}.items()
    # the limit holds the request plus /dev/shm (two instances of 1 MiB, 64 MiB headroom)
    assert container["resources"]["limits"] == {"cpu": "2", "memory": f"{4096 + 66}Mi"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}
    # a dead stub leaves its model READY: liveness is a real request per model
    liveness = container["livenessProbe"]
    assert liveness["exec"] == {"command": PROBE}
    assert liveness["timeoutSeconds"] > 5  # more than one call's --timeout
    assert container["startupProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert (service["apiVersion"], service["kind"]) == ("v1", "Service")
    assert service["metadata"]["name"] == "digits"
    assert service["spec"]["selector"] == spec["selector"]["matchLabels"]
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        (8000, "http"),
        (8001, "grpc"),
        (8002, "metrics"),
    ]
    (isvc,) = load_manifests(tmp_path / "deploy" / "k8s" / "inferenceservice.yaml")
    assert (isvc["apiVersion"], isvc["kind"]) == ("serving.kserve.io/v1beta1", "InferenceService")
    model = isvc["spec"]["predictor"]["model"]
    assert model["modelFormat"] == {"name": "triton", "version": "2"}
    assert model["runtimeVersion"] == "24.10-py3"
    assert model["storageUri"] == "s3://BUCKET/digits/model_repository"
    readme = (tmp_path / "deploy" / "README.md").read_text()
    for expected in (
        "docker build -t digits:1.0 .",
        "docker run --rm -p 8000:8000 -p 8001:8001 -p 8002:8002 digits:1.0",
        "docker push",
        "kubectl apply -f k8s/deployment.yaml",
        "kubectl apply -f k8s/inferenceservice.yaml",
        "- `double`",
        "- `plain`",
        "by `tritonpy probe --url grpc://localhost:8001 --timeout 5`: one real request",
    ):
        assert expected in readme, expected


def test_manifest_yaml_keeps_every_value_type() -> None:
    document = {"a": "8000", "b": "yes", "c": 8000, "d": True, "e": [], "f": {}, "g": [[1]]}
    text = to_yaml_documents([document, {"kind": "Service"}], header="first\nsecond")
    assert text.splitlines()[:2] == ["# first", "# second"]
    assert list(yaml.safe_load_all(text)) == [document, {"kind": "Service"}]


def test_non_empty_out_is_refused_unless_force(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    out = tmp_path / "deploy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ExportError) as refused:
        export_repository(repo, out, triton_version="24.10")
    assert str(refused.value) == (
        f"OUT {out} is not empty; pass an empty or new directory, or --force to replace the "
        "export's files there (model_repository, envs, wheels, Dockerfile, .dockerignore, "
        "k8s, README.md)"
    )
    assert tree(out) == ["notes.txt"]
    export_repository(repo, out, triton_version="24.10", force=True)
    (out / "model_repository" / "stale").mkdir()
    export_repository(repo, out, triton_version="24.10", force=True)
    assert not (out / "model_repository" / "stale").exists()  # replaced, not merged
    assert (out / "notes.txt").read_text() == "mine"  # --force replaces only the export's files
    with pytest.raises(ExportError, match="inside the model repository"):
        export_repository(repo, repo / "deploy", triton_version="24.10")


def test_no_pack_without_an_environment_is_an_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", env=None)
    out = tmp_path / "deploy"
    with pytest.raises(ExportError) as refused:
        export_repository(repo, out, triton_version="24.10", pack=False)
    assert str(refused.value) == (
        "model 'double': model.py imports tritonpy, which the Python 3.10 of the release "
        "24.10 container lacks, and it has no environment. Pack one: 'tritonpy pack-env "
        f"{repo / 'double'} --triton-version 24.10', or export without --no-pack to let "
        "export pack it"
    )
    assert tree(out) == []  # nothing half-written


def test_missing_environment_file_with_no_pack(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", env="$$TRITON_MODEL_DIRECTORY/gone.tar.gz")
    with pytest.raises(ExportError, match=r"'\$\$TRITON_MODEL_DIRECTORY/gone.tar.gz' does not"):
        export_repository(repo, tmp_path / "deploy", triton_version="24.10", pack=False)


def test_unreadable_environment_with_no_pack(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "double" / "env.tar.gz").write_bytes(b"\x1f\x8bnot really gzip")
    with pytest.raises(ExportError) as refused:
        export_repository(repo, tmp_path / "deploy", triton_version="24.10", pack=False)
    assert (
        "and its environment '$$TRITON_MODEL_DIRECTORY/env.tar.gz' has no single "
        "lib/libpythonX.Y.so* (or is unreadable). Pack one: " in str(refused.value)
    )


def test_failing_check_writes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    env_archive(repo / "double" / "env.tar.gz", numpy="2.1.0")  # 24.10's stub predates numpy 2
    out = tmp_path / "deploy"
    with pytest.raises(ExportError) as failed:
        export_repository(repo, out, triton_version="24.10")
    message = str(failed.value)
    assert message.startswith(
        "the exported repository does not pass 'tritonpy check --triton-version 24.10' (1 "
        f"error, 0 warnings); nothing was written to {out}. Fix these in {repo} and export again"
    )
    assert "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: error TP509" in message
    assert tree(out) == [] and [p.name for p in out.iterdir()] == []


def test_environment_outside_the_model_directory_is_brought_in(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    shared = env_archive(tmp_path / "shared" / "double_env.tar.gz")
    repo = make_repo(tmp_path / "repo", env=str(shared))
    (repo / "double" / "env.tar.gz").unlink()
    result = export_repository(repo, tmp_path / "deploy", triton_version="24.10")
    model = tmp_path / "deploy" / "model_repository" / "double"
    assert (model / "double_env.tar.gz").read_bytes() == shared.read_bytes()
    assert result.models[0].parameter == "$$TRITON_MODEL_DIRECTORY/double_env.tar.gz"
    assert "$$TRITON_MODEL_DIRECTORY/double_env.tar.gz" in (model / "config.pbtxt").read_text()


def test_environment_for_another_python_gets_the_release_stub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    repo = make_repo(tmp_path / "repo")
    env_archive(repo / "double" / "env.tar.gz", python="3.12")
    result = export_repository(repo, tmp_path / "deploy", triton_version="24.10")
    double = result.models[0]
    assert (double.environment, double.python, double.stub) == ("kept", "3.12", "wheel")
    stub = tmp_path / "deploy" / "model_repository" / "double" / "triton_python_backend_stub"
    assert linked_python(stub) == "3.12"
    # and a stale stub for the container's own Python is dropped again
    shutil.copy(stub, repo / "double" / "triton_python_backend_stub")
    env_archive(repo / "double" / "env.tar.gz", python="3.10")
    result = export_repository(repo, tmp_path / "deploy", triton_version="24.10", force=True)
    assert result.models[0].stub == "removed"
    assert not stub.exists()


def test_bad_options(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(ExportError, match="--name 'My_Models' is not a Kubernetes name"):
        export_repository(repo, tmp_path / "o", triton_version="24.10", name="My_Models")
    with pytest.raises(ExportError, match="--replicas 0"):
        export_repository(repo, tmp_path / "o", triton_version="24.10", replicas=0)
    with pytest.raises(ExportError, match="is not a directory"):
        export_repository(tmp_path / "nope", tmp_path / "o", triton_version="24.10")
    with pytest.raises(Exception, match="not a Triton release"):
        export_repository(repo, tmp_path / "o", triton_version="2024")
    assert not (tmp_path / "o").exists()


def test_cli_exports_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "repo")
    out = tmp_path / "deploy"
    assert main(["export", str(repo), str(out), "--triton-version", "24.10"]) == 0
    printed = capsys.readouterr().out
    assert "double: tritonpy, config materialised, environment kept " in printed
    assert "plain: python, config kept, environment none" in printed
    assert "next: docker build -t tritonpy-models:24.10 " in printed
    assert "(environment layout per-model, " in printed
    assert main(["export", str(repo), str(out), "--triton-version", "24.10"]) == 1
    assert "is not empty" in capsys.readouterr().err
    assert main(["check", str(out / "model_repository"), "--triton-version", "24.10"]) == 0


def test_missing_protobuf_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for name in ('tritonclient', 'tritonclient.grpc', 'google.protobuf'):\n"
        "    sys.modules[name] = None\n"
        "from tritonpy.cli import main\n"
        "sys.exit(main(['export', sys.argv[1], sys.argv[2], '--triton-version', '24.10']))\n"
    )
    repo = make_repo(tmp_path / "repo")
    done = subprocess.run(
        [sys.executable, "-c", code, str(repo), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "tritonpy: error: tritonpy export needs tritonclient[grpc] and protobuf (not "
        "installed): pip install 'tritonpy[config]'"
    ]
    assert not (tmp_path / "out").exists()


# --------------------------------------- validation in each model's environment, the build cache
READER = MODEL.replace(
    "import tritonpy as tp", "import yaml  # the tool has PyYAML\nimport tritonpy as tp"
)


def _model(root: Path, name: str, source: str = MODEL, config: str = "") -> Path:
    model = root / name
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(source.replace("Double", name.title()))
    (model / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n' + config)
    return model


def _no_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an environment was built")

    monkeypatch.setattr("tritonpy.envs._envcache.pack_env", refuse)
    monkeypatch.setattr("tritonpy.export._models.pack_env", refuse, raising=False)


def test_a_package_the_environment_lacks_fails_before_anything_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_envs import XY, mini_env

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    _no_builds(monkeypatch)
    repo = tmp_path / "repo"
    reader = _model(repo, "reader", READER, ENV % "$$TRITON_MODEL_DIRECTORY/env")
    mini_env(reader / "env")
    _model(repo, "waiting")  # no environment: it would need one built, after validation
    out = tmp_path / "deploy"
    with pytest.raises(ExportError) as refused:
        export_repository(repo, out, triton_version="24.10")
    assert str(refused.value) == (
        "model 'reader' (reader/1/model.py): importing it inside its environment "
        f"$$TRITON_MODEL_DIRECTORY/env (Python {XY}) failed: ModuleNotFoundError: No module "
        "named 'yaml'. Fix: the environment $$TRITON_MODEL_DIRECTORY/env lacks 'yaml': add "
        "pyyaml to the model's spec (REPO/reader/requirements.txt or environment.yml) and "
        "rebuild it: 'tritonpy pack-env REPO/reader --triton-version 24.10 --force'"
    )
    assert tree(out) == []


def test_every_problem_is_reported_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mini_envs import mini_env

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    _no_builds(monkeypatch)
    repo = tmp_path / "repo"
    for name in ("first", "second"):
        model = _model(repo, name, READER, ENV % "$$TRITON_MODEL_DIRECTORY/env")
        mini_env(model / "env")
    with pytest.raises(ExportError) as refused:
        export_repository(repo, tmp_path / "deploy", triton_version="24.10")
    lines = str(refused.value).splitlines()
    assert lines[0] == (
        "2 problems found before building any environment; nothing was written. Fix them and "
        "export again (what was built is kept in the cache):"
    )
    assert [line.split(" (")[0] for line in lines[1:]] == ["- model 'first'", "- model 'second'"]
    assert all("No module named 'yaml'" in line for line in lines[1:])


SPEC = """name: shared
dependencies:
  - python=%s
  - pip
  - pip:
    - -r base.txt
"""


def _spec_repo(root: Path) -> Path:
    from mini_envs import XY

    for name, base in (("alpha", "numpy<2\n"), ("beta", "numpy<2\n"), ("gamma", "numpy<2\nsix\n")):
        model = _model(root, name)
        (model / "environment.yml").write_text(SPEC % XY)
        (model / "base.txt").write_text(base)
    return root


def test_models_of_one_spec_share_one_build_and_the_cache_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_envs import XY, FakeBuilds

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    builds = FakeBuilds(tmp_path / "sources").install(monkeypatch)
    repo = _spec_repo(tmp_path / "repo")
    (repo / "alpha" / f"alpha_py{XY}.tar.gz").write_bytes(b"stale, from an old pack-env")
    out = tmp_path / "deploy"
    first = export_repository(repo, out, triton_version="24.10", allow_warnings=True)
    assert builds.models == ["alpha", "gamma"]  # beta's spec is alpha's: one build
    assert [(m.name, m.environment, m.cached) for m in first.models] == [
        ("alpha", "packed", False),
        ("beta", "packed", True),
        ("gamma", "packed", False),
    ]
    assert [sorted(e.models) for e in first.environments] == [["alpha", "beta"], ["gamma"]]
    exported = out / "model_repository"
    alpha, beta = (
        exported / "alpha" / f"alpha_py{XY}.tar.gz",
        exported / "beta" / f"beta_py{XY}.tar.gz",
    )
    # one file on this disk, two names (the stale copy of the source replaced)
    assert alpha.stat().st_ino == beta.stat().st_ino
    assert first.models[0].parameter == f"$$TRITON_MODEL_DIRECTORY/alpha_py{XY}.tar.gz"
    # a second export builds nothing; a change in an included file builds that spec again
    again = export_repository(repo, out, triton_version="24.10", allow_warnings=True, force=True)
    assert builds.models == ["alpha", "gamma"]
    assert [m.cached for m in again.models] == [True, True, True]
    (repo / "gamma" / "base.txt").write_text("numpy<2\nsix==1.16.0\n")
    export_repository(repo, out, triton_version="24.10", allow_warnings=True, force=True)
    assert builds.models == ["alpha", "gamma", "gamma"]


def test_the_shared_layout_puts_one_archive_per_environment_beside_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_envs import FakeBuilds

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    FakeBuilds(tmp_path / "sources").install(monkeypatch)
    repo = _spec_repo(tmp_path / "repo")
    out = tmp_path / "deploy"
    result = export_repository(
        repo, out, triton_version="24.10", env_layout="shared", allow_warnings=True
    )
    archives = sorted(p.name for p in (out / "envs").iterdir())
    assert len(archives) == 2
    parameters = [m.parameter for m in result.models]
    assert parameters[0] == parameters[1] != parameters[2]
    assert {p.split("/envs/")[1] for p in parameters if p} == set(archives)
    assert all(p and p.startswith("$$TRITON_MODEL_DIRECTORY/../../envs/") for p in parameters)
    assert [m.shared for m in result.models] == [True, True, True]
    assert "COPY envs/ /envs/" in (out / "Dockerfile").read_text()
    assert "!envs/\n" in (out / ".dockerignore").read_text()
    assert "--env-layout per-model" in (out / "README.md").read_text()
    report = check_repository(out / "model_repository", triton_version="24.10")
    assert {(f.code, f.severity) for f in report.findings if f.code == "TP502"} == {
        ("TP502", "warning")
    }
    with pytest.raises(ExportError, match="--env-layout 'flat': expected one of per-model, shared"):
        export_repository(repo, tmp_path / "o", triton_version="24.10", env_layout="flat")  # type: ignore[arg-type]


def test_cli_reports_each_environment_and_its_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mini_envs import XY, FakeBuilds

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    FakeBuilds(tmp_path / "sources").install(monkeypatch)
    repo = _spec_repo(tmp_path / "repo")
    command = ["export", str(repo), str(tmp_path / "deploy"), "--triton-version", "24.10"]
    assert main([*command, "--env-layout", "shared", "--allow-warnings"]) == 0
    printed = capsys.readouterr().out.splitlines()
    spec = repo / "alpha" / "environment.yml"
    (line,) = [p for p in printed if p.startswith(f"environment {spec} ")]
    assert line.startswith(f"environment {spec} (Python {XY}): built in ")
    assert line.endswith(" s, used by alpha, beta")
    assert any("(environment layout shared, " in p for p in printed)
    assert main([*command, "--allow-warnings", "--force"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert f"environment {spec} (Python {XY}): from the cache, used by alpha, beta" in printed


def test_the_image_layout_unpacks_each_environment_once_into_the_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_envs import XY, FakeBuilds

    from tritonpy.export._files import UNPACK_STEP

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    FakeBuilds(tmp_path / "sources").install(monkeypatch)
    repo = _spec_repo(tmp_path / "repo")
    out, root = tmp_path / "deploy", tmp_path / "image" / "envs"
    result = export_repository(
        repo, out, triton_version="24.10", env_layout="image", env_root=str(root)
    )
    archives = sorted(p.name for p in (out / "envs").iterdir())
    folders = [str(root / a[: -len(".tar.gz")]) for a in archives]
    parameters = [m.parameter for m in result.models]
    assert parameters[0] == parameters[1] != parameters[2]
    assert sorted(set(parameters)) == folders and all(f.endswith(f"_py{XY}") for f in folders)
    dockerfile = (out / "Dockerfile").read_text()
    step = UNPACK_STEP.format(root=root)
    assert f"COPY envs/ {root}/\nRUN {step}\n" in dockerfile
    # the image's build step, run here: then the repository checks clean, each model
    # imported inside its unpacked environment
    shutil.copytree(out / "envs", root)
    subprocess.run(["bash", "-c", step], check=True)
    assert sorted(p.name for p in root.iterdir()) == [Path(f).name for f in folders]
    assert check_repository(out / "model_repository", triton_version="24.10").errors == []
    with pytest.raises(ExportError, match="--env-root 'envs': expected an absolute path"):
        export_repository(
            repo, tmp_path / "o", triton_version="24.10", env_layout="image", env_root="envs"
        )


def test_a_models_test_files_stay_with_the_sources(tmp_path: Path) -> None:
    """``tritonpy new`` renders test_NAME.py beside config.pbtxt: the export leaves it (and a
    conftest.py, tests/) out of the deployed model, keeping the model's own modules."""
    from tritonpy.export._models import copy_model

    source = tmp_path / "hello"
    (source / "1").mkdir(parents=True)
    (source / "config.pbtxt").write_text('name: "hello"\nbackend: "python"\n')
    for name in ("test_hello.py", "hello_test.py", "conftest.py", "labels.txt", "helpers.py"):
        (source / name).write_text("# file\n")
    (source / "1" / "model.py").write_text("# the model\n")
    (source / "1" / "test_data.py").write_text("# a module of the model, named test_*\n")
    (source / "tests").mkdir()
    (source / "tests" / "test_more.py").write_text("")
    copy_model(source, tmp_path / "out" / "hello")
    copied = sorted(
        str(p.relative_to(tmp_path / "out" / "hello"))
        for p in (tmp_path / "out" / "hello").rglob("*")
    )
    assert copied == [
        "1",
        "1/model.py",
        "1/test_data.py",
        "config.pbtxt",
        "helpers.py",
        "labels.txt",
    ]
