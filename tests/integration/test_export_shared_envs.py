"""Export with environments built once per spec, on the real tritonserver.

Two tritonpy models share one requirements.txt: the export builds one Python 3.10
environment (the local builder, about a minute) into the build cache and, with
``--env-layout shared``, writes it once to ``OUT/envs/`` beside the repository. The copied
export (model_repository/ and envs/ together, as the image has them) is served by the real
tritonserver: both models answer from Python 3.10, and the server unpacks the shared archive
once (its log says so). With ``--env-layout image`` (from the cache) the archive is unpacked
into a folder as the Dockerfile's step does, and the server uses it in place, extracting
nothing. A second export, per-model layout, takes the environment from the cache. Then a
model whose environment lacks a package the tool's own virtualenv has fails the check and the
export before anything is built, naming the environment and the fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Tuple

import numpy as np
import pytest
import tritonclient.http as httpclient

from tritonpy.check import check_repository
from tritonpy.envs._selfwheel import running_tritonpy
from tritonpy.export import ExportError, ExportResult, export_repository
from tritonpy.stubs._provision import provision_stub

pytestmark = pytest.mark.integration

MODEL = """
import sys

import numpy as np

import tritonpy as tp


class Add{n}(tp.Model):
    inputs = {{"X": tp.Tensor("FP32", [-1])}}
    outputs = {{"Y": tp.Tensor("FP32", [-1]), "PY": tp.Text()}}
    max_batch_size = 4

    def infer(self, X):
        python = "%d.%d" % sys.version_info[:2]
        return {{"Y": X + {n}, "PY": [python] * len(X)}}


