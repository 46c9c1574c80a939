"""Archive safety, atomic placement (Ctrl-C mid-write), the rebuild record."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Any, Dict

import pytest

from tritonpy._tooling.archives import check_members, safe_extract, staging_file, write_archive
from tritonpy._tooling.env_archives import build_key, is_up_to_date, read_record, write_record
from tritonpy.config import load_config
from tritonpy.envs import ArchiveError, Reporter, pack_env, verify_archive
from tritonpy.envs import _pack as pack_module


def _tar(path: Path, *members: tarfile.TarInfo) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            data = b"x" if member.isfile() else None
            if data is not None:
                member.size = len(data)
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def _link(name: str, target: str, *, hard: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    return info


def test_relative_members_and_inner_links_pass(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "ok.tar.gz",
        _file("bin/python3.10"),
        _link("bin/python3", "python3.10"),
        _link("lib/python3.10/site-packages/x", "../../../bin/python3"),
        _file("./lib/libpython3.10.so.1.0"),
    )
    names = check_members(archive)
    assert "lib/libpython3.10.so.1.0" in names
    safe_extract(archive, tmp_path / "out")
    assert (tmp_path / "out" / "bin" / "python3").is_symlink()


@pytest.mark.parametrize(
    ("member", "why"),
    [
        (_file("/etc/passwd"), "absolute path"),
        (_file("bin/../../evil"), "'..' component"),
        (_link("bin/python3", "/usr/bin/python3"), "absolute path '/usr/bin/python3'"),
        (_link("lib/x", "../../outside"), "pointing outside"),
        (_link("bin/hard", "../etc/shadow", hard=True), "pointing outside"),
    ],
)
def test_unsafe_members_are_refused(tmp_path: Path, member: tarfile.TarInfo, why: str) -> None:
    archive = _tar(tmp_path / "bad.tar.gz", _file("bin/activate"), member)
    with pytest.raises(ArchiveError, match=why):
        check_members(archive)
    with pytest.raises(ArchiveError):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_device_members_are_refused(tmp_path: Path) -> None:
    device = tarfile.TarInfo("dev/null")
    device.type = tarfile.CHRTYPE
    with pytest.raises(ArchiveError, match="device"):
        check_members(_tar(tmp_path / "dev.tar.gz", device))


def test_incomplete_environment_is_refused_before_unpacking(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "env.tar.gz", _file("bin/python3"), _file("lib/python3.10/os.py"))
    with pytest.raises(ArchiveError, match=r"lacks bin/activate, lib/libpython3.10.so\*"):
        verify_archive(archive, "3.10")


def test_write_archive_members_are_relative(tmp_path: Path) -> None:
    source = tmp_path / "env"
    (source / "bin").mkdir(parents=True)
    (source / "bin" / "python3.10").write_text("#")
    (source / "bin" / "python3").symlink_to("python3.10")
    out = write_archive(source, tmp_path / "env.tar.gz", reporter=Reporter())
    with tarfile.open(out) as tar:
        names = sorted(m.name for m in tar.getmembers())
        link = tar.getmember("bin/python3")
    assert names == ["bin", "bin/python3", "bin/python3.10"]
    assert link.issym() and link.linkname == "python3.10"


def test_staging_file_is_removed_on_ctrl_c(tmp_path: Path) -> None:
    target = tmp_path / "env.tar.gz"
    with pytest.raises(KeyboardInterrupt), staging_file(target) as partial:
        partial.write_bytes(b"half")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_record_detects_changes(tmp_path: Path) -> None:
    archive = tmp_path / "env_py3.10.tar.gz"
    archive.write_bytes(b"archive")
    key = build_key({"spec": "a", "python": "3.10", "release": "24.10"})
    assert not is_up_to_date(tmp_path, archive, key)
    write_record(tmp_path, archive, key, {"python": "3.10"})
    assert is_up_to_date(tmp_path, archive, key)
    assert read_record(tmp_path)[archive.name]["python"] == "3.10"
    assert not is_up_to_date(tmp_path, archive, build_key({"spec": "b"}))
    archive.write_bytes(b"changed archive")  # edited by hand: rebuild
    assert not is_up_to_date(tmp_path, archive, key)


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('name: "model"\nbackend: "python"\n')
    (model / "requirements.txt").write_text("numpy<2\n")
    return model


def _snapshot(directory: Path) -> Dict[str, Any]:
    return {
        str(p.relative_to(directory)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _fake_build(
    spec: Any, base: Any, prefix: Path, *, extra: Any, reporter: Any, wheel: Any
) -> Path:
    for name in ("bin/activate", "bin/python3", "lib/libpython3.10.so.1.0", "lib/a", "lib/b"):
        (prefix / name).parent.mkdir(parents=True, exist_ok=True)
        (prefix / name).write_bytes(os.urandom(1000))
    return prefix


def test_ctrl_c_while_writing_leaves_model_dir_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(tmp_path)
    (model / "model_py3.10.tar.gz").write_bytes(b"the previous archive")
    before = _snapshot(model)
    monkeypatch.setattr(pack_module, "build_local_env", _fake_build)
    monkeypatch.setattr(pack_module, "self_wheel", lambda reporter, runtime: None)
    calls = []
    real_add = tarfile.TarFile.add

    def interrupted_add(self: tarfile.TarFile, *args: Any, **kwargs: Any) -> None:
        calls.append(args)
        if len(calls) == 4:  # some members are written, the archive is half done
            raise KeyboardInterrupt
        real_add(self, *args, **kwargs)

    monkeypatch.setattr(tarfile.TarFile, "add", interrupted_add)
    with pytest.raises(KeyboardInterrupt):
        pack_env(model, python="3.10", builder="local", stub="never", force=True)
    assert len(calls) == 4
    assert _snapshot(model) == before  # no partial file, same archive, same config


def test_unverifiable_environment_is_not_placed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(tmp_path)
    before = _snapshot(model)
    monkeypatch.setattr(pack_module, "build_local_env", _fake_build)
    monkeypatch.setattr(pack_module, "self_wheel", lambda reporter, runtime: None)
    with pytest.raises(ArchiveError, match="does not start after unpacking"):
        pack_env(model, python="3.10", builder="local", stub="never")
    assert _snapshot(model) == before
    assert "EXECUTION_ENV_PATH" not in load_config(model / "config.pbtxt").parameters


def test_check_uses_the_same_member_rule(tmp_path: Path) -> None:
    """tritonpy check (TP6xx) and pack-env refuse the same members: a device is TP605."""
    from tritonpy._tooling.archives import member_problem
    from tritonpy.check._archives import _check_archive

    device = tarfile.TarInfo("dev/null")
    device.type = tarfile.CHRTYPE
    drive = _file("C:/evil")
    archive = _tar(tmp_path / "env.tar.gz", _file("bin/activate"), device, drive)
    problems = [member_problem(m) for m in (device, drive)]
    assert [p.kind for p in problems if p] == ["device", "absolute"]
    findings = list(_check_archive(archive, "env.tar.gz"))
    assert [f.code for f in findings] == ["TP601", "TP605"]
    assert "'dev/null'" in findings[1].render()


def test_extraction_refusal_leaves_an_existing_destination_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept").write_text("mine")
    bad = _tar(tmp_path / "bad.tar.gz", _file("bin/activate"), _link("lib/x", "../../y"))
    with pytest.raises(ArchiveError, match="1 unsafe member"):
        safe_extract(bad, out)
    assert sorted(p.name for p in out.iterdir()) == ["kept"]
    good = _tar(tmp_path / "good.tar.gz", _file("bin/activate"))
    safe_extract(good, out)
    assert (out / "kept").is_file() and (out / "bin" / "activate").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.skipif(not hasattr(tarfile, "data_filter"), reason="this Python has no tar filters")
def test_data_filter_refuses_an_escape_through_an_earlier_link(tmp_path: Path) -> None:
    """Each link alone stays inside, but lib/x/y resolves through lib/x (the root) to '..'."""
    archive = _tar(
        tmp_path / "chain.tar.gz",
        _file("bin/activate"),
        _link("lib/x", ".."),
        _link("lib/x/y", ".."),
    )
    assert check_members(archive)  # member by member, nothing is wrong
    with pytest.raises(ArchiveError, match=r"'lib/x/y'.*outside the destination"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()
