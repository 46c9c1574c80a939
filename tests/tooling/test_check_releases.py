"""tritonpy check --triton-version: each release rule (TP8xx, and the release's word in TP507,
TP509, TP601-TP603) fires on exactly the releases the table of release facts says, naming the
release, the rule and the table's citation; info lines (never failing) without a release.

Repositories: tests/golden/check_releases (names; an environment model whose archive or
directory each test writes in tmp_path)."""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import io
import json
import os
import shutil
import tarfile
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from tritonpy._tooling.release_facts import facts_for
from tritonpy.check import RULES, Report, check_repository
from tritonpy.check._activation import exported, read_activation
from tritonpy.check._cli import add_parser
from tritonpy.check._releases import (
    CODES,
    check_releases,
    first_release,
    links_written_through,
    refused_characters,
)

# the tests ask facts_for about 27.01 themselves; the check must not warn (TP801 says it)
pytestmark = pytest.mark.filterwarnings(
    "ignore::tritonpy._tooling.release_facts.ReleaseOutsideTableWarning"
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "check_releases"

#: the releases of issue 31's checks: the bundled one, the Python/pybind11 change, the name
#: and activation change, one between, the archive change, the newest known, one after it
RELEASES = ("24.10", "24.11", "25.08", "26.02", "26.06", "26.07", "27.01")
FROM_25_08 = {"25.08", "26.02", "26.06", "26.07", "27.01"}
FROM_26_06 = {"26.06", "26.07", "27.01"}

HOOK = (
    'export GDAL_DATA="${CONDA_PREFIX}/share/gdal"\n'
    "export CPL_ZIP_ENCODING=UTF-8\n"
    'export PATH="${CONDA_PREFIX}/extra:${PATH}"\n'
)
CONDA_PACK_ACTIVATE = (
    "# conda-pack's activate script (the lines that matter)\n"
    'export CONDA_PREFIX="$full_path_env"\n'
    'export _CONDA_PACK_OLD_PS1="$PS1"\n'
    'export PATH="$full_path_env/bin:$PATH"\n'
    'export PS1="(env) $PS1"\n'
)


def repository(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(GOLDEN / name, target)
    return target


def _file(name: str, data: bytes = b"x", mode: int = 0o644) -> Tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    return info, data


def _link(name: str, target: str, hard: bool = False) -> Tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    return info, b""


def env_archive(
    path: Path,
    *,
    python: str = "3.10",
    numpy: str = "1.26.4",
    activate: str = "# activate\n",
    hooks: Optional[Dict[str, str]] = None,
    extra: Sequence[Tuple[tarfile.TarInfo, bytes]] = (),
) -> Path:
    """An environment .tar.gz: bin/activate, lib/libpythonX.Y.so.1.0, numpy's dist-info,
    ``etc/conda/activate.d/<hooks>``, then ``extra`` members (in that order)."""
    site = f"lib/python{python}/site-packages"
    members = [
        _file("bin/activate", activate.encode()),
        _file(f"lib/libpython{python}.so.1.0", b""),
        _file(f"{site}/numpy-{numpy}.dist-info/METADATA", f"Version: {numpy}\n".encode()),
    ]
    members += [
        _file(f"etc/conda/activate.d/{name}", text.encode()) for name, text in (hooks or {}).items()
    ]
    with tarfile.open(path, "w:gz") as archive:
        for info, data in (*members, *extra):
            archive.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def env_repo(tmp_path: Path, **archive: object) -> Path:
    repo = repository("env", tmp_path)
    env_archive(repo / "double" / "env.tar.gz", **archive)  # type: ignore[arg-type]
    return repo


def found(report: Report, code: str) -> List[Tuple[str, str]]:
    """(severity, the finding's whole text) of every ``code`` finding."""
    return [(f.severity, f.render()) for f in report.findings if f.code == code]


# --- the rules are wired in -------------------------------------------------------------------


def test_release_rules_run_with_every_check() -> None:
    assert check_releases in RULES
    assert CODES == ("TP801", "TP802", "TP803", "TP804", "TP805")
    docs = (Path(__file__).resolve().parents[2] / "docs" / "check.md").read_text()
    for code in CODES:
        assert f"| {code} |" in docs


def test_the_rules_change_where_the_table_says() -> None:
    # the releases hard-coded in these tests are the table's: if a row moves, they must too
    assert first_release("refuses_shell_names", True) == "25.08"
    assert first_release("sources_env_activate", False) == "25.08"
    assert first_release("refuses_unsafe_archives", True) == "26.06"
    assert first_release("numpy2_bytes_ok", True) == "24.11"
    for release in RELEASES:
        facts = facts_for(release)
        assert facts.refuses_shell_names == (release in FROM_25_08)
        assert facts.sources_env_activate == (release not in FROM_25_08)
        assert facts.refuses_unsafe_archives == (release in FROM_26_06)


# --- TP801: outside the table -----------------------------------------------------------------


def test_a_release_after_the_table_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    repo = repository("names", tmp_path)
    fired = {
        release: found(check_repository(repo, triton_version=release), "TP801")
        for release in RELEASES
    }
    assert {release for release, hits in fired.items() if hits} == {"27.01"}
    ((severity, text),) = fired["27.01"]
    assert severity == "warning"
    assert text.startswith(".: warning TP801: release 27.01 is newer than the table")
    assert "applies the facts of 26.07" in text and facts_for("27.01").cites("python") in text
    # the facts of 26.07 still apply: the names are refused
    assert found(check_repository(repo, triton_version="27.01"), "TP802")[0][0] == "error"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the finding says it, no Python warning on top
        check_repository(repo, triton_version="27.01")
    older = check_repository(repo, triton_version="22.12")
    assert "release 22.12 is older than the table" in found(older, "TP801")[0][1]


# --- TP802/TP803: names -----------------------------------------------------------------------


def test_refused_names_are_errors_from_25_08(tmp_path: Path) -> None:
    repo = repository("names", tmp_path)
    for release in RELEASES:
        report = check_repository(repo, triton_version=release)
        model, group = found(report, "TP802"), found(report, "TP803")
        if release not in FROM_25_08:
            # '#' survives the older launcher's bash -c line; '(' ends it (24.10, measured)
            assert model == [], release
            ((severity, text),) = group
            assert severity == "error", release
            assert f"holds '()'; release {release} does not load it" in text
            assert (
                "unquoted into a bash -c line (python_backend@r24.10:src/stub_launcher.cc)" in text
            )
            continue
        cite = facts_for(release).cites("refuses_shell_names")
        assert model == [
            (
                "error",
                f"detect#v2/config.pbtxt [name]: error TP802: the model name 'detect#v2' holds "
                f"'#'; release {release} refuses it ({cite}: the Python backend's stub launcher "
                f"checks the model's name and every instance name '<group>_<n>' and fails the "
                f"load with 'Invalid stub name: contains invalid characters')\n    fix: rename "
                f"the model directory and config.pbtxt's name without '#', e.g. 'detect_v2' "
                f"(and every client and ensemble naming it)",
            )
        ], release
        ((severity, text),) = group
        assert severity == "error"
        assert text.startswith(
            "detect#v2/config.pbtxt [instance_group[0].name]: error TP803: the instance group "
            "name 'cpu(a)' of model 'detect#v2' holds '()'; release "
            f"{release} refuses it ({cite}"
        )
        # the default '<model>_0' would hold the model's '#' too: not offered
        assert text.endswith('e.g. name: "cpu_a_"')
        assert report.exit_code() == 1


def test_names_without_a_release_are_info(tmp_path: Path) -> None:
    report = check_repository(repository("names", tmp_path))
    assert [(f.code, f.severity) for f in report.findings if f.code.startswith("TP8")] == [
        ("TP802", "info"),
        ("TP803", "info"),
    ]
    text = report.findings[-2].render()
    assert "Triton refuses it from release 25.08 on (python_backend@r25.08:" in text
    assert text.endswith("pass --triton-version to check your release")
    assert report.exit_code(strict=True) == 0


def test_every_refused_character_is_found(tmp_path: Path) -> None:
    # python_backend r25.08 src/pb_utils.h INVALID_CHARS: ;|&$`<>()[]{}\"'*?~#! (the C
    # string's \\ is a backslash)
    assert refused_characters("a;b|c&d$e`f<g>h(i)j[k]l{m}n\\o\"p'q*r?s~t#u!v") == (
        ";|&$`<>()[]{}\\\"'*?~#!"
    )
    assert refused_characters("resnet50_v1.5-int8") == ""
    repo = repository("names", tmp_path)
    shutil.move(str(repo / "plain"), str(repo / "a;b"))
    config = repo / "a;b" / "config.pbtxt"
    config.write_text(config.read_text().replace('"plain"', '"a;b"').replace("cpu_a", "g\\\\1"))
    report = check_repository(repo, triton_version="26.02")
    assert [f.field for f in report.findings if f.code in ("TP802", "TP803")] == [
        "name",
        "instance_group[0].name",
        "name",
        "instance_group[0].name",
    ]
    groups = [f.message for f in report.findings if f.code == "TP803"]
    fixes = [f.fix for f in report.findings if f.code == "TP803"]
    assert "remove name" not in fixes[1]  # the default 'a;b_0' is refused too
    assert "the instance group name 'g\\\\1' of model 'a;b' holds '\\\\'" in groups[0]


def test_a_bad_group_of_a_good_model_may_take_the_default_name(tmp_path: Path) -> None:
    repo = repository("names", tmp_path)
    config = repo / "plain" / "config.pbtxt"
    config.write_text(config.read_text().replace("cpu_a", "cpu|a"))
    report = check_repository(repo, triton_version="25.08")
    fix = next(f.fix for f in report.findings if f.code == "TP803" and "plain" in f.file)
    assert fix == (
        'rename the group without those characters, e.g. name: "cpu_a", or remove name (the '
        "default is 'plain_0')"
    )


def test_names_of_other_backends_are_not_the_python_backends_business(tmp_path: Path) -> None:
    repo = repository("names", tmp_path)
    config = repo / "detect#v2" / "config.pbtxt"
    config.write_text(config.read_text().replace('backend: "python"', 'backend: "onnxruntime"'))
    report = check_repository(repo, triton_version="26.07")
    assert not found(report, "TP802") and not found(report, "TP803")


# --- the container's Python and numpy -----------------------------------------------------------


@pytest.mark.parametrize("python", ["3.10", "3.11", "3.12", "3.13"])
def test_a_stub_is_needed_where_the_container_python_differs(tmp_path: Path, python: str) -> None:
    for release in RELEASES:
        repo = env_repo(tmp_path / release, python=python)
        report = check_repository(repo, triton_version=release)
        container = facts_for(release).python
        assert container == ("3.10" if release == "24.10" else "3.12")
        hits = found(report, "TP507")
        if python == container:
            assert hits == [], (release, python)
            continue
        ((severity, text),) = hits
        assert severity == "error"
        assert (
            f"the environment has Python {python} but the server runs Python {container} "
            f"(release {release}'s container: {facts_for(release).cites('python')})"
        ) in text
        assert f"'tritonpy stub REPO/double --triton-version {release} --python {python}'" in text


def test_numpy2_is_refused_where_the_stub_predates_it(tmp_path: Path) -> None:
    fired = {}
    for release in RELEASES:
        repo = env_repo(tmp_path / release, numpy="2.1.0", python=facts_for(release).python)
        fired[release] = found(check_repository(repo, triton_version=release), "TP509")
    assert {r for r, hits in fired.items() if hits} == {"24.10"}
    assert "the Python backend stub of release 24.10 predates numpy 2" in fired["24.10"][0][1]
    repo = env_repo(tmp_path / "none", numpy="2.1.0")
    ((severity, text),) = found(check_repository(repo), "TP509")
    assert severity == "warning"
    assert "releases before 24.11 (python_backend@r24.11:" in text


# --- TP804: activation hooks ----------------------------------------------------------------


def test_activation_hooks_do_not_run_from_25_08(tmp_path: Path) -> None:
    fired = {}
    for release in RELEASES:
        repo = env_repo(tmp_path / release, hooks={"gdal.sh": HOOK, "gdal.fish": "set -gx X 1"})
        fired[release] = found(check_repository(repo, triton_version=release), "TP804")
    assert {r for r, hits in fired.items() if hits} == FROM_25_08
    for release in FROM_25_08:
        ((severity, text),) = fired[release]
        cite = facts_for(release).cites("sources_env_activate")
        assert severity == "warning"
        assert text == (
            "double/config.pbtxt [parameters[EXECUTION_ENV_PATH]]: warning TP804: the "
            "environment '$$TRITON_MODEL_DIRECTORY/env.tar.gz' has conda activation hooks "
            "'etc/conda/activate.d/gdal.fish', 'etc/conda/activate.d/gdal.sh' that will not "
            "run and activation settings that stay unset: "
            'GDAL_DATA="${CONDA_PREFIX}/share/gdal", CPL_ZIP_ENCODING=UTF-8: release '
            f"{release} starts the stub without sourcing bin/activate ({cite}: the server's "
            "environment plus PATH, LD_LIBRARY_PATH, VIRTUAL_ENV and VIRTUAL_ENV_PROMPT "
            "only)\n    fix: set what the model needs itself: in model.py, before the import "
            "that needs it, os.environ.setdefault('GDAL_DATA', ...) (VIRTUAL_ENV holds the "
            "environment's path), or export it in the server's environment (docker run -e "
            "GDAL_DATA=...), which the stub inherits"
        )


def test_conda_pack_activate_exports_conda_prefix(tmp_path: Path) -> None:
    more = env_repo(tmp_path / "more", activate=CONDA_PACK_ACTIVATE + "export MY_DATA=/d\n")
    ((severity, text),) = found(check_repository(more, triton_version="26.07"), "TP804")
    assert severity == "warning" and 'CONDA_PREFIX="$full_path_env", MY_DATA=/d' in text
    repo = env_repo(tmp_path, activate=CONDA_PACK_ACTIVATE)
    report = check_repository(repo, triton_version="25.08")
    ((severity, text),) = found(report, "TP804")
    assert severity == "info"  # every conda-packed environment has it: alone it never fails
    # PATH is set by the launcher too, PS1 is a prompt, _CONDA_PACK_OLD_PS1 bookkeeping
    assert (
        'activation settings that stay unset: CONDA_PREFIX="$full_path_env": release 25.08' in text
    )
    assert "conda activation hooks" not in text
    assert (
        found(check_repository(env_repo(tmp_path / "plain"), triton_version="26.07"), "TP804") == []
    )
    info = found(check_repository(repo), "TP804")
    assert info[0][0] == "info" and "from release 25.08 on, Triton starts the stub" in info[0][1]


def test_hooks_in_an_environment_directory(tmp_path: Path) -> None:
    repo = repository("env", tmp_path)
    env = repo / "double" / "env"
    (env / "etc" / "conda" / "activate.d").mkdir(parents=True)
    (env / "etc" / "conda" / "activate.d" / "java.sh").write_text('export JAVA_HOME="/opt/j"\n')
    (env / "bin").mkdir()
    (env / "bin" / "activate").write_text("# activate\n")
    (env / "lib").mkdir()
    (env / "lib" / "libpython3.12.so.1.0").write_bytes(b"")
    config = repo / "double" / "config.pbtxt"
    config.write_text(config.read_text().replace("env.tar.gz", "env"))
    report = check_repository(repo, triton_version="26.02")
    ((_, text),) = found(report, "TP804")
    assert "hooks 'etc/conda/activate.d/java.sh'" in text and 'JAVA_HOME="/opt/j"' in text
    assert found(check_repository(repo, triton_version="24.11"), "TP804") == []
    activation = read_activation(env)
    assert activation is not None and activation.missing() == ("JAVA_HOME",)


def test_exported_reads_export_lines_and_exported_assignments() -> None:
    script = "X=1\nexport X\nexport Y='two'\n  export Z\nW=3\n# export V=4\n"
    assert exported(script) == (("X", "1"), ("Y", "'two'"), ("Z", ""))


# --- TP805 and TP601-TP603: archive members -----------------------------------------------------


def test_writes_through_links_are_refused_from_26_06(tmp_path: Path) -> None:
    extra = (
        _link("lib/share", "../outside"),
        _file("lib/share/data.txt"),
        _file("lib/share/more/x.txt"),
    )
    fired = {}
    for release in RELEASES:
        repo = env_repo(tmp_path / release, extra=extra, python=facts_for(release).python)
        fired[release] = found(check_repository(repo, triton_version=release), "TP805")
    assert {r for r, hits in fired.items() if hits} == FROM_26_06
    for release in FROM_26_06:
        ((severity, text),) = fired[release]
        cite = facts_for(release).cites("refuses_unsafe_archives")
        assert severity == "error"
        assert text.startswith(
            "double/env.tar.gz: error TP805: 2 members written through a symbolic link of the "
            "archive: 'lib/share/data.txt (through lib/share -> ../outside)', "
            "'lib/share/more/x.txt (through lib/share -> ../outside)'; release "
            f"{release} refuses the archive ({cite}: it extracts with "
            "ARCHIVE_EXTRACT_SECURE_SYMLINKS, libarchive's 'Cannot extract through symlink') "
            "and the model fails to load"
        )
    repo = env_repo(tmp_path / "none", extra=extra)
    assert found(check_repository(repo), "TP805")[0][0] == "info"


def test_links_written_through() -> None:
    members = [
        m
        for m, _ in (
            _link("a", "b"),
            _file("a/x"),  # through a
            _file("c"),
            _link("d", "c"),
            _file("d"),  # replaces the link d
            _file("d/y"),  # d is no link any more
            _link("e", "/abs"),
            _link("h", "e/z", hard=True),  # a hard link's target through e
            _file("./a/./y"),
        )
    ]
    assert links_written_through(members) == [
        ("a/x", "a -> b"),
        ("h", "e -> /abs"),
        ("./a/./y", "a -> b"),
    ]


def test_tp60x_say_what_the_release_does(tmp_path: Path) -> None:
    extra = (_file("/tmp/evil"), _file("lib/../../evil"), _link("lib/hard", "../x", hard=True))
    texts = {}
    for release in RELEASES:
        repo = env_repo(tmp_path / release, extra=extra, python=facts_for(release).python)
        report = check_repository(repo, triton_version=release)
        texts[release] = {code: found(report, code)[0][1] for code in ("TP601", "TP602", "TP603")}
    for release in RELEASES:
        cite = facts_for("26.06").cites("refuses_unsafe_archives")
        if release in FROM_26_06:
            cite = facts_for(release).cites("refuses_unsafe_archives")
            assert (
                f"; release {release} refuses a member path starting with '/' ('Path is "
                f"absolute') and the model fails to load ({cite})"
            ) in texts[release]["TP601"]
            assert f"; release {release} refuses '..' in a path" in texts[release]["TP602"]
            assert "refuses hard links climbing out" in texts[release]["TP603"]
        else:
            assert (
                f"; release {release} extracts them where they point, outside the "
                f"environment (refused from 26.06 on: {cite})"
            ) in texts[release]["TP601"]
            assert f"release {release} extracts them as they are" in texts[release]["TP603"]


# --- the CLI ----------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Tuple[int, Dict[str, object]]:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["check", *argv, "--json"])
    status = args.func(args)
    return status, json.loads(capsys.readouterr().out)


def test_cli_json_names_the_rule_and_the_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository("names", tmp_path)
    status, data = _cli(capsys, str(repo), "--triton-version", "27.01")
    assert status == 1
    findings = data["findings"]
    assert isinstance(findings, list)
    mine = [(f["code"], f["severity"]) for f in findings if f["code"].startswith("TP8")]
    assert mine == [("TP801", "warning"), ("TP802", "error"), ("TP803", "error")]
    assert all("release 27.01" in f["message"] for f in findings if f["code"].startswith("TP8"))
    status, data = _cli(capsys, str(repo), "--triton-version", "24.10")
    assert status == 1 and data["errors"] == 1  # 'cpu(a)' breaks 24.10's launch line
    older = [(f["code"], f["severity"]) for f in data["findings"] if f["code"].startswith("TP8")]  # type: ignore
    assert older == [("TP803", "error")]
    status, data = _cli(capsys, str(repo), "--strict")  # info lines never fail
    assert status == 0 and data["errors"] == 0 and data["warnings"] == 0


# --- against libarchive itself ----------------------------------------------------------------

#: python_backend r26.06 src/pb_env.cc: ARCHIVE_EXTRACT_TIME | SECURE_NODOTDOT |
#: SECURE_NOABSOLUTEPATHS | SECURE_SYMLINKS (libarchive's archive.h values)
R26_06_FLAGS = 0x0004 | 0x0200 | 0x10000 | 0x0100

#: archives whose refusal by r26.06 the rules must predict: name -> members (kind f/s/h)
LIBARCHIVE_CASES: Dict[str, List[Tuple[str, str, str]]] = {
    "symlinks pointing outside, alone": [("bin/py", "s", "/usr/bin/python3"), ("z", "s", "../z")],
    "through a link pointing outside": [("lib/share", "s", "../out"), ("lib/share/d", "f", "")],
    "through a link inside": [("real/a", "f", ""), ("alias", "s", "real"), ("alias/b", "f", "")],
    "a link replaced by a file": [("d", "s", "c"), ("d", "f", ""), ("d2/y", "f", "")],
    "a hard link climbing out": [("x", "f", ""), ("lib/hard", "h", "../x")],
    "a hard link to an absolute path": [("lib/hard", "h", "/etc/hostname")],
    "a hard link through a link": [("real/t", "f", ""), ("e", "s", "real"), ("h", "h", "e/t")],
    "dot-dot": [("lib/../../evil", "f", "")],
    "dot-dot staying inside": [("lib/../ok", "f", "")],
    "absolute": [("/ABSOLUTE/evil", "f", "")],
}


def _libarchive() -> ctypes.CDLL:
    name = ctypes.util.find_library("archive")
    if name is None:  # GitHub's Ubuntu runners have it (CMake links it): fail there
        missing = pytest.fail if os.environ.get("CI") else pytest.skip
        missing("needs the system libarchive (apt install libarchive13t64) to compare with")
    lib = ctypes.CDLL(name)
    lib.archive_read_new.restype = lib.archive_write_disk_new.restype = ctypes.c_void_p
    lib.archive_error_string.restype = lib.archive_entry_pathname.restype = ctypes.c_char_p
    for fn, args in {
        "archive_read_support_filter_gzip": [ctypes.c_void_p],
        "archive_read_support_format_tar": [ctypes.c_void_p],
        "archive_write_disk_set_options": [ctypes.c_void_p, ctypes.c_int],
        "archive_read_open_filename": [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t],
        "archive_read_next_header": [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)],
        "archive_write_header": [ctypes.c_void_p, ctypes.c_void_p],
        "archive_write_finish_entry": [ctypes.c_void_p],
        "archive_read_data_skip": [ctypes.c_void_p],
        "archive_entry_pathname": [ctypes.c_void_p],
        "archive_read_free": [ctypes.c_void_p],
        "archive_write_free": [ctypes.c_void_p],
    }.items():
        getattr(lib, fn).argtypes = args
    return lib


def _refused_by_libarchive(lib: ctypes.CDLL, archive: Path, into: Path) -> List[str]:
    """The members libarchive refuses to write with r26.06's flags (as pb_env.cc extracts,
    but going on after a refusal so every one is named)."""
    into.mkdir()
    here = os.getcwd()
    os.chdir(into)  # pb_env.cc too extracts from inside the destination
    reader, writer = lib.archive_read_new(), lib.archive_write_disk_new()
    try:
        lib.archive_write_disk_set_options(writer, R26_06_FLAGS)
        lib.archive_read_support_filter_gzip(reader)
        lib.archive_read_support_format_tar(reader)
        assert lib.archive_read_open_filename(reader, str(archive).encode(), 10240) == 0
        refused, entry = [], ctypes.c_void_p()
        while lib.archive_read_next_header(reader, ctypes.byref(entry)) == 0:
            name = lib.archive_entry_pathname(entry).decode()
            if lib.archive_write_header(writer, entry) != 0:
                refused.append(name)
            else:
                lib.archive_read_data_skip(reader)
                lib.archive_write_finish_entry(writer)
        return refused
    finally:
        os.chdir(here)
        lib.archive_read_free(reader)
        lib.archive_write_free(writer)


def _predicted(members: Sequence[tarfile.TarInfo]) -> List[str]:
    """The members the check says r26.06 refuses: '/'-rooted and '..' paths (TP601, TP602),
    hard links climbing out (TP603's '=>'), members written through a link (TP805)."""
    from tritonpy._tooling.archives import member_problem

    refused = {name for name, _ in links_written_through(members)}
    for member in members:
        problem = member_problem(member)
        if problem is None:
            continue
        if problem.kind in ("absolute", "parent"):
            refused.add(member.name)
        if problem.kind == "link" and member.islnk():
            refused.add(member.name)
    return [m.name for m in members if m.name in refused]


@pytest.mark.parametrize("case", sorted(LIBARCHIVE_CASES))
def test_the_archive_rules_predict_what_libarchive_refuses(tmp_path: Path, case: str) -> None:
    lib = _libarchive()
    spec = LIBARCHIVE_CASES[case]
    extra = [
        _file(name.replace("/ABSOLUTE", str(tmp_path / "abs")))
        if kind == "f"
        else _link(name, target, hard=kind == "h")
        for name, kind, target in spec
    ]
    archive = tmp_path / "env.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    members = [info for info, _ in extra]
    assert _predicted(members) == _refused_by_libarchive(lib, archive, tmp_path / "out"), case


def test_model_py_is_imported_as_the_target_release_starts_the_stub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a variable only bin/activate exports: 24.10 sources it, 25.08 starts the stub without it
    from mini_envs import mini_env

    monkeypatch.setenv("TRITONPY_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "repo" / "reader"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(
        "import os\n\n"
        "import tritonpy as tp\n\n"
        "if 'READER_DATA' not in os.environ:\n"
        "    raise RuntimeError('READER_DATA is not set')\n\n\n"
        "class Reader(tp.Model):\n"
        "    inputs = {'X': tp.Tensor('FP32', [-1])}\n"
        "    outputs = {'Y': tp.Tensor('FP32', [-1])}\n\n"
        "    def infer(self, X):\n"
        "        return {'Y': X}\n\n\n"
        "TritonPythonModel = Reader\n"
    )
    (model / "config.pbtxt").write_text(
        'name: "reader"\nbackend: "python"\n'
        'parameters { key: "EXECUTION_ENV_PATH" '
        'value { string_value: "$$TRITON_MODEL_DIRECTORY/env" } }\n'
    )
    env = mini_env(model / "env")
    # the empty stand-in libpython would shadow the real one on 25.08's LD_LIBRARY_PATH
    for stand_in in (env / "lib").glob("libpython*.so*"):
        stand_in.unlink()
    with (env / "bin" / "activate").open("a") as activate:
        activate.write('\nexport READER_DATA="$VIRTUAL_ENV/share"\n')

    def import_failures(version: str) -> List[str]:
        report = check_repository(tmp_path / "repo", triton_version=version)
        return [f.message for f in report.findings if f.code in {"TP101", "TP109"}]

    assert import_failures("24.10") == []
    (failure,) = import_failures("25.08")
    assert "READER_DATA is not set" in failure
