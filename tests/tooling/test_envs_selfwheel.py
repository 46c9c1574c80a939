"""The wheel of the running tritonpy that pack-env installs into every environment: the same
files and version, reproducible, cached by content, installable offline."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import zipfile
from pathlib import Path

import tritonpy
from tritonpy.envs import Reporter
from tritonpy.envs._interpreters import find_interpreter
from tritonpy.envs._selfwheel import build_wheel, running_tritonpy, self_wheel

PACKAGE = Path(tritonpy.__file__).resolve().parent


def _record(archive: zipfile.ZipFile) -> dict[str, str]:
    info = f"tritonpy-{tritonpy.__version__}.dist-info"
    rows = archive.read(f"{info}/RECORD").decode().splitlines()
    return {row.split(",")[0]: row.split(",")[1] for row in rows}


def _snapshot(tmp_path: Path) -> Path:
    """A copy of the package: the work tree may change while a test runs."""
    copy = tmp_path / "tritonpy"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_wheel_holds_the_running_package_files(tmp_path: Path) -> None:
    package = _snapshot(tmp_path)
    runtime = running_tritonpy(package)
    wheel = build_wheel(runtime, tmp_path / runtime.wheel_name)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        for arcname, path in runtime.files:
            assert archive.read(arcname) == path.read_bytes(), arcname
        record = _record(archive)
        metadata = archive.read(f"tritonpy-{tritonpy.__version__}.dist-info/METADATA").decode()
        for name in names:
            if name.endswith("/RECORD"):
                continue
            digest = hashlib.sha256(archive.read(name)).digest()
            assert (
                record[name] == "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            )
    on_disk = {
        f"tritonpy/{p.relative_to(package).as_posix()}"
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    assert {n for n in names if n.startswith("tritonpy/")} == on_disk
    assert "tritonpy/envs/_selfwheel.py" in on_disk and "tritonpy/py.typed" in on_disk
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "Name: tritonpy\n" in metadata
    assert f"\nVersion: {tritonpy.__version__}\n" in metadata
    assert wheel.name == f"tritonpy-{tritonpy.__version__}-py3-none-any.whl"


def test_wheel_is_reproducible_and_cached(tmp_path: Path) -> None:
    package = _snapshot(tmp_path)
    runtime = running_tritonpy(package)
    first = build_wheel(runtime, tmp_path / "a.whl").read_bytes()
    second = build_wheel(running_tritonpy(package), tmp_path / "b.whl").read_bytes()
    assert first == second
    cached = self_wheel(Reporter(), runtime=runtime, cache_dir=tmp_path / "cache")
    assert cached.parent.name == runtime.digest[:24]
    assert cached.read_bytes() == first
    mtime = cached.stat().st_mtime_ns
    again = running_tritonpy(package)
    assert self_wheel(Reporter(), runtime=again, cache_dir=tmp_path / "cache") == cached
    assert cached.stat().st_mtime_ns == mtime  # reused, not rebuilt


def test_digest_follows_the_package_files(tmp_path: Path) -> None:
    copy = _snapshot(tmp_path)
    before = running_tritonpy(copy)
    assert before.digest == running_tritonpy(copy).digest
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"compiled")
    assert running_tritonpy(copy).digest == before.digest  # caches do not count
    (copy / "envs" / "spec.py").write_text("# changed\n", encoding="utf-8")
    assert running_tritonpy(copy).digest != before.digest


def test_wheel_installs_offline_into_another_python(tmp_path: Path) -> None:
    base = find_interpreter("3.10")
    subprocess.run([str(base.executable), "-m", "venv", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    package = _snapshot(tmp_path)
    runtime = running_tritonpy(package)
    wheel = self_wheel(Reporter(), runtime=runtime, cache_dir=tmp_path / "cache")
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    shown = subprocess.run(
        [
            str(python),
            "-I",
            "-c",
            "import importlib.metadata as m, sys; d = m.distribution('tritonpy'); "
            "print(d.version); print(d.locate_file('tritonpy/_runtime/model.py'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert shown[0] == tritonpy.__version__
    assert Path(shown[1]).read_bytes() == (package / "_runtime" / "model.py").read_bytes()
