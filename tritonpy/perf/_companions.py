"""The models a model needs beside it in its repository, so that ``tritonpy tune`` can serve
one model the way it runs: an ensemble's members (its ``ensemble_scheduling`` steps, at any
depth) and the models a Python model calls through BLS. A BLS callee is named in code, so it
is found the way a reader finds it: a sibling model directory whose name appears as a string
literal in the model's Python files (``pb_utils.InferenceRequest(model_name="scale", ...)``,
``self.call("scale", ...)``).

Example::

    companions(Path("model_repository/router"))   # [Path('model_repository/scale'), ...]
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List, Set

from .._tooling.model_dirs import CONFIG_FILE, model_directories
from .._tooling.pbtxt import ConfigError, load_config


def _members(model_dir: Path) -> Set[str]:
    try:
        config = load_config(model_dir / CONFIG_FILE)
    except (ConfigError, OSError):
        return set()
    return {step.model_name for step in config.ensemble_scheduling.step}


def _named_in_code(model_dir: Path, siblings: Set[str]) -> Set[str]:
    found: Set[str] = set()
    for source in model_dir.rglob("*.py"):
        try:
            tree = ast.parse(source.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError, OSError):
            continue  # the server reports a model that does not parse
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and value in siblings:
                found.add(value)
    return found


def ensemble_members(model_dir: Path) -> List[str]:
    """The models an ensemble's steps name; [] for a model that is no ensemble."""
    return sorted(_members(model_dir))


def companions(model_dir: Path) -> List[Path]:
    """The sibling model directories ``model_dir``'s model needs (see the module docstring),
    transitively, without ``model_dir`` itself; sorted by name."""
    root = model_dir.parent
    siblings = {path.name: path for path in model_directories(root)}
    wanted: Set[str] = set()
    pending = [model_dir.name]
    while pending:
        current = siblings.get(pending.pop())
        if current is None:
            continue
        needed = _members(current) | _named_in_code(current, set(siblings))
        for name in sorted(needed - wanted - {model_dir.name}):
            if name in siblings:
                wanted.add(name)
                pending.append(name)
    return [siblings[name] for name in sorted(wanted)]
