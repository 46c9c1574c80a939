"""The release table (tritonpy._tooling.release_facts): complete, ordered, cited, right about
the releases issue 31 names, checked against the r24.10 and r26.02 sources CI has beside the
clone, and in step with docs/releases.md."""

from __future__ import annotations

import os
import re
import tarfile
import warnings
from pathlib import Path
from typing import Dict, Tuple

import pytest

from tritonpy._tooling.release_facts import (
    API_IS_READY,
    API_ITERATOR_CANCEL,
    API_RESPONSE_PARAMETERS,
    CHANGES,
    NEWEST_KNOWN,
    OLDEST_KNOWN,
    SERVER_VERSIONS,
    SHELL_CHARACTERS,
    ReleaseFacts,
    ReleaseOutsideTableWarning,
    fact_names,
    facts_for,
    known_releases,
    release_table_markdown,
)
from tritonpy._tooling.releases import TritonRelease

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT.parent / "shared" / "sources"
CITATION = re.compile(r"^(server|python_backend|core|common|backend)@r(\d\d\.\d\d):[\w./-]+$")


def _key(release: str) -> Tuple[int, int]:
    year, month = release.split(".")
    return int(year), int(month)


# --- the table's shape --------------------------------------------------------------------


def test_every_fact_has_a_row_at_the_oldest_release() -> None:
    first = {c.name for c in CHANGES if c.release == OLDEST_KNOWN}
    assert set(fact_names()) <= first, set(fact_names()) - first
    assert {c.name for c in CHANGES} <= set(fact_names())


def test_rows_of_one_fact_are_in_release_order_and_change_the_value() -> None:
    for name in fact_names():
        rows = [c for c in CHANGES if c.name == name]
        keys = [_key(c.release) for c in rows]
        assert keys == sorted(keys) and len(set(keys)) == len(keys), name
        values = [c.value for c in rows]
        assert all(a != b for a, b in zip(values, values[1:])), f"{name}: a row changes nothing"


def test_citations_name_a_file_on_the_rows_own_branch() -> None:
    for change in CHANGES:
        match = CITATION.match(change.source)
        assert match, change
        assert match.group(2) == change.release, change


def test_every_known_release_has_its_server_version_and_facts() -> None:
    releases = known_releases()
    assert (releases[0], releases[-1], len(releases)) == (OLDEST_KNOWN, NEWEST_KNOWN, 43)
    assert set(SERVER_VERSIONS) == set(releases)
    for release in releases:
        facts = facts_for(release)
        assert facts.assumed_from is None
        assert facts.cites("server_version") == f"server@r{release}:TRITON_VERSION"
        assert set(fact_names()) <= set(facts.sources)
    # one minor a month, but 25.07 is 2.59.1 (a patch of 25.06), so 26.07 is 2.71.0
    assert [SERVER_VERSIONS[r] for r in ("25.06", "25.07", "25.08")] == [
        "2.59.0",
        "2.59.1",
        "2.60.0",
    ]


# --- the releases the issue names ----------------------------------------------------------

ALL_API = frozenset({API_RESPONSE_PARAMETERS, API_ITERATOR_CANCEL, API_IS_READY})
BEFORE_IS_READY = frozenset({API_RESPONSE_PARAMETERS, API_ITERATOR_CANCEL})


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ("24.10", dict(server_version="2.51.0", ubuntu="22.04", python="3.10", pybind11="2.10")),
        ("24.10", dict(numpy_pin="numpy<2", numpy2_bytes_ok=False, api=frozenset())),
        ("24.11", dict(server_version="2.52.0", ubuntu="24.04", python="3.12", pybind11="2.12")),
        ("24.11", dict(numpy2_bytes_ok=True, numpy_pin="numpy<2", min_cmake=(3, 17))),
        ("25.02", dict(api=frozenset({API_RESPONSE_PARAMETERS}), sources_env_activate=True)),
        ("25.04", dict(api=BEFORE_IS_READY, refuses_shell_names=False)),
        ("25.08", dict(server_version="2.60.0", min_cmake=(3, 31, 8), boost="1.79")),
        ("25.08", dict(sources_env_activate=False, refuses_shell_names=True)),
        ("25.11", dict(boost="1.80", model_ready_tracks_stub=False)),
        ("25.12", dict(model_ready_tracks_stub=True, server_ready_tracks_stub=False)),
        ("26.01", dict(model_ready_tracks_stub=True, api=BEFORE_IS_READY)),
        ("26.03", dict(api=ALL_API, server_ready_tracks_stub=False)),
        ("26.04", dict(server_ready_tracks_stub=True, refuses_unsafe_archives=False)),
        ("26.06", dict(refuses_unsafe_archives=True, server_version="2.70.0")),
        ("26.07", dict(server_version="2.71.0", python="3.12", numpy_pin="numpy<2", api=ALL_API)),
    ],
)
def test_spot_checks(release: str, expected: Dict[str, object]) -> None:
    facts = facts_for(release)
    assert {name: getattr(facts, name) for name in expected} == expected


