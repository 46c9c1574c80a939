"""TritonRelease: versions, container Pythons, numpy 2 support, read from the release table."""

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
        ("23.01", "2.30.0", "3.8", False),
        ("23.05", "2.34.0", "3.10", False),
        ("24.10", "2.51.0", "3.10", False),
        # r24.11's qa/L0_backend_python/test.sh asserts Python 3.12; its stub has pybind11 2.12
        ("24.11", "2.52.0", "3.12", True),
        ("24.12", "2.53.0", "3.12", True),
        # 25.07 is a patch release of 2.59 (TRITON_VERSION 2.59.1), so 25.08 is 2.60.0
        ("25.07", "2.59.1", "3.12", True),
        ("25.08", "2.60.0", "3.12", True),
        ("26.07", "2.71.0", "3.12", True),
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
