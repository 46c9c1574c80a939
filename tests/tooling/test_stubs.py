"""Stub provisioning: wheel (24.10) with the DT_NEEDED check, cache hits, the native build
driver with a stand-in build script, refusals, the build_stub.sh plan (dry run)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from pathlib import Path
from typing import List

import pytest

from tritonpy.server import find_wheel_installation
from tritonpy.stubs import provision as provision_module
from tritonpy.stubs.build import docker_command, native_build_command
from tritonpy.stubs.cache import STUB_NAME, StubCache, machine_arch
from tritonpy.stubs.cli import add_parser
from tritonpy.stubs.elf import ElfError, check_libpython, read_dynamic, set_runpath
from tritonpy.stubs.provision import StubError, provision_stub

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "build_stub.sh"


def _model(tmp_path: Path, name: str = "m") -> Path:
    model = tmp_path / name
    model.mkdir()
    (model / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
    return model


def test_elf_reader_on_the_wheel_stubs() -> None:
    wheel = find_wheel_installation()
    for xy in ("3.10", "3.12"):
        info = check_libpython(wheel.stub(xy), xy)
        assert info.libpythons == [f"libpython{xy}.so.1.0"]
        assert info.machine == machine_arch()
    with pytest.raises(ElfError, match=r"needs libpython3.10.so.1.0; expected exactly "):
        check_libpython(wheel.stub("3.10"), "3.11")


def test_runpath_rewrite_keeps_the_binary_working(tmp_path: Path) -> None:
    binary = Path(os.path.realpath(shutil.which("readelf") or "/usr/bin/readelf"))
    copy = tmp_path / "python3.10"
    source = next(Path(os.path.expanduser("~/.pyenv/versions")).glob("3.10.*/bin/python3.10"))
    shutil.copy2(source, copy)
    assert read_dynamic(copy).runpath not in (None, "$ORIGIN/../lib")
    assert set_runpath(copy, "$ORIGIN/../lib")
    assert read_dynamic(copy).runpath == "$ORIGIN/../lib"
    shown = subprocess.run([str(binary), "-d", str(copy)], capture_output=True, text=True).stdout
    assert "[$ORIGIN/../lib]" in shown
    assert not set_runpath(copy, "/a/much/longer/runpath/than/the/current/one/lib")
    assert check_libpython(copy, "3.10").needed[0] == "libpython3.10.so.1.0"


def test_wheel_then_cache(tmp_path: Path) -> None:
    cache = StubCache(tmp_path / "cache")
    first = provision_stub(
        _model(tmp_path, "a"), triton_version="24.10", python="3.10", cache=cache
    )
    assert first.source == "wheel" and first.path == tmp_path / "a" / STUB_NAME
    assert os.access(first.path, os.X_OK)
    assert check_libpython(first.path, "3.10").libpythons == ["libpython3.10.so.1.0"]
    assert cache.get("24.10", "3.10") is not None
    assert cache.metadata("24.10", "3.10")["source"] == "wheel"
    second = provision_stub(
        _model(tmp_path, "b"), triton_version="24.10", python="3.10", cache=cache
    )
    assert second.source == "cache"
    assert second.path.read_bytes() == first.path.read_bytes()


def test_python_comes_from_the_archive_name(tmp_path: Path) -> None:
    model = _model(tmp_path)
    (model / "m_py3.12.tar.gz").write_bytes(b"")
    result = provision_stub(model, triton_version="24.10", cache=StubCache(tmp_path / "c"))
    assert result.python == "3.12"
    assert check_libpython(result.path, "3.12")


def test_other_release_is_not_taken_from_the_wheel(tmp_path: Path) -> None:
    model = _model(tmp_path)
    with pytest.raises(StubError) as caught:
        provision_stub(
            model,
            triton_version="24.11",
            python="3.10",
            sources=("cache", "wheel"),
            cache=StubCache(tmp_path / "c"),
        )
    message = str(caught.value)
    assert "cache: no stub in" in message
    assert "wheel: the wheel bundles release 24.10 only, not 24.11" in message
    assert "--build-arg TRITON_VERSION=24.11 --build-arg PYTHON_VERSION=3.10" in message
    assert not (model / STUB_NAME).exists()
    # the fixes name files that exist in this installation (shipped in the wheel), not
    # paths relative to a checkout a pip user does not have
    script = message.split("bash ", 1)[1].split(" ", 1)[0]
    assert Path(script).is_absolute() and Path(script).name == "build_stub.sh"
    assert Path(script).is_file()
    dockerfile = message.split("docker build -f ", 1)[1].split(" ", 1)[0]
    assert Path(dockerfile).is_absolute() and Path(dockerfile).is_file()


def _fake_build_script(tmp_path: Path, stub_python: str) -> Path:
    source = find_wheel_installation().stub(stub_python)
    script = tmp_path / "fake_build_stub.sh"
    script.write_text(
        "#!/usr/bin/env bash\nset -e\n"
        f'echo "$@" > {tmp_path}/args.txt\n'
        'while [ $# -gt 0 ]; do [ "$1" = --output ] && out="$2"; shift; done\n'
        f'cp {source} "$out"\n'
    )
    return script


def test_native_build_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provision_module, "missing_build_tools", lambda need_git: [])
    script = _fake_build_script(tmp_path, "3.9")
    sources = tmp_path / "sources"
    result = provision_stub(
        _model(tmp_path),
        triton_version="24.11",
        python="3.9",
        sources=("cache", "native"),
        cache=StubCache(tmp_path / "c"),
        build_script=script,
        source_dir=sources,
    )
    assert result.source == "native"
    args = (tmp_path / "args.txt").read_text().split()
    assert args[:4] == ["--python", "3.9", "--triton-version", "24.11"]
    assert args[args.index("--source-dir") + 1] == str(sources)
    assert StubCache(tmp_path / "c").get("24.11", "3.9") is not None


def test_native_stub_for_the_wrong_python_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provision_module, "missing_build_tools", lambda need_git: [])
    monkeypatch.setattr(provision_module, "docker_available", lambda: (False, "no Docker engine"))
    model = _model(tmp_path)
    with pytest.raises(StubError) as caught:
        provision_stub(
            model,
            triton_version="24.11",
            python="3.9",
            sources=("native", "docker"),
            cache=StubCache(tmp_path / "c"),
            build_script=_fake_build_script(tmp_path, "3.11"),
        )
    assert "native: triton_python_backend_stub at" in str(caught.value)
    assert "needs libpython3.11.so.1.0; expected exactly libpython3.9.so.1.0" in str(caught.value)
    assert "docker: no Docker engine" in str(caught.value)
    assert not (model / STUB_NAME).exists()


def test_stub_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    parser = argparse.ArgumentParser(prog="tritonpy")
    add_parser(parser.add_subparsers())
    model = _model(tmp_path)
    args = parser.parse_args(
        ["stub", str(model), "--triton-version", "24.10", "--python", "3.11", "--source", "wheel"]
    )
    assert args.func(args) == 0
    assert capsys.readouterr().out.strip().endswith("from wheel)")
    args = parser.parse_args(["stub", str(model), "--triton-version", "24.10"])
    assert args.func(args) == 1
    assert "Pass --python X.Y" in capsys.readouterr().err


# ------------------------------------------------------------------ build_stub.sh, its plan
def _plan(*args: str) -> List[str]:
    done = subprocess.run(
        ["bash", str(SCRIPT), *args, "--dry-run"], capture_output=True, text=True, check=True
    )
    return [line[2:] for line in done.stdout.splitlines() if line.startswith("+ ")]


def test_build_plan_offline_from_checkouts(tmp_path: Path) -> None:
    for repo in ("python_backend", "common", "core", "backend", "pybind11", "dlpack", "googletest"):
        (tmp_path / "src" / repo).mkdir(parents=True)
    python = "/opt/py/bin/python3.12"
    plan = _plan(
        "--python",
        "3.12",
        "--triton-version",
        "24.10",
        "--source-dir",
        str(tmp_path / "src"),
        "--python-path",
        python,
        "--boost-dir",
        "/usr/include",
        "--build-dir",
        "/b",
        "--output",
        "/o/stub",
        "--jobs",
        "4",
    )
    src = tmp_path / "src"
    assert plan[0] == " ".join(
        [
            "cmake",
            "-S",
            f"{src}/python_backend",
            "-B",
            "/b/build",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DTRITON_ENABLE_GPU=OFF",
            "-DTRITON_BACKEND_REPO_TAG=r24.10",
            "-DTRITON_COMMON_REPO_TAG=r24.10",
            "-DTRITON_CORE_REPO_TAG=r24.10",
            "-DCMAKE_SKIP_RPATH=ON",
            f"-DPYTHON_EXECUTABLE={python}",
            f"-DPython3_EXECUTABLE={python}",
            f"-DPython_EXECUTABLE={python}",
            f"-DFETCHCONTENT_SOURCE_DIR_REPO-COMMON={src}/common",
            f"-DFETCHCONTENT_SOURCE_DIR_REPO-CORE={src}/core",
            f"-DFETCHCONTENT_SOURCE_DIR_REPO-BACKEND={src}/backend",
            f"-DFETCHCONTENT_SOURCE_DIR_PYBIND11={src}/pybind11",
            f"-DFETCHCONTENT_SOURCE_DIR_DLPACK={src}/dlpack",
            f"-DFETCHCONTENT_SOURCE_DIR_GOOGLETEST={src}/googletest",
            "-DFETCHCONTENT_FULLY_DISCONNECTED=ON",
            "-DCMAKE_PROJECT_tritonpythonbackend_INCLUDE=/b/tritonpy-local-boost.cmake",
        ]
    )
    assert plan[1] == ("cmake --build /b/build --target triton-python-backend-stub --parallel 4")
    assert plan[-1] == "install -m 0755 /b/build/triton_python_backend_stub /o/stub"


def test_build_plan_online_clones_the_release_branch() -> None:
    plan = _plan("--python", "3.11", "--triton-version", "r25.01", "--build-dir", "/b")
    clones = [line for line in plan if line.startswith("git clone")]
    assert [c.split()[-2].rsplit("/", 1)[-1] for c in clones] == [
        "python_backend.git",
        "common.git",
        "core.git",
        "backend.git",
    ]
    assert all("--branch r25.01" in c for c in clones)
    cmake = next(line for line in plan if line.startswith("cmake -S"))
    assert "FULLY_DISCONNECTED" not in cmake and "_INCLUDE=" not in cmake


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--triton-version", "24.10"], "--python X.Y is required"),
        (["--python", "3.10"], "--triton-version YY.MM is required"),
        (["--python", "3.10", "--triton-version", "24.10", "--gpu"], "unknown argument '--gpu'"),
        (
            ["--python", "3.10", "--triton-version", "24.10", "--source-dir", "/nope"],
            "--source-dir /nope does not exist",
        ),
    ],
)
def test_build_script_argument_errors(args: List[str], message: str) -> None:
    done = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True)
    assert done.returncode == 2
    assert message in done.stderr


def test_driver_and_docker_commands() -> None:
    argv = native_build_command(
        SCRIPT,
        python="3.10",
        release="24.10",
        output=Path("/o"),
        source_dir="/s",
        python_path="/p",
        jobs=2,
    )
    assert argv == [
        "bash",
        str(SCRIPT),
        "--python",
        "3.10",
        "--triton-version",
        "24.10",
        "--output",
        "/o",
        "--source-dir",
        "/s",
        "--python-path",
        "/p",
        "--jobs",
        "2",
    ]
    docker = docker_command("24.10", "3.12", Path("/out"))
    assert docker == [
        "docker",
        "build",
        "-f",
        str(ROOT / "Dockerfile.stub"),
        "--build-arg",
        "TRITON_VERSION=24.10",
        "--build-arg",
        "PYTHON_VERSION=3.12",
        "--output",
        "type=local,dest=/out",
        str(ROOT / "scripts"),
    ]
    dockerfile = (ROOT / "Dockerfile.stub").read_text()
    assert "FROM nvcr.io/nvidia/tritonserver:${TRITON_VERSION}-py3" in dockerfile
    assert "COPY build_stub.sh" in dockerfile