def test_the_older_containers() -> None:
    # build.py: base image ubuntu:20.04 to r23.04; env/test.sh runs a 3.8 env without a stub
    assert (facts_for("23.04").ubuntu, facts_for("23.04").python) == ("20.04", "3.8")
    assert (facts_for("23.05").ubuntu, facts_for("23.05").python) == ("22.04", "3.10")
    # `pip3 install --upgrade numpy` to 24.05 (images built before numpy 2.0), "numpy<2" after
    assert [
        (facts_for(r).numpy_pin, facts_for(r).container_pins_numpy) for r in ("24.05", "24.06")
    ] == [
        ("numpy<2", False),
        ("numpy<2", True),
    ]
    assert (facts_for("23.01").boost, facts_for("23.02").boost) == ("1.76", "1.79")
    assert TritonRelease.parse("22.11").python == "3.8"


def test_the_name_rule_characters_are_triton_invalid_chars() -> None:
    assert set(";|&$`<>()[]{}\"'*?~#!\\") == SHELL_CHARACTERS


# --- outside the table ----------------------------------------------------------------------


def test_a_newer_release_warns_and_gets_the_newest_facts() -> None:
    with pytest.warns(ReleaseOutsideTableWarning) as caught:
        facts = facts_for("27.02")
    message = str(caught[0].message)
    assert "27.02" in message and NEWEST_KNOWN in message and "assuming" in message
    newest = facts_for(NEWEST_KNOWN)
    assert facts.assumed_from == NEWEST_KNOWN
    assert _facts_only(facts) == _facts_only(newest)
    assert facts.server_version == "2.78.0"  # an estimate: one minor a month after 26.07
    assert facts.cites("python") == newest.cites("python")


def test_an_older_release_gets_the_oldest_facts_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        facts = facts_for("22.11")
    assert facts.assumed_from == OLDEST_KNOWN
    assert (facts.server_version, facts.python) == ("2.28.0", "3.8")


def _facts_only(facts: ReleaseFacts) -> Dict[str, object]:
    return {name: getattr(facts, name) for name in fact_names()}


# --- checked against the sources CI has ------------------------------------------------------


