"""``tritonpy.storage.publish`` against a real S3-compatible server (SeaweedFS, the
``s3_bucket`` fixture, whose keys are checked: a bucket's own, a read-only one): what lands in
the bucket, what is skipped, versions, pruning, dry runs, and every refusal's message."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from boto3.s3.transfer import TransferConfig

from tritonpy._tooling.progress import Reporter
from tritonpy.storage import (
    PublishError,
    StorageError,
    TemporaryDownload,
    download_repository,
    publish,
)

ENV = 'parameters { key: "EXECUTION_ENV_PATH" value { string_value: "%s" } }\n'
ARCHIVE = "$$TRITON_MODEL_DIRECTORY/env.tar.gz"
MIB = 1024 * 1024


def write(root: Path, files: Dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def python_model(repo: Path, name: str, env: str = "", **extra: bytes) -> Path:
    config = f'name: "{name}"\nbackend: "python"\n' + (ENV % env if env else "")
    files = {"config.pbtxt": config.encode(), "1/model.py": f"# {name}\n".encode()}
    files.update({rel.replace("__", "/"): data for rel, data in extra.items()})
    return write(repo / name, files)


def body(bucket: Any, key: str) -> bytes:
    data: bytes = bucket.client.get_object(Bucket=bucket.name, Key=key)["Body"].read()
    return data


def local_tree(root: Path) -> Dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


# ------------------------------------------------------------------------------ publishing
def test_publish_uploads_what_tritonserver_reads(tmp_path: Path, s3_bucket: Any) -> None:
    repo, shared = tmp_path / "repo", tmp_path / "shared"
    write(shared, {"labels.txt": b"cat\ndog\n", "assets/vocab.json": b"{}"})
    pre = python_model(repo, "pre", ARCHIVE, **{"env.tar.gz": b"archive"})
    write(pre, {"triton_python_backend_stub": b"\x7fELF stub", ".tritonpy-env.json": b"{}"})
    write(pre, {"1/__pycache__/model.cpython-311.pyc": b"", "1/old.pyc": b"", "1/.swp": b""})
    (pre / "1" / "labels.txt").symlink_to(shared / "labels.txt")
    (pre / "1" / "assets").symlink_to(shared / "assets", target_is_directory=True)
    write(repo, {"ens/config.pbtxt": b'name: "ens"\nplatform: "ensemble"\n', "ens/1/.gitkeep": b""})
    write(repo, {"README.md": b"not a model", ".git/HEAD": b"ref"})
    s3_bucket.client.put_object(Bucket=s3_bucket.name, Key="repo/NOTES.txt", Body=b"beside")

    result = publish(repo, s3_bucket.url("repo"), env=s3_bucket.env)

    published = [
        "ens/1/",  # an empty version folder: a folder marker, which tritonserver lists
        "ens/config.pbtxt",
        "pre/1/assets/vocab.json",
        "pre/1/labels.txt",
        "pre/1/model.py",
        "pre/config.pbtxt",
        "pre/env.tar.gz",
        "pre/triton_python_backend_stub",
    ]
    assert s3_bucket.keys("repo/") == sorted(["repo/NOTES.txt", *(f"repo/{k}" for k in published)])
    assert sorted(result.uploaded) == published and result.unchanged == result.deleted == []
    assert body(s3_bucket, "repo/pre/1/labels.txt") == b"cat\ndog\n"  # the link's target
    assert body(s3_bucket, "repo/pre/config.pbtxt") == (pre / "config.pbtxt").read_bytes()
    assert (result.models, result.versions) == (["ens", "pre"], {"ens": [1], "pre": [1]})
    assert result.url == s3_bucket.url("repo") and result.new_versions == {}
    sizes = sum((repo / k).stat().st_size for k in published if not k.endswith("/"))
    assert result.bytes_uploaded == sizes and not result.dry_run
    assert result.summary.startswith(
        f"published 2 model(s) to {s3_bucket.url('repo')}: 8 uploaded ({sizes} B), "
        "0 unchanged, 0 deleted in "
    )
    assert result.lines()[1:] == [
        "  ens: versions in the bucket: 1",
        "  pre: versions in the bucket: 1",
    ]


class ConfigWatcher(Reporter):
    """At each file uploaded (``update``) and each model done, whether the bucket already
    holds that model's config.pbtxt."""

    def __init__(self, bucket: Any) -> None:
        self.bucket = bucket
        self.seen: List[Tuple[str, str, bool]] = []

    def _has_config(self, model: str) -> bool:
        return f"repo/{model}/config.pbtxt" in self.bucket.keys(f"repo/{model}/")

    def update(self, line: str) -> None:
        model = line.split("/")[0]
        self.seen.append(("file", line, self._has_config(model)))

    def done(self, step: str, detail: str = "") -> None:
        if step.startswith("uploading "):
            model = step.split()[1]
            self.seen.append(("model", model, self._has_config(model)))