TritonPythonModel = Add{n}
"""


def _model(repo: Path, name: str, n: int, source: str = MODEL) -> Path:
    model = repo / name
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(source.format(n=n))
    (model / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
    return model


@pytest.fixture(scope="module")
def shared_export(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Path, ExportResult]]:
    """Two models of one spec exported with the shared layout (one real build)."""
    root = tmp_path_factory.mktemp("shared")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITONPY_CACHE_DIR", str(root / "cache"))
        # the cache key holds the running tritonpy's digest; in a working tree others edit,
        # it may change between two exports of this module: hold it still
        frozen = running_tritonpy()
        patch.setattr("tritonpy.envs._envcache.running_tritonpy", lambda: frozen)
        repo = root / "repo"
        for n, name in enumerate(("one", "two"), start=1):
            (_model(repo, name, n) / "requirements.txt").write_text("numpy<2\n")
        result = export_repository(
            repo, root / "deploy", triton_version="24.10", builder="local", env_layout="shared"
        )
        yield root, result


def test_models_of_one_spec_share_one_archive_served(
    shared_export: Tuple[Path, ExportResult], triton_server_factory: Callable[..., Any]
) -> None:
    root, result = shared_export
    (built,) = result.environments
    assert built.built and sorted(built.models) == ["one", "two"]
    (archive,) = (root / "deploy" / "envs").iterdir()
    assert [m.parameter for m in result.models] == [
        f"$$TRITON_MODEL_DIRECTORY/../../envs/{archive.name}"
    ] * 2
    # the image's layout, elsewhere: /models and /envs side by side
    elsewhere = root / "elsewhere"
    shutil.copytree(root / "deploy" / "model_repository", elsewhere / "models")
    shutil.copytree(root / "deploy" / "envs", elsewhere / "envs")
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" != "3.10"
    log = _serve_and_ask(elsewhere / "models", triton_server_factory)
    # Triton keys extractions by the archive's real path: one for both models
    assert log.count("Extracting Python execution env") == 1


def _serve_and_ask(
    models: Path, triton_server_factory: Callable[..., Any], *, place_stubs: bool = True
) -> str:
    """Serve ``models`` (stubs for Python 3.10 placed first, or else supplied by the embedded
    server through its shadow repository), ask both models, return the log."""
    for name in ("one", "two") if place_stubs else ():  # this server's stub is not 3.10
        provision_stub(models / name, triton_version="24.10", python="3.10")
    server = triton_server_factory(
        models, startup_timeout=180, log_verbose=1, extra_args=["--disable-auto-complete-config"]
    )
    assert server.models_ready() == ["one", "two"]
    client = httpclient.InferenceServerClient(server.http_url[len("http://") :])
    for n, name in enumerate(("one", "two"), start=1):
        x = np.array([[1.0, 2.0]], np.float32)
        tensor = httpclient.InferInput("X", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        answer = client.infer(name, [tensor])
        assert answer.as_numpy("Y").tolist() == [[1.0 + n, 2.0 + n]]
        assert [p.decode() for p in answer.as_numpy("PY").reshape(-1)] == ["3.10"]
    assert server.log_path is not None
    return server.log_path.read_text(errors="replace")


def test_serve_supplies_the_stubs_of_a_shared_export(
    shared_export: Tuple[Path, ExportResult], triton_server_factory: Callable[..., Any]
) -> None:
    """tritonpy serve on the shared layout as exported: serve gives the 3.10 models their
    stub through a shadow repository, where ../../envs must still reach the archive."""
    root, _ = shared_export
    in_place = root / "in_place"
    shutil.copytree(root / "deploy", in_place, ignore=shutil.ignore_patterns("k8s"))
    for name in ("one", "two"):
        assert not (in_place / "model_repository" / name / "triton_python_backend_stub").exists()
    _serve_and_ask(in_place / "model_repository", triton_server_factory, place_stubs=False)


def test_the_image_layout_uses_unpacked_folders_in_place(
    shared_export: Tuple[Path, ExportResult], triton_server_factory: Callable[..., Any]
) -> None:
    from tritonpy.export._files import UNPACK_STEP

    root, _ = shared_export
    env_root = root / "image" / "opt" / "envs"  # /opt/tritonpy/envs in a real image
    result = export_repository(
        root / "repo",
        root / "image-out",
        triton_version="24.10",
        env_layout="image",
        env_root=str(env_root),
    )
    (built,) = result.environments
    assert not built.built  # from the cache
    # the Dockerfile's steps: COPY envs/ to the root, then its RUN line
    shutil.copytree(root / "image-out" / "envs", env_root)
    subprocess.run(["bash", "-c", UNPACK_STEP.format(root=env_root)], check=True)
    (folder,) = env_root.iterdir()
    assert [m.parameter for m in result.models] == [str(folder)] * 2
    shutil.copytree(root / "image-out" / "model_repository", root / "image" / "models")
    log = _serve_and_ask(root / "image" / "models", triton_server_factory)
    # a folder is used in place: nothing is extracted when the models load
    assert log.count("Extracting Python execution env") == 0
    assert log.count("does not contain compressed path") >= 2


def test_the_image_layout_serves_from_a_bucket_and_extracts_nothing_at_a_reload(
    shared_export: Tuple[Path, ExportResult],
    triton_server_factory: Callable[..., Any],
    s3_bucket: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--env-layout image --to s3://...``: the bucket holds the models, the image their
    unpacked environments. From a bucket an archive is extracted again at every load (each
    load's copy has a new path, python_backend r24.10 pb_env.cc keys by it) and the old copy
    stays in /tmp; a folder of the image is used in place, so a reload extracts nothing."""
    from tritonpy.export._files import UNPACK_STEP
    from tritonpy.server._supervise import reload_model
    from tritonpy.storage import publish

    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    root, _ = shared_export
    env_root = root / "image-s3" / "opt" / "envs"  # /opt/tritonpy/envs in a real image
    url = s3_bucket.url("image/models")
    out = root / "image-s3-out"
    result = export_repository(
        root / "repo", out, triton_version="24.10", env_layout="image",
        env_root=str(env_root), to=url,
    )  # fmt: skip
    (built,) = result.environments
    assert not built.built  # from the cache
    shutil.copytree(out / "envs", env_root)  # the Dockerfile's COPY, then its RUN line
    subprocess.run(["bash", "-c", UNPACK_STEP.format(root=env_root)], check=True)
    (folder,) = env_root.iterdir()
    assert result.published.server_environments == {"one": str(folder), "two": str(folder)}
    stored = s3_bucket.keys("image/")
    assert "image/models/one/1/model.py" in stored, stored
    assert not [k for k in stored if k.endswith(".tar.gz")], stored
    dockerfile = (out / "Dockerfile").read_text()
    command = f'"--model-repository={url}", "--model-control-mode=explicit", "--load-model=*"'
    assert f'CMD ["tritonserver", {command}, ' in dockerfile
    assert "COPY model_repository/" not in dockerfile and "tar -xzf" in dockerfile
    # this machine's server is not Python 3.10 (the 24.10 container's): publish the stubs
    for name in ("one", "two"):
        provision_stub(out / "model_repository" / name, triton_version="24.10", python="3.10")
    again = publish(out / "model_repository", url)
    assert sorted(again.uploaded) == [
        "one/triton_python_backend_stub",
        "two/triton_python_backend_stub",
    ]
    server = triton_server_factory(url, reloadable=True, heal=False, log_verbose=1)
    assert server.models_ready() == ["one", "two"]
    reload_model(server.http_url, "one", timeout=120)
    log = server.log_path.read_text(errors="replace")
    assert log.count("Extracting Python execution env") == 0
    assert log.count("does not contain compressed path") >= 3  # two loads and a reload