def _sources_or_skip(release: str) -> Path:
    archive = SOURCES / f"triton-r{release}" / "python_backend.tar.gz"
    if not archive.is_file():
        reason = (
            f"Triton r{release} source archives not found in {archive.parent}: put the "
            "python_backend and core .tar.gz (git archive of the release branches) there"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true, but: {reason}", pytrace=False)
        pytest.skip(reason)
    return archive.parent


def _read(folder: Path, repo: str, path: str) -> str:
    with tarfile.open(folder / f"{repo}.tar.gz") as archive:
        member = archive.extractfile(f"{repo}/{path}")
        assert member is not None, f"{repo}/{path}"
        return member.read().decode()


@pytest.mark.parametrize("release", ["24.10", "26.02"])
def test_the_stub_build_facts_match_cmakelists(release: str) -> None:
    cmake = _read(_sources_or_skip(release), "python_backend", "CMakeLists.txt")
    facts = facts_for(release)
    pybind = re.search(r"pybind11\s+GIT_REPOSITORY[^\n]*\n\s*# COMMIT ID for v(\d+\.\d+)", cmake)
    assert pybind and pybind.group(1) == facts.pybind11
    minimum = re.search(r"cmake_minimum_required\s*\(\s*VERSION\s+([\d.]+)", cmake)
    assert minimum and tuple(int(p) for p in minimum.group(1).split(".")) == facts.min_cmake
    boost = re.search(r"boost_(\d+)_(\d+)_\d+\.tar\.gz", cmake)
    assert boost and f"{boost.group(1)}.{boost.group(2)}" == facts.boost
    assert facts.cites("min_cmake").endswith(":CMakeLists.txt")


@pytest.mark.parametrize("release", ["24.10", "26.02"])
def test_environment_and_name_facts_match_stub_launcher(release: str) -> None:
    folder = _sources_or_skip(release)
    facts = facts_for(release)
    launcher = _read(folder, "python_backend", "src/stub_launcher.cc")
    assert ('ss << "source " << path_to_activate_' in launcher) == facts.sources_env_activate
    assert ("ParseActivationScript(" in launcher) == (not facts.sources_env_activate)
    assert ("IsValidIdentifier(stub_name)" in launcher) == facts.refuses_shell_names
    header = _read(folder, "python_backend", "src/pb_utils.h")
    chars = re.search(r'INVALID_CHARS = "((?:[^"\\]|\\.)*)"', header)
    if facts.refuses_shell_names:
        assert chars and set(re.sub(r"\\(.)", r"\1", chars.group(1))) == SHELL_CHARACTERS
    else:
        assert chars is None
    pb_env = _read(folder, "python_backend", "src/pb_env.cc")
    assert ("ARCHIVE_EXTRACT_SECURE_NODOTDOT" in pb_env) == facts.refuses_unsafe_archives


@pytest.mark.parametrize("release", ["24.10", "26.02"])
def test_health_and_api_facts_match_the_backend_and_core(release: str) -> None:
    folder = _sources_or_skip(release)
    facts = facts_for(release)
    backend = _read(folder, "python_backend", "src/python_be.cc")
    assert ("TRITONBACKEND_ModelInstanceReady" in backend) == facts.model_ready_tracks_stub
    server = _read(folder, "core", "src/server.cc")
    assert ("runtime readiness" in server) == facts.server_ready_tracks_stub
    stub = _read(folder, "python_backend", "src/pb_stub.cc")
    found = {
        API_RESPONSE_PARAMETERS: '.def("parameters", &InferResponse::Parameters)' in stub,
        API_ITERATOR_CANCEL: '.def("cancel", &ResponseIterator::Cancel)' in stub,
        API_IS_READY: 'py::hasattr(model_instance_, "is_ready")' in stub,
    }
    assert frozenset(name for name, there in found.items() if there) == facts.api


# --- docs ------------------------------------------------------------------------------------


def test_docs_releases_md_shows_the_table_the_code_renders() -> None:
    text = (ROOT / "docs" / "releases.md").read_text()
    start, end = "<!-- release-table: start -->\n", "<!-- release-table: end -->"
    assert start in text and end in text, "docs/releases.md lost its release-table markers"
    shown = text.split(start, 1)[1].split(end, 1)[0]
    assert shown.strip() == release_table_markdown().strip(), (
        "docs/releases.md's table differs from release_table_markdown(): paste "
        "`python -c 'from tritonpy._tooling.release_facts import release_table_markdown as t; "
        "print(t())'` between the markers"
    )


def test_the_rendered_table_groups_releases_and_cites_every_row() -> None:
    table = release_table_markdown()
    rows = [line for line in table.splitlines() if line.startswith("| 2")]
    assert rows[0].startswith("| 23.01 | 2.30.0 |")
    assert rows[-1].startswith("| 26.06 to 26.07 | 2.70.0 to 2.71.0 |")
    assert any(r.startswith("| 25.04 to 25.07 | 2.57.0 to 2.59.1 |") for r in rows)
    for change in CHANGES:
        assert f"`{change.source}`" in table


def test_the_modules_docstring_examples_hold() -> None:
    import doctest

    from tritonpy._tooling import release_facts, releases

    for module in (release_facts, releases):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_the_warning_names_the_callers_line_not_tritonpys() -> None:
    with pytest.warns(ReleaseOutsideTableWarning) as caught:
        facts = TritonRelease.parse("27.03").facts  # through tritonpy's releases module
    assert facts.assumed_from == NEWEST_KNOWN
    assert caught[0].filename == __file__