def test_each_config_pbtxt_is_written_after_its_models_other_files(
    tmp_path: Path, s3_bucket: Any
) -> None:
    repo = tmp_path / "repo"
    for name in ("a", "b"):
        python_model(repo, name, ARCHIVE, **{"env.tar.gz": b"x" * 1000, "2__model.py": b"#"})
    watcher = ConfigWatcher(s3_bucket)
    publish(repo, s3_bucket.url("repo"), env=s3_bucket.env, reporter=watcher)
    files = [(what, has) for kind, what, has in watcher.seen if kind == "file"]
    assert len(files) == 6 and not any(has for _, has in files), files
    assert [entry for entry in watcher.seen if entry[0] == "model"] == [
        ("model", "a", True),
        ("model", "b", True),
    ]


def test_unchanged_files_are_skipped_by_their_etag_multipart_ones_too(
    tmp_path: Path, s3_bucket: Any
) -> None:
    repo = tmp_path / "repo"
    big = os.urandom(9 * MIB)  # above the 8 MiB threshold: a two-part upload
    model = python_model(repo, "m", **{"1__weights.bin": big})
    url, env = s3_bucket.url("repo"), s3_bucket.env
    publish(repo, url, env=env)
    head = s3_bucket.client.head_object(Bucket=s3_bucket.name, Key="repo/m/1/weights.bin")
    assert head["ETag"].strip('"').endswith("-2") and head["ContentLength"] == 9 * MIB

    again = publish(repo, url, env=env)
    assert again.uploaded == [] and again.bytes_uploaded == 0
    assert sorted(again.unchanged) == ["m/1/model.py", "m/1/weights.bin", "m/config.pbtxt"]

    changed = bytearray(big)
    changed[5 * MIB] ^= 0xFF  # same size, one byte of the second part
    (model / "1" / "weights.bin").write_bytes(bytes(changed))
    (model / "1" / "model.py").write_text("# m, edited\n")
    third = publish(repo, url, env=env)
    assert sorted(third.uploaded) == ["m/1/model.py", "m/1/weights.bin"]
    assert third.bytes_uploaded == 9 * MIB + len("# m, edited\n")
    assert body(s3_bucket, "repo/m/1/weights.bin") == bytes(changed)

    # written by another tool with 5 MiB parts: another ETag, uploaded once, then skipped
    s3_bucket.client.upload_file(
        str(model / "1" / "weights.bin"),
        s3_bucket.name,
        "repo/m/1/weights.bin",
        Config=TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB),
    )
    assert publish(repo, url, env=env).uploaded == ["m/1/weights.bin"]
    assert publish(repo, url, env=env).uploaded == []


def test_new_version_publishes_the_newest_local_folder_after_the_buckets_newest(
    tmp_path: Path, s3_bucket: Any
) -> None:
    repo = tmp_path / "repo"
    model = python_model(repo, "m")
    url, env = s3_bucket.url("repo"), s3_bucket.env
    assert publish(repo, url, env=env, new_version=True).new_versions == {"m": 1}  # new: as-is

    (model / "1" / "model.py").write_text("# second\n")
    second = publish(repo, url, env=env, new_version=True)
    assert (second.new_versions, second.versions) == ({"m": 2}, {"m": [1, 2]})
    assert second.uploaded == ["m/2/model.py"] and second.unchanged == ["m/config.pbtxt"]
    assert body(s3_bucket, "repo/m/1/model.py") == b"# m\n"  # the bucket's older one is kept
    assert body(s3_bucket, "repo/m/2/model.py") == b"# second\n"
    third = publish(repo, url, env=env, new_version=True)
    assert third.new_versions == {"m": 3} and third.lines()[1] == (
        "  m: new version 3, versions in the bucket: 1 2 3"
    )

    (model / "1").rename(model / "7")  # already above the bucket's newest: kept as 7
    write(model, {"5/model.py": b"# older local"})  # below the newest local: not published
    python_model(repo, "fresh")
    (repo / "fresh" / "1").rename(repo / "fresh" / "4")
    fourth = publish(repo, url, env=env, new_version=True)
    assert fourth.new_versions == {"m": 7, "fresh": 4}
    assert fourth.versions == {"fresh": [4], "m": [1, 2, 3, 7]}
    assert sorted(fourth.uploaded) == ["fresh/4/model.py", "fresh/config.pbtxt", "m/7/model.py"]


