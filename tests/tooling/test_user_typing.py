"""mypy --strict on a user's model.py: the documented idioms type-check, real mistakes do not.

Users run mypy on their own models. The idioms the docs teach must be clean under --strict:
``infer`` with one annotated parameter per input, ``setup()`` replacing a codec on the instance
(``self.inputs = {...}``), codecs with keyword options. And the same file with real mistakes
(a misspelt codec option, a non-codec assigned to ``self.inputs``, a type error inside
``infer``) must be reported, so the check can fail.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import tritonpy

GOOD = textwrap.dedent(
    """
    from typing import Any, Dict, List, Optional

    import numpy as np
    from numpy.typing import NDArray

    import tritonpy as tp


    class Classify(tp.Model):
        inputs = {"LOGITS": tp.Tensor("FP32", [-1])}
        outputs = {"LABEL": tp.Text(), "SCORE": tp.Tensor("FP32", [1])}
        max_batch_size = 64
        prefix = tp.config_parameter("prefix", "")  # reads as a str on the instance

        def setup(self) -> None:
            self.labels: List[str] = (self.model_dir / "labels.txt").read_text().split()

        def infer(self, LOGITS: NDArray[np.float32]) -> Dict[str, Any]:
            best = LOGITS.argmax(axis=1)
            labels = [self.prefix + self.labels[i] for i in best]
            return {"LABEL": labels, "SCORE": LOGITS.max(axis=1)}


    class Greet(tp.Model):
        inputs = {
            "NAME": tp.Text(optional=True, default="world"),
            "STYLE": tp.JSON(optional=True),
            "IMAGE": tp.Image(color="RGB", optional=True),
        }
        outputs = {"GREETING": tp.Text(errors="replace")}

        def setup(self) -> None:
            # the documented way to adapt a codec to a parameter, keeping Triton's signature
            color = self.parameter("color", "RGB", cast=str.upper, choices=("RGB", "BGR"))
            self.inputs = {**self.inputs, "IMAGE": tp.Image(color=color, optional=True)}

        def infer(
            self, NAME: str, STYLE: Optional[Dict[str, Any]], IMAGE: Optional[NDArray[np.uint8]]
        ) -> Dict[str, str]:
            shout = bool(STYLE and STYLE.get("shout"))
            text = f"hello {NAME}" + ("" if IMAGE is None else f" ({IMAGE.shape[1]} px wide)")
            return {"GREETING": text.upper() if shout else text}


    TritonPythonModel = Classify
    """
)

# each mistake is on a line marked "# error", which mypy must report
BAD = textwrap.dedent(
    """
    from typing import Any, Dict

    import tritonpy as tp


    class Greet(tp.Model):
        inputs = {
            "NAME": tp.Text(optinal=True),  # error: misspelt option
            "STYLE": tp.JSON(defualt={}),  # error: misspelt option
            "PHOTO": tp.Image(color="CMYK"),  # error: not a colour Image decodes to
            "IDS": tp.Tensor("INT64", [-1], ragged="trim"),  # error: not a ragged policy
            "ICON": tp.Image(color=tp.config_parameter("color", "CMYK")),  # error: not a colour
        }
        outputs = {"GREETING": tp.Text()}

        def setup(self) -> None:
            self.inputs = {"NAME": "TYPE_STRING"}  # error: not a codec

        def infer(
            self, NAME: str, STYLE: Any, PHOTO: Any, IDS: Any, ICON: Any
        ) -> Dict[str, Any]:
            length: int = NAME  # error: str is not int
            return {"GREETING": NAME * length}


    TritonPythonModel = Greet
    """
)


def _run_mypy(tmp_path: Path, files: Dict[str, str]) -> Dict[str, List[int]]:
    """mypy --strict on the files (outside this repository's mypy configuration); returns
    {file name: [lines with errors]}, and fails on a mypy crash or a missing module."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n")
    env = dict(os.environ)
    package_parent = Path(tritonpy.__file__).resolve().parent.parent
    if package_parent.name not in ("site-packages", "dist-packages"):
        # a checkout or an editable install, which mypy cannot find through site-packages
        env["MYPYPATH"] = str(package_parent)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            *files,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode in (0, 1), output
    assert "import-not-found" not in output and "import-untyped" not in output, output
    errors: Dict[str, List[int]] = {name: [] for name in files}
    for match in re.finditer(r"^([\w.]+):(\d+): error:", output, re.MULTILINE):
        errors[match.group(1)].append(int(match.group(2)))
    return errors


def test_documented_idioms_pass_mypy_strict_and_mistakes_are_reported(tmp_path: Path) -> None:
    errors = _run_mypy(tmp_path, {"good_model.py": GOOD, "bad_model.py": BAD})
    assert errors["good_model.py"] == []
    marked = [n for n, line in enumerate(BAD.splitlines(), start=1) if "# error" in line]
    assert len(marked) == 7
    assert sorted(set(errors["bad_model.py"])) == marked


REPOSITORY = Path(__file__).resolve().parents[2]
#: every model.py the templates ship (members of bls_router included), rendered as they are
TEMPLATE_MODELS = sorted((REPOSITORY / "model_templates").glob("**/[0-9]*/model.py"))
#: optional libraries a template imports: without them installed mypy cannot check it
OPTIONAL_IMPORTS = ("torch", "cv2")


def _first_python_block(page: Path, heading: str) -> str:
    """The first ```python block after ``heading`` in a docs page."""
    text = page.read_text(encoding="utf-8")
    start = text.index(heading)
    block = re.search(r"```python\n(.*?)```", text[start:], re.DOTALL)
    assert block is not None, f"{page}: no python block after {heading!r}"
    return block.group(1)


def _checkable(source: str) -> bool:
    """False when the source imports an optional library this environment lacks."""
    for module in OPTIONAL_IMPORTS:
        imported = re.search(rf"^(import|from) {module}\b", source, re.MULTILINE)
        if imported and importlib.util.find_spec(module) is None:
            return False
    return True


def test_every_template_model_and_the_docs_example_pass_mypy_strict(tmp_path: Path) -> None:
    assert TEMPLATE_MODELS, "no model_templates/*/<version>/model.py found"
    files: Dict[str, str] = {}
    for model in TEMPLATE_MODELS:
        source = model.read_text(encoding="utf-8")
        if _checkable(source):
            parts = model.relative_to(REPOSITORY / "model_templates").parts[:-2]
            files["template_" + "_".join(parts).replace("-", "_") + ".py"] = source
    files["docs_models_type_checking.py"] = _first_python_block(
        REPOSITORY / "docs" / "models.md", "## Type checking"
    )
    errors = _run_mypy(tmp_path, files)
    assert {name: lines for name, lines in errors.items() if lines} == {}
