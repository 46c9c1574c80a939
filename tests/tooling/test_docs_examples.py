"""Every ```python block of README.md and docs/*.md runs as written.

Each block runs in a fresh temporary working directory. An HTML comment on the line right
before the fence says what the block needs:

* ``<!-- docs-test: setup NAME[, NAME...] -->``: the files the surrounding text says exist are
  created first by the setups of that name (see ``SETUPS``), e.g. ``classify-repo``;
* ``<!-- docs-test: skip (REASON) -->``: not run; the reason is required, so every skipped
  block says why in the document itself.

A block that defines ``test_*`` functions is a pytest file: it is run by pytest (with the
tritonpy plugin's fixtures) and must pass. Any other block is executed; ``exit(0)`` counts as
success.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = ROOT / "tests" / "runtime" / "nvidia_examples"

_MARKER = re.compile(r"^<!--\s*docs-test:\s*(?P<kind>\w+)\s*(?P<argument>.*?)\s*-->$")


@dataclass
class Block:
    document: Path
    line: int  # of the opening fence
    code: str
    kind: str = "run"  # run | setup | skip
    setups: List[str] = field(default_factory=list)
    reason: str = ""

    @property
    def label(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def python_blocks(document: Path) -> List[Block]:
    """The ```python blocks of a Markdown file with the marker comment right before each."""
    lines = document.read_text(encoding="utf-8").splitlines()
    blocks: List[Block] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```python":
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        # blocks inside list items are indented as a whole
        code = textwrap.dedent("\n".join(lines[index + 1 : end]) + "\n")
        block = Block(document, index + 1, code)
        previous = index - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        marker = _MARKER.match(lines[previous].strip()) if previous >= 0 else None
        if marker:
            block.kind = marker.group("kind")
            argument = marker.group("argument")
            if block.kind == "setup":
                block.setups = [name.strip() for name in argument.split(",") if name.strip()]
            elif block.kind == "skip":
                block.reason = argument.strip("() ")
        blocks.append(block)
        index = end + 1
    return blocks


ALL_BLOCKS = [block for document in DOCUMENTS for block in python_blocks(document)]


# -- setups: what the text around a block says exists -----------------------------------------


def _readme_classify_code() -> str:
    """model.py of the classify model, as README.md shows it (the docs refer to it)."""
    for block in python_blocks(ROOT / "README.md"):
        if "class Classify(tp.Model)" in block.code:
            return block.code
    raise AssertionError("README.md has no Classify model block")


def classify_repo(workdir: Path) -> None:
    """README's model: model_repository/classify/{config.pbtxt, 1/model.py, labels.txt}."""
    model = workdir / "model_repository" / "classify"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('name: "classify"\nbackend: "python"\n')
    (model / "1" / "model.py").write_text(_readme_classify_code())
    (model / "labels.txt").write_text("dog\ncat\nbird\n")


def add_sub_repo(workdir: Path) -> None:
    """Triton's add_sub example model as model_repository/add_sub."""
    shutil.copytree(EXAMPLES / "add_sub", workdir / "model_repository" / "add_sub")


def preprocess_repo(workdir: Path) -> None:
    """The image_preprocess template rendered as model_repository/preprocess."""
    from tritonpy.templates import render_template

    render_template("image_preprocess", "preprocess", workdir / "model_repository")


def digits_repo(workdir: Path) -> None:
    """The ensemble_classifier template rendered as the "digits" ensemble and its members
    (untrained classifier weights: the answers are arbitrary, the plumbing is real)."""
    pytest.importorskip("torch", reason="the digits classifier is a torch model")
    from tritonpy.templates import render_classifier_ensemble

    render_classifier_ensemble("digits", workdir / "model_repository")


SETUPS: Dict[str, Callable[[Path], None]] = {
    "classify-repo": classify_repo,
    "add-sub-repo": add_sub_repo,
    "preprocess-repo": preprocess_repo,
    "digits-repo": digits_repo,
}


# -- running -----------------------------------------------------------------------------------


def _run_as_pytest_file(block: Block, workdir: Path) -> None:
    test_file = workdir / "test_docs_block.py"
    test_file.write_text(block.code, encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file.name],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, f"{block.label} failed under pytest:\n{output}"
    assert re.search(r"\b\d+ passed\b", output), output


def _execute(block: Block) -> None:
    namespace = {"__name__": "__docs_example__"}
    try:
        exec(compile(block.code, block.label, "exec"), namespace)
    except SystemExit as exc:
        assert exc.code in (0, None), f"{block.label} exited with {exc.code!r}"


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[b.label for b in ALL_BLOCKS])
def test_docs_example_runs(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if block.kind == "skip":
        pytest.skip(f"marked in the document: {block.reason}")
    assert block.kind in ("run", "setup"), f"{block.label}: unknown docs-test marker {block.kind!r}"
    for name in block.setups:
        assert name in SETUPS, f"{block.label}: unknown setup {name!r}; known: {sorted(SETUPS)}"
        SETUPS[name](tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    if re.search(r"^def test_\w+\(", block.code, re.MULTILINE):
        _run_as_pytest_file(block, tmp_path)
    else:
        _execute(block)


def test_every_skip_gives_a_reason_and_the_docs_have_examples() -> None:
    assert len(ALL_BLOCKS) >= 10, [b.label for b in ALL_BLOCKS]
    for block in ALL_BLOCKS:
        if block.kind == "skip":
            assert block.reason, f"{block.label}: a docs-test skip needs a reason in parentheses"


def test_markers_are_read_from_the_line_before_the_fence(tmp_path: Path) -> None:
    document = tmp_path / "doc.md"
    document.write_text(
        textwrap.dedent(
            """\
            Text.

            <!-- docs-test: skip (fragment of the class above) -->
            ```python
            infer(X)
            ```

            <!-- docs-test: setup classify-repo, add-sub-repo -->

            ```python
            print(1)
            ```

            ```python
            x = 1
            ```
            """
        )
    )
    first, second, third = python_blocks(document)
    assert (first.kind, first.reason, first.code) == (
        "skip",
        "fragment of the class above",
        "infer(X)\n",
    )
    assert (second.kind, second.setups) == ("setup", ["classify-repo", "add-sub-repo"])
    assert (third.kind, third.setups, third.line) == ("run", [], 14)
    assert np.array_equal([b.line for b in (first, second, third)], [4, 10, 14])