def test_keep_versions_deletes_the_oldest_folders_of_the_published_models_only(
    tmp_path: Path, s3_bucket: Any
) -> None:
    repo = tmp_path / "repo"
    python_model(repo, "m")
    url, env = s3_bucket.url("repo"), s3_bucket.env
    for key in ("repo/m2/1/model.py", "repo/other/1/model.py", "repo/README.txt", "else/m/1/x"):
        s3_bucket.client.put_object(Bucket=s3_bucket.name, Key=key, Body=b"not mine")
    for _ in range(3):
        publish(repo, url, env=env, new_version=True)
    assert publish(repo, url, env=env, new_version=True).versions == {"m": [1, 2, 3, 4]}

    result = publish(repo, url, env=env, models=["m"], new_version=True, keep_versions=2)
    assert (result.new_versions, result.versions) == ({"m": 5}, {"m": [4, 5]})
    assert sorted(result.deleted) == ["m/1/model.py", "m/2/model.py", "m/3/model.py"]
    assert s3_bucket.keys() == [
        "else/m/1/x",
        "repo/README.txt",
        "repo/m/4/model.py",
        "repo/m/5/model.py",
        "repo/m/config.pbtxt",
        "repo/m2/1/model.py",
        "repo/other/1/model.py",
    ]
    # a version that would be deleted at once is not uploaded at all
    write(repo / "m", {"2/model.py": b"# old"})
    (repo / "m" / "1").rename(repo / "m" / "3")
    late = publish(repo, url, env=env, keep_versions=2)
    assert late.uploaded == [] and late.versions == {"m": [4, 5]} and late.deleted == []


def test_prune_deletes_what_the_local_folder_lacks_except_other_versions(
    tmp_path: Path, s3_bucket: Any
) -> None:
    repo = tmp_path / "repo"
    python_model(repo, "m", ARCHIVE, **{"env.tar.gz": b"new env"})
    url, env = s3_bucket.url("repo"), s3_bucket.env
    stale = ["repo/m/env_py3.10.tar.gz", "repo/m/1/stale.py", "repo/m/9/model.py"]
    for key in [*stale, "repo/other/old.tar.gz"]:
        s3_bucket.client.put_object(Bucket=s3_bucket.name, Key=key, Body=b"old")
    assert publish(repo, url, env=env).deleted == []  # without prune nothing goes
    assert set(stale) <= set(s3_bucket.keys())

    planned = publish(repo, url, env=env, prune=True, dry_run=True)
    assert sorted(planned.deleted) == ["m/1/stale.py", "m/env_py3.10.tar.gz"]
    assert "  delete m/env_py3.10.tar.gz" in planned.lines()
    assert set(stale) <= set(s3_bucket.keys())  # a dry run deletes nothing

    pruned = publish(repo, url, env=env, prune=True)
    assert sorted(pruned.deleted) == ["m/1/stale.py", "m/env_py3.10.tar.gz"]
    assert pruned.versions == {"m": [1, 9]}  # version 9, not published, stays
    assert s3_bucket.keys() == [
        "repo/m/1/model.py",
        "repo/m/9/model.py",
        "repo/m/config.pbtxt",
        "repo/m/env.tar.gz",
        "repo/other/old.tar.gz",
    ]


def test_a_dry_run_plans_and_writes_nothing(tmp_path: Path, s3_bucket: Any) -> None:
    repo = tmp_path / "repo"
    python_model(repo, "m")
    result = publish(repo, s3_bucket.url("repo"), env=s3_bucket.env, dry_run=True)
    assert s3_bucket.keys() == []
    assert result.dry_run and sorted(result.uploaded) == ["m/1/model.py", "m/config.pbtxt"]
    assert result.lines() == [
        f"would publish 1 model(s) to {s3_bucket.url('repo')}: 2 to upload "
        f"({result.bytes_uploaded} B), 0 unchanged, 0 to delete (dry run: nothing written)",
        "  m: versions in the bucket: 1",
        "  upload m/1/model.py",
        "  upload m/config.pbtxt",
    ]
    assert json.loads(result.to_json())["uploaded"] == result.uploaded


