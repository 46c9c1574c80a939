"""The release table: versions, container Pythons, numpy 2 support."""

from __future__ import annotations

import pytest

from tritonpy import ToolError
from tritonpy._tooling.releases import BUNDLED_RELEASE, TritonRelease


@pytest.mark.parametrize(
    ("name", "server", "python", "numpy2"),
    [
        ("21.11", "2.16.0", "3.8", False),
        ("22.11", "2.28.0", "3.8", False),
        ("24.05", "2.46.0", "3.10", False),
        ("24.10", "2.51.0", "3.10", False),
        ("24.12", "2.53.0", "3.12", True),
        ("25.08", "2.61.0", "3.12", True),
    ],
)
def test_release_facts(name: str, server: str, python: str, numpy2: bool) -> None:
    release = TritonRelease.parse(name)
    assert (release.server_version, release.python, release.numpy2_ok) == (server, python, numpy2)
    assert release.branch == f"r{name}"


def test_activation_and_cmake_change_with_25_08() -> None:
    assert TritonRelease.parse("25.05").sources_env_activate
    assert not TritonRelease.parse("25.08").sources_env_activate
    assert TritonRelease.parse("25.08").min_cmake == (3, 31, 8)
    assert TritonRelease.parse("24.10").min_cmake == (3, 17)


def test_branch_names_parse_and_bad_names_explain() -> None:
    assert TritonRelease.parse("r24.10") == TritonRelease.parse(BUNDLED_RELEASE)
    with pytest.raises(ToolError, match=r"not a Triton release: '2.51'.*YY.MM"):
        TritonRelease.parse("2.51")
