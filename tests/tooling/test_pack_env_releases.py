"""pack-env for a target release: the archive rules of 26.06 (checked against libarchive itself,
called with the flags python_backend r26.06 src/pb_env.cc ExtractTarFile passes), conda
activate.d hooks that 25.08 and later do not run, names 25.08 refuses, and one real local
build for 26.07 verified the way that release starts the stub (no ``source bin/activate``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import os
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, Optional, Tuple

import pytest

from tritonpy._tooling.release_facts import facts_for
from tritonpy._tooling.releases import TritonRelease
from tritonpy.envs import EnvError, PackResult, Reporter, pack_env
from tritonpy.envs import _verify as _verify_module
from tritonpy.envs._pack import _release_findings
from tritonpy.envs._release_rules import inspect_archive

# libarchive's archive.h / archive_entry.h values
_OK, _EOF = 0, 1
_EXTRACT_TIME = 0x0004
_SECURE_SYMLINKS = 0x0100
_SECURE_NODOTDOT = 0x0200
_SECURE_NOABSOLUTEPATHS = 0x10000
#: what r26.06's ExtractTarFile passes to archive_write_disk_set_options
R2606_FLAGS = _EXTRACT_TIME | _SECURE_NODOTDOT | _SECURE_NOABSOLUTEPATHS | _SECURE_SYMLINKS


def _libarchive() -> Optional[ctypes.CDLL]:
    name = ctypes.util.find_library("archive")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    lib.archive_read_new.restype = ctypes.c_void_p
    lib.archive_write_disk_new.restype = ctypes.c_void_p
    lib.archive_error_string.restype = ctypes.c_char_p
    for function in (
        "archive_read_support_filter_gzip",
        "archive_read_support_format_tar",
        "archive_read_free",
        "archive_write_free",
    ):
        getattr(lib, function).argtypes = [ctypes.c_void_p]
    lib.archive_error_string.argtypes = [ctypes.c_void_p]
    lib.archive_write_disk_set_options.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.archive_read_open_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.archive_read_next_header.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.archive_read_extract2.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return lib


LIBARCHIVE = _libarchive()
needs_libarchive = pytest.mark.skipif(
    LIBARCHIVE is None, reason="libarchive (Triton's own extractor) is not installed here"
)


def triton_2606_extract(archive: Path, destination: Path) -> Optional[str]:
    """Extract ``archive`` into ``destination`` as r26.06's stub launcher does; the
    libarchive error that stopped it, or None."""
    lib = LIBARCHIVE
    assert lib is not None
    destination.mkdir(parents=True, exist_ok=True)
    reader, writer = lib.archive_read_new(), lib.archive_write_disk_new()
    lib.archive_write_disk_set_options(writer, R2606_FLAGS)
    lib.archive_read_support_filter_gzip(reader)
    lib.archive_read_support_format_tar(reader)
    here = os.getcwd()
    os.chdir(destination)  # ExtractTarFile extracts relative to dst_path, as here
    try:
        if lib.archive_read_open_filename(reader, str(archive).encode(), 10240) != _OK:
            return str(lib.archive_error_string(reader))
        entry = ctypes.c_void_p()
        while True:
            status = lib.archive_read_next_header(reader, ctypes.byref(entry))
            if status == _EOF:
                return None
            if status != _OK or lib.archive_read_extract2(reader, entry, writer) != _OK:
                return (lib.archive_error_string(writer) or b"").decode() or "failed"
    finally:
        os.chdir(here)
        lib.archive_read_free(reader)
        lib.archive_write_free(writer)


def _archive(path: Path, members: Dict[str, Any]) -> Path:
    """``name -> bytes`` (a file), ``("link", target)`` (a symbolic link), ``"dir"``."""
    with tarfile.open(path, "w:gz") as tar:
        for name, what in members.items():
            info = tarfile.TarInfo(name)
            if what == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif isinstance(what, tuple):
                info.type, info.linkname = tarfile.SYMTYPE, what[1]
                tar.addfile(info)
            else:
                info.size = len(what)
                tar.addfile(info, io.BytesIO(what))
    return path


SAFE = {
    "bin": "dir",
    "bin/python3.10": b"\x7fELF",
    "bin/python3": ("link", "python3.10"),
    "lib": "dir",
    "lib64": ("link", "lib"),  # a venv's own link, kept as a link
    "lib/libpython3.10.so.1.0": b"",
}
UNSAFE: Dict[str, Dict[str, Any]] = {
    "parent": {"../evil": b"x"},
    "absolute": {"/tmp/evil": b"x"},
    "through a link": {"lib": "dir", "out": ("link", "lib"), "out/file": b"x"},
}


@needs_libarchive
def test_a_safe_layout_passes_both_the_rule_and_the_2606_extractor(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "safe.tar.gz", SAFE)
    assert inspect_archive(str(archive)).unsafe == []
    assert triton_2606_extract(archive, tmp_path / "out") is None
    assert os.readlink(tmp_path / "out" / "lib64") == "lib"


@needs_libarchive
@pytest.mark.parametrize("kind", sorted(UNSAFE))
def test_what_the_rule_refuses_the_2606_extractor_refuses(tmp_path: Path, kind: str) -> None:
    archive = _archive(tmp_path / "bad.tar.gz", UNSAFE[kind])
    assert len(inspect_archive(str(archive)).unsafe) == 1
    assert triton_2606_extract(archive, tmp_path / "out") is not None
    assert not (tmp_path / "evil").exists()


def _build(release: str, archive: Path) -> Any:
    # what _release_findings reads of a build: the release and the archive's final name
    return SimpleNamespace(release=TritonRelease.parse(release), archive=archive)


def test_unsafe_members_fail_from_26_06_and_warn_before(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "env.tar.gz", UNSAFE["through a link"])
    where = facts_for("26.06").cites("refuses_unsafe_archives")
    with pytest.raises(EnvError, match=rf"(?s)Triton 26.06 refuses \({where}.*'out/file'.*'out'"):
        _release_findings(_build("26.06", archive), archive, Reporter())
    (warning,) = _release_findings(_build("26.05", archive), archive, Reporter())
    assert "Triton 26.05 accepts, but releases from 26.06 refuse" in warning


HOOK = b'export GDAL_DATA="${CONDA_PREFIX}/share/gdal"\nPROJ_DATA=$CONDA_PREFIX/share/proj\n'


def test_activation_hooks_warn_from_25_08(tmp_path: Path) -> None:
    archive = _archive(
        tmp_path / "env.tar.gz", {**SAFE, "etc/conda/activate.d/gdal-activate.sh": HOOK}
    )
    assert inspect_archive(str(archive)).hooks == {
        "etc/conda/activate.d/gdal-activate.sh": ["GDAL_DATA", "PROJ_DATA"]
    }
    assert _release_findings(_build("25.07", archive), archive, Reporter()) == []
    (warning,) = _release_findings(_build("25.08", archive), archive, Reporter())
    where = facts_for("25.08").cites("sources_env_activate")
    assert "etc/conda/activate.d/gdal-activate.sh (sets GDAL_DATA, PROJ_DATA)" in warning
    assert f"Triton 25.08 no longer sources the environment's bin/activate ({where})" in warning
    assert "os.environ['GDAL_DATA'] = ..." in warning and "--triton-version 25.07" in warning


def test_a_name_25_08_refuses_stops_pack_env_before_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing may be built for a refused name")

    monkeypatch.setattr("tritonpy.envs._pack._build_archive", refuse)
    model = tmp_path / "a|b"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('name: "a|b"\nbackend: "python"\n')
    where = facts_for("25.08").cites("refuses_shell_names")
    with pytest.raises(EnvError, match=rf"model name 'a\|b' holds \|: Triton 25.08 .*\({where}\)"):
        pack_env(model, triton_version="25.08", builder="local", stub="never")


# --------------------------------------------------------------- one real build, for 26.07


class Notes(Reporter):
    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)


@pytest.fixture(scope="module")
def packed_2607(tmp_path_factory: pytest.TempPathFactory) -> Tuple[PackResult, Notes]:
    model = tmp_path_factory.mktemp("r2607") / "version_model"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('name: "version_model"\nbackend: "python"\n')
    (model / "requirements.txt").write_text("numpy<2\n")
    notes = Notes()
    real = _verify_module._run_check

    def run_check(*args: Any) -> Any:  # how the verification started the env's python
        notes.notes.append(f"sources_activate={args[5]}")
        return real(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_verify_module, "_run_check", run_check)
        result = pack_env(
            model,
            triton_version="26.07",
            python="3.10",
            builder="local",
            stub="never",
            compress_level=1,
            reporter=notes,
        )
    return result, notes


@needs_libarchive
def test_a_real_archive_meets_2606_and_runs_without_activate(
    packed_2607: Tuple[PackResult, Notes], tmp_path: Path
) -> None:
    result, notes = packed_2607
    # verified: its python started as 26.07's stub starts (PATH and LD_LIBRARY_PATH only)
    assert result.verify is not None and result.verify.python.startswith("3.10")
    assert "sources_activate=False" in notes.notes
    assert result.warnings == [] and not any("warning" in n for n in notes.notes)
    findings = inspect_archive(str(result.archive))
    assert (findings.unsafe, findings.hooks) == ([], {})
    with tarfile.open(result.archive) as tar:
        assert any(m.issym() for m in tar)  # it does hold links (bin/python3 ...)
    assert triton_2606_extract(result.archive, tmp_path / "env") is None
    assert (tmp_path / "env" / "bin" / "python3").exists()


def test_the_import_check_starts_the_env_as_the_release_does(tmp_path: Path) -> None:
    """A variable only bin/activate sets is there up to 25.07 and gone from 25.08, in the
    import check export and check run inside an environment, as in the stub."""
    from mini_envs import mini_env

    from tritonpy.envs import import_in_environment

    env = mini_env(tmp_path / "env")
    # the empty libpython the check's layout rules want would shadow the real one on the
    # LD_LIBRARY_PATH 25.08 sets (<env>/lib); this python needs none of its own
    (env / "lib" / f"libpython{sys.version_info[0]}.{sys.version_info[1]}.so.1.0").unlink()
    with (env / "bin" / "activate").open("a") as script:
        script.write("\nexport GDAL_DATA=/opt/gdal\n")
    model = tmp_path / "m" / "1" / "model.py"
    model.parent.mkdir(parents=True)
    model.write_text(
        "import os\nif 'GDAL_DATA' not in os.environ:\n    raise ImportError('no GDAL_DATA')\n"
        "class TritonPythonModel:\n    pass\n"
    )
    up_to_25_07 = facts_for("25.07").sources_env_activate
    from_25_08 = facts_for("25.08").sources_env_activate
    assert import_in_environment(env, model, sources_activate=up_to_25_07).ok
    found = import_in_environment(env, model, sources_activate=from_25_08)
    assert not found.ok and "no GDAL_DATA" in found.error
