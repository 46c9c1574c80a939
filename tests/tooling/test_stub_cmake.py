"""Native builds of releases that need a newer CMake (25.08 on: >= 3.31.8) and sources kept
per release: build_stub.sh's --cmake and CMake-4 policy floor, tritonpy's choice of cmake, the
``triton-rYY.MM/`` folder of a source directory. Stand-in cmake scripts, no compiling."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from tritonpy.stubs import _build as build_module
from tritonpy.stubs import _provision as provision_module
from tritonpy.stubs._build import NativeBuild, build_inputs, cmake_version, find_cmake
from tritonpy.stubs._provision import StubError, provision_stub, release_sources

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "build_stub.sh"
ARCHIVES = ("python_backend", "common", "core", "backend")


def _fake_cmake(directory: Path, version: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    cmake = directory / "cmake"
    cmake.write_text(f'#!/bin/sh\necho "cmake version {version}"\n')
    cmake.chmod(0o755)
    return cmake


def _archives(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in ARCHIVES:
        (folder / f"{name}.tar.gz").write_bytes(name.encode())
    return folder


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    argv = ["bash", str(SCRIPT), "--python", "3.11", "--triton-version", "26.02", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_the_given_cmake_runs_the_build(tmp_path: Path) -> None:
    cmake = _fake_cmake(tmp_path / "bin", "3.31.10")
    done = _script("--cmake", str(cmake), "--build-dir", "/b", "--dry-run")
    assert done.returncode == 0, done.stderr
    runs: List[str] = [line for line in done.stdout.splitlines() if "cmake" in line.split()[1]]
    assert runs[0].startswith(f"+ {cmake} -S ") and runs[1].startswith(f"+ {cmake} --build /b/")
    assert len(runs) == 2  # no other cmake (PATH's 3.25 here) runs
    assert "CMAKE_POLICY_VERSION_MINIMUM" not in done.stdout  # 3.x needs no policy floor


def test_cmake_4_gets_the_policy_floor_in_its_inputs(tmp_path: Path) -> None:
    cmake = _fake_cmake(tmp_path / "bin", "4.0.2")
    inputs = build_inputs(
        NativeBuild(SCRIPT, "3.11", "26.02", _archives(tmp_path / "a"), None, cmake)
    )
    assert inputs["cmake"] == "4.0.2"
    assert inputs["flags"].endswith(" -DCMAKE_POLICY_VERSION_MINIMUM=3.5")
    older = _fake_cmake(tmp_path / "old", "3.31.8")
    same = build_inputs(
        NativeBuild(SCRIPT, "3.11", "26.02", _archives(tmp_path / "b"), None, older)
    )
    assert "POLICY" not in same["flags"] and same["release"] == "26.02"


def test_a_cmake_too_old_for_the_release_is_named_with_the_fix(tmp_path: Path) -> None:
    cmake = _fake_cmake(tmp_path / "bin", "3.25.1")
    done = _script("--cmake", str(cmake), "--build-dir", str(tmp_path / "b"))
    assert done.returncode == 2
    assert (
        f"cmake 3.25.1 ({cmake}) is too old for release 26.02: need >= 3.31.8 "
        "(pip install 'cmake>=3.31.8,<4' and pass --cmake, or put it first on PATH)"
    ) in done.stderr


def test_find_cmake_takes_the_venvs_when_paths_is_too_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_cmake(tmp_path / "path", "3.25.1")
    venv = _fake_cmake(tmp_path / "venv" / "bin", "3.31.10")
    monkeypatch.setenv("PATH", f"{tmp_path / 'path'}:/usr/bin:/bin")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    assert cmake_version(venv) == (3, 31, 10)
    assert find_cmake((3, 31, 8)) == venv
    assert find_cmake((3, 17)) is None  # PATH's is enough: keep it (and 24.10's cache key)
    assert find_cmake((3, 32)) is None  # none is enough: the script names the fix
    _fake_cmake(tmp_path / "path", "3.31.8")
    assert find_cmake((3, 31, 8)) is None
    assert cmake_version(tmp_path / "missing") is None


def test_a_folder_of_releases_gives_each_release_its_own(tmp_path: Path) -> None:
    (tmp_path / "triton-r26.02").mkdir()
    (tmp_path / "r24.10").mkdir()
    assert release_sources(tmp_path, "26.02") == tmp_path / "triton-r26.02"
    assert release_sources(tmp_path, "24.10") == tmp_path / "r24.10"
    assert release_sources(tmp_path, "25.01") == tmp_path  # the sources of one release
    assert release_sources(None, "26.02") is None


def test_the_native_source_builds_from_the_releases_folder_with_the_found_cmake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _archives(tmp_path / "sources" / "triton-r26.02")
    cmake = _fake_cmake(tmp_path / "venv" / "bin", "3.31.10")
    seen: List[NativeBuild] = []

    def inputs(build: NativeBuild) -> object:
        seen.append(build)
        raise build_module.ToolError("stop before building")

    monkeypatch.setattr(provision_module, "find_cmake", lambda minimum: cmake)
    monkeypatch.setattr(provision_module, "build_inputs", inputs)
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    with pytest.raises(StubError, match="native: stop before building"):
        provision_stub(
            model, triton_version="26.02", python="3.11", sources=("native",),
            cache=provision_module.StubCache(tmp_path / "cache"),
            source_dir=tmp_path / "sources",
        )  # fmt: skip
    assert [(b.source_dir, b.cmake, b.release) for b in seen] == [
        (tmp_path / "sources" / "triton-r26.02", cmake, "26.02")
    ]
    assert seen[0].argv()[-2:] == ["--cmake", str(cmake)]