def test_a_second_export_takes_the_environment_from_the_cache(
    shared_export: Tuple[Path, ExportResult],
) -> None:
    root, first = shared_export  # (the fixture's cache folder is still set)
    again = export_repository(root / "repo", root / "per-model", triton_version="24.10")
    (built,) = again.environments
    assert not built.built and built.archive == first.environments[0].archive
    assert [(m.environment, m.cached) for m in again.models] == [("packed", True)] * 2
    one = root / "per-model" / "model_repository" / "one" / "one_py3.10.tar.gz"
    two = root / "per-model" / "model_repository" / "two" / "two_py3.10.tar.gz"
    assert one.stat().st_ino == two.stat().st_ino == built.archive.stat().st_ino
    assert again.seconds < first.seconds / 2, (again.seconds, first.seconds)


def test_a_package_the_environment_lacks_fails_before_any_build(
    shared_export: Tuple[Path, ExportResult],
) -> None:
    import yaml  # noqa: F401  (here it imports: the old, in-tool import would have passed)

    root, first = shared_export
    repo = root / "lacking"
    reader = _model(repo, "reader", 1, MODEL.replace("import sys", "import sys\nimport yaml"))
    shutil.copy(first.environments[0].archive, reader / "env_py3.10.tar.gz")
    with (reader / "config.pbtxt").open("a") as config:
        config.write(
            'parameters { key: "EXECUTION_ENV_PATH" value { string_value: '
            '"$$TRITON_MODEL_DIRECTORY/env_py3.10.tar.gz" } }\n'
        )
    # a second model whose spec is in no cache: export would have to build it
    (_model(repo, "other", 2) / "requirements.txt").write_text("numpy<2\nsix\n")
    built_before = sorted(os.listdir(root / "cache" / "envs" / "built"))
    report = check_repository(repo, triton_version="24.10")
    (finding,) = [f for f in report.errors if f.code == "TP109"]
    assert finding.message == (
        "importing it inside its environment $$TRITON_MODEL_DIRECTORY/env_py3.10.tar.gz "
        "(Python 3.10) failed: ModuleNotFoundError: No module named 'yaml'"
    )
    with pytest.raises(ExportError) as refused:
        export_repository(repo, root / "lacking-out", triton_version="24.10")
    assert sorted(os.listdir(root / "cache" / "envs" / "built")) == built_before
    assert str(refused.value) == (
        "model 'reader' (reader/1/model.py): importing it inside its environment "
        "$$TRITON_MODEL_DIRECTORY/env_py3.10.tar.gz (Python 3.10) failed: "
        "ModuleNotFoundError: No module named 'yaml'. Fix: the environment "
        "$$TRITON_MODEL_DIRECTORY/env_py3.10.tar.gz lacks 'yaml': add pyyaml to the model's "
        "spec (REPO/reader/requirements.txt or environment.yml) and rebuild it: 'tritonpy "
        "pack-env REPO/reader --triton-version 24.10 --force'"
    )
    assert not (root / "lacking-out" / "model_repository").exists()