def test_a_published_repository_downloads_back_as_it_was(tmp_path: Path, s3_bucket: Any) -> None:
    repo = tmp_path / "repo"
    python_model(repo, "a", ARCHIVE, **{"env.tar.gz": os.urandom(1000)})
    python_model(repo, "b", **{"1__data__table.csv": b"x,y\n"})
    url = s3_bucket.url("models/prod")
    publish(repo, url, env=s3_bucket.env)
    copy = download_repository(url, tmp_path / "copy", env=s3_bucket.env)
    assert (copy.models, copy.files) == (["a", "b"], 6)
    assert local_tree(tmp_path / "copy") == local_tree(repo)
    with TemporaryDownload(url, env=s3_bucket.env, models=["b"]) as only:
        assert local_tree(only.path) == {f"b/{k}": v for k, v in local_tree(repo / "b").items()}


# ------------------------------------------------------------------------------ refusals
def refused(repo: Path, url: str, env: Dict[str, str], **options: Any) -> str:
    with pytest.raises(PublishError) as raised:
        publish(repo, url, env=env, **options)
    return str(raised.value)


FIX = (
    "Fix: run tritonpy export REPO OUT (it puts each environment archive into its model "
    "folder and names it through $$TRITON_MODEL_DIRECTORY), then publish OUT/model_repository"
)


@pytest.mark.parametrize(
    "value", ["/opt/envs/env.tar.gz", "env.tar.gz", "$$TRITON_MODEL_DIRECTORY/../env.tar.gz"]
)
def test_an_environment_outside_the_model_folder_is_refused(
    tmp_path: Path, s3_bucket: Any, value: str
) -> None:
    repo = tmp_path / "repo"
    model = python_model(repo, "m", value, **{"env.tar.gz": b"x"})
    message = refused(repo, s3_bucket.url("repo"), s3_bucket.env)
    assert message == (
        f"model 'm': {model / 'config.pbtxt'} sets EXECUTION_ENV_PATH to {value!r}; expected "
        "'$$TRITON_MODEL_DIRECTORY/<archive>' inside the model's folder: tritonserver copies "
        "each model folder alone out of the bucket, so no other path exists on the server. "
        f"{FIX}."
    )
    assert s3_bucket.keys() == []


