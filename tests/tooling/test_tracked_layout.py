"""Model directories the tests and templates serve must survive a clone: git keeps no empty
directory, and an ensemble's empty version folder ``1/`` lost in a clean clone makes
tritonserver refuse the ensemble ("at least one version must be available")."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_empty_directory_that_a_clone_would_lose() -> None:
    empty = [
        str(path.relative_to(ROOT))
        for top in ("tests", "model_templates", "tritonpy")
        for path in (ROOT / top).rglob("*")
        if path.is_dir() and "__pycache__" not in path.parts and not any(path.iterdir())
    ]
    assert not empty, f"empty directories (add a .gitkeep so that git keeps them): {empty}"
