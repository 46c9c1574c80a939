"""README.md is what a newcomer and the package index page show: its promises are checked."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib  # the tooling tests run on the project's 3.11 only

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_two_commands_are_near_the_top_and_ci_runs_the_test_one() -> None:
    head = README.splitlines()[:25]
    assert any(line.startswith("bash scripts/demo.sh") for line in head)
    assert any(line.startswith("bash scripts/test.sh") for line in head)
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_no_relative_links_that_break_on_the_package_index_page() -> None:
    # PyPI renders README.md without the repository: a relative link leads nowhere there
    links = re.findall(r"\]\(([^)]+)\)", README)
    relative = [link for link in links if not re.match(r"^(https?:|#)", link)]
    assert relative == []


def test_every_extra_is_in_the_readme_table() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    table = {m.group(1) for m in re.finditer(r"^\| `([a-z0-9]+)` \|", README, re.M)}
    assert set(extras) - {"dev"} == table