def test_an_environment_folder_of_the_servers_own_disk_is_named_not_published(
    tmp_path: Path,
    s3_bucket: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``export --env-layout image``: EXECUTION_ENV_PATH is a folder the image holds, used
    in place; the bucket gets the model alone and the result says the folder must exist."""
    from tritonpy.cli import main

    repo = tmp_path / "repo"
    python_model(repo, "m", "/opt/tritonpy/envs/m_py3.10")
    result = publish(repo, s3_bucket.url("repo"), env=s3_bucket.env)
    assert result.uploaded == ["m/1/model.py", "m/config.pbtxt"]
    assert result.server_environments == {"m": "/opt/tritonpy/envs/m_py3.10"}
    assert json.loads(result.to_json())["server_environments"] == result.server_environments
    (repo / "m" / "1" / "model.py").write_text("# changed\n")
    for name, value in s3_bucket.env.items():
        monkeypatch.setenv(name, value)
    assert main(["publish", str(repo), s3_bucket.url("repo")]) == 0
    assert (
        "  m: environment /opt/tritonpy/envs/m_py3.10 must exist on every server (the "
        "image's), it is not in the bucket"
    ) in capsys.readouterr().out


def test_without_protobuf_the_environment_is_read_from_the_text(
    tmp_path: Path, s3_bucket: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The s3 extra alone has no protobuf: EXECUTION_ENV_PATH is found in the text."""
    from tritonpy._runtime.errors import MissingDependencyError
    from tritonpy.storage import _local

    def no_protobuf(text: str, source: str = "") -> Any:
        raise MissingDependencyError("reading config.pbtxt", ("google.protobuf",), (), None, "")

    monkeypatch.setattr(_local, "parse_config", no_protobuf)
    repo = tmp_path / "repo"
    model = python_model(repo, "m", "/opt/envs/env.tar.gz")
    config = model / "config.pbtxt"
    assert "sets EXECUTION_ENV_PATH to '/opt/envs/env.tar.gz'; expected" in refused(
        repo, s3_bucket.url("repo"), s3_bucket.env
    )
    # a commented-out parameter is no parameter; single quotes and no colon are protobuf text
    config.write_text('name: "m"\n# ' + ENV % "/opt/x.tar.gz")
    assert publish(repo, s3_bucket.url("repo"), env=s3_bucket.env, dry_run=True).models == ["m"]
    config.write_text("parameters {key:'EXECUTION_ENV_PATH' value{string_value:'/o.tar.gz'}}")
    assert "EXECUTION_ENV_PATH to '/o.tar.gz'" in refused(repo, s3_bucket.url("r"), s3_bucket.env)


def test_an_unreadable_config_naming_an_environment_is_refused(
    tmp_path: Path, s3_bucket: Any
) -> None:
    repo = tmp_path / "repo"
    model = python_model(repo, "m")
    (model / "config.pbtxt").write_text('parameters { key: "EXECUTION_ENV_PATH" value { ')
    message = refused(repo, s3_bucket.url("repo"), s3_bucket.env)
    assert message.startswith(f"{model / 'config.pbtxt'}: not a valid model configuration: ")
    assert message.endswith(
        "; tritonserver would refuse this model too: fix it (tritonpy check REPO names the "
        "field) before publishing"
    )


def test_a_missing_hidden_or_unpacked_environment_is_refused(
    tmp_path: Path, s3_bucket: Any
) -> None:
    repo, url, env = tmp_path / "repo", s3_bucket.url("repo"), s3_bucket.env
    model = python_model(repo, "m", ARCHIVE)
    where = f"model 'm': {model / 'config.pbtxt'} sets EXECUTION_ENV_PATH to '{ARCHIVE}'"
    assert refused(repo, url, env) == (
        f"{where}, but {model / 'env.tar.gz'} does not exist; expected the environment archive "
        f"there. Pack it (tritonpy pack-env {model}) or run tritonpy export REPO OUT (it puts "
        "each environment archive into its model folder and names it through "
        "$$TRITON_MODEL_DIRECTORY), then publish OUT/model_repository."
    )
    hidden = "$$TRITON_MODEL_DIRECTORY/.env.tar.gz"
    (model / "config.pbtxt").write_text(f'name: "m"\nbackend: "python"\n{ENV % hidden}')
    (model / ".env.tar.gz").write_bytes(b"x")
    assert f"{model / '.env.tar.gz'} is hidden (not published)" in refused(repo, url, env)
    (model / "config.pbtxt").write_text(f'name: "m"\nbackend: "python"\n{ENV % ARCHIVE}')
    (model / "env.tar.gz" / "bin").mkdir(parents=True)
    assert refused(repo, url, env).startswith(
        f"{where}, a folder; expected an archive (.tar.gz): a bucket keeps no file modes or "
        f"links, so an unpacked environment does not survive it. Pack it (tritonpy pack-env "
        f"{model}) or run tritonpy export REPO OUT"
    )
    assert s3_bucket.keys() == []


def test_names_the_endpoint_form_cannot_fetch_are_refused(tmp_path: Path, s3_bucket: Any) -> None:
    repo = tmp_path / "repo"
    model = python_model(repo, "m", **{"1__my labels.txt": b"x", "1__café.json": b"{}"})
    url = s3_bucket.url("repo")
    assert refused(repo, url, s3_bucket.env) == (
        f"cannot publish to {url}: 2 file name(s) hold characters tritonserver's S3 endpoint "
        "form cannot fetch (expected only letters, digits, '.', '-', '_' and '/'; it would "
        "read such a key from the wrong bucket, core@r24.10 s3.h):\n"
        f"  model 'm': {model / '1' / 'café.json'}\n"
        f"  model 'm': {model / '1' / 'my labels.txt'}\n"
        "Rename them (or their model folder)."
    )
    assert s3_bucket.keys() == []


def test_a_folder_without_models_and_bad_options_are_refused(
    tmp_path: Path, s3_bucket: Any
) -> None:
    url, env = s3_bucket.url("repo"), s3_bucket.env
    empty = tmp_path / "empty"
    write(empty, {".git/HEAD": b"ref", "README.md": b"#"})
    assert refused(empty, url, env) == (
        f"model repository {empty} holds no model folder; expected one folder per model "
        "(config.pbtxt, version folders): pass the repository folder (tritonpy export writes "
        "OUT/model_repository)"
    )
    model = python_model(tmp_path / "repo", "m")
    assert refused(model, url, env) == (
        f"{model} is a model folder (it holds config.pbtxt); expected the model repository "
        f"holding one folder per model: pass its parent ({model.parent}), with --model m to "
        "publish this model alone"
    )
    assert refused(tmp_path / "nope", url, env) == (
        f"model repository {tmp_path / 'nope'} is not a directory; expected the folder holding "
        "one folder per model (an export's model_repository/)"
    )
    assert refused(tmp_path / "repo", url, env, models=["m", "x"]) == (
        f"model(s) 'x' not in {tmp_path / 'repo'}; its models: m. Fix the --model name(s)."
    )
    assert refused(tmp_path / "repo", url, env, keep_versions=0) == (
        "keep_versions (--keep-versions) is 0; expected 1 or more (the versions to keep per "
        "model, the newest first)"
    )
    assert refused(tmp_path / "repo", "gs://bucket/models", env).startswith(
        "gs://bucket/models: tritonpy's tools support only s3:// repositories"
    )
    assert "bucket 'Models' is not a valid S3 bucket name" in refused(
        tmp_path / "repo", f"s3://{s3_bucket.endpoint}/Models/x", env
    )
    assert s3_bucket.keys() == []


# ------------------------------------------------------------------------ the store's answers
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_bucket_and_nothing_listening_are_named(tmp_path: Path, s3_bucket: Any) -> None:
    repo = tmp_path / "repo"
    python_model(repo, "m")
    gone = f"{s3_bucket.name}-gone"  # the bucket's own name first: a store's policy allows it
    url = f"s3://{s3_bucket.endpoint}/{gone}/repo"
    with pytest.raises(StorageError) as missing:
        publish(repo, url, env=s3_bucket.env)
    assert str(missing.value) == (
        f"cannot list {url}: bucket '{gone}' does not exist at http://{s3_bucket.endpoint}. "
        "Create it first (aws s3 mb), or fix the bucket's name in the URL."
    )
    port = _free_port()
    with pytest.raises(StorageError) as silent:
        publish(repo, f"s3://127.0.0.1:{port}/models/repo", env=s3_bucket.env)
    assert str(silent.value).startswith(
        f"cannot list s3://127.0.0.1:{port}/models/repo: no S3 store answers at "
        f"http://127.0.0.1:{port} (Could not connect to the endpoint URL"
    )
    assert str(silent.value).endswith(
        "Check the host and port in the URL (s3://HOST:PORT/BUCKET/PREFIX; "
        "s3://https://HOST:PORT/... for HTTPS) and that the store is running."
    )
    half = {"AWS_ACCESS_KEY_ID": "AKIAONLY"}
    with pytest.raises(StorageError) as lonely:
        publish(repo, s3_bucket.url("repo"), env=half)
    assert "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not" in str(lonely.value)


def test_refused_credentials_are_named_with_the_fix(tmp_path: Path, s3_bucket: Any) -> None:
    """SeaweedFS checks each request's signature and the key's rights: the bucket's own key
    writes, a key it does not know, a wrong secret and a read-only key are refused."""
    repo = tmp_path / "repo"
    python_model(repo, "m")
    url = s3_bucket.url("repo")
    assert publish(repo, url, env=s3_bucket.env).uploaded == [
        "m/1/model.py",
        "m/config.pbtxt",
    ]
    unknown = {**s3_bucket.env, "AWS_ACCESS_KEY_ID": "AKIANOSUCHKEY0000000"}
    wrong_secret = {**s3_bucket.env, "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    for env, code in ((unknown, "InvalidAccessKeyId"), (wrong_secret, "SignatureDoesNotMatch")):
        with pytest.raises(StorageError) as failed:
            publish(repo, url, env=env)
        assert str(failed.value) == (
            f"cannot list {url}: http://{s3_bucket.endpoint} refused the credentials ({code}). "
            "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_DEFAULT_REGION) of a key "
            "allowed to list the bucket."
        )
    (repo / "m" / "1" / "model.py").write_text("# changed\n")
    with pytest.raises(StorageError) as read_only:
        publish(repo, url, env=s3_bucket.reader_env)
    assert str(read_only.value) == (
        f"cannot write {url}/m/1/model.py: http://{s3_bucket.endpoint} refused the "
        "credentials (AccessDenied). Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and "
        "AWS_DEFAULT_REGION) of a key allowed to write the bucket."
    )
