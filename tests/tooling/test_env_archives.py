"""The environment archive's facts (tritonpy._tooling.env_archives): one light room that
pack-env, the check, serve and export read the same way."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

from tritonpy._tooling.env_archives import (
    RECORD_NAME,
    archive_name,
    build_key,
    contents_python,
    environment_python,
    named_python,
    recorded_python,
    resolve_env_path,
    write_record,
)


def _archive(path: Path, *members: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        for name in members:
            info = tarfile.TarInfo(name)
            archive.addfile(info)
    return path


def test_the_name_carries_the_python_both_ways() -> None:
    name = archive_name("preprocess", "3.10")
    assert name == "preprocess_py3.10.tar.gz"
    assert named_python(name) == "3.10"
    assert named_python("env.tar.gz") is None
    assert named_python("env_py3.10.tar.gz.part") is None


def test_the_record_written_is_the_record_read(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "deps.tar.gz", "lib/libpython3.9.so.1.0")
    write_record(tmp_path, archive, build_key({"python": "3.12"}), {"python": "3.12"})
    assert json.loads((tmp_path / RECORD_NAME).read_text())["archives"]["deps.tar.gz"]
    assert recorded_python(archive) == "3.12"
    (tmp_path / RECORD_NAME).write_text(json.dumps({"archives": {"deps.tar.gz": "3.12"}}))
    assert recorded_python(archive) is None  # a hand-edited record is not believed


def test_environment_python_reads_record_then_name_then_contents(tmp_path: Path) -> None:
    inside = _archive(tmp_path / "a" / "env_py3.10.tar.gz", "lib/libpython3.11.so")
    assert environment_python(inside) == "3.10"  # the name is cheaper than a scan
    assert contents_python(inside) == "3.11"  # what export trusts: the archive itself
    plain = _archive(tmp_path / "b" / "deps.tar.gz", "lib/libpython3.11.so")
    assert environment_python(plain) == "3.11"
    broken = tmp_path / "c" / "deps.tar.gz"
    broken.parent.mkdir()
    broken.write_bytes(b"not gzip")
    assert environment_python(broken) is None and contents_python(broken) is None
    assert environment_python(tmp_path / "missing.tar.gz") is None


def test_resolve_env_path_anchors_like_the_backend(tmp_path: Path) -> None:
    model = tmp_path / "repo" / "m"
    place = resolve_env_path("$$TRITON_MODEL_DIRECTORY/../../envs/e.tar.gz", model)
    assert (place.kind, place.inside_model_dir) == ("model", False)
    assert place.path == tmp_path / "envs" / "e.tar.gz"
    assert resolve_env_path("env.tar.gz", model).inside_model_dir


def test_serve_reads_the_facts_without_loading_envs_or_check() -> None:
    code = (
        "import sys, tritonpy.server._shadow; "
        "print(sorted(m for m in sys.modules if m.startswith(('tritonpy.envs', 'tritonpy.check'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
