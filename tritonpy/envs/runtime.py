"""The tritonpy runtime that goes into every environment (model.py imports ``tritonpy``).

From a source checkout (this package sits beside a ``pyproject.toml`` named ``tritonpy``) a
wheel is built once per source state and cached; otherwise the installed version is required
from the package index. numpy is pinned below 2 for releases before 24.12.

Example::

    reqs = runtime_requirements(TritonRelease.parse("24.10"))   # ['numpy<2']
    wheel = runtime_wheel(reporter)                              # .../tritonpy-0.1.0...whl
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence

from .. import __version__
from ..releases import TritonRelease
from ..server.install import cache_directory
from .errors import SpecError
from .progress import CommandError, Reporter, run_command

__all__ = ["check_numpy_pin", "runtime_requirements", "runtime_wheel", "source_checkout"]

_NUMPY2 = re.compile(r"^numpy\s*(?:\[[^\]]*\])?\s*(?:==|>=|~=|===|>)\s*(\d+)")


def source_checkout() -> Optional[Path]:
    """The root of the tritonpy checkout this package runs from, or None when installed."""
    root = Path(__file__).resolve().parents[2]
    project = root / "pyproject.toml"
    try:
        text = project.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if re.search(r'^name\s*=\s*"tritonpy"', text, re.M) else None


def source_fingerprint() -> str:
    """A hash of the tritonpy sources (or the installed version): part of the rebuild key."""
    root = source_checkout()
    if root is None:
        return f"tritonpy=={__version__}"
    digest = hashlib.sha256((root / "pyproject.toml").read_bytes())
    for path in sorted((root / "tritonpy").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed"):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def runtime_requirements(release: TritonRelease) -> List[str]:
    """numpy for the runtime: ``numpy<2`` for releases before 24.12 (their stubs return empty
    outputs with numpy 2), else ``numpy>=1.21``.

    >>> runtime_requirements(TritonRelease.parse("24.10"))
    ['numpy<2']
    """
    return ["numpy>=1.21"] if release.numpy2_ok else ["numpy<2"]


def check_numpy_pin(requirements: Sequence[str], release: TritonRelease) -> None:
    """Refuse a spec that requires numpy 2 for a release whose stub cannot handle it."""
    if release.numpy2_ok:
        return
    for line in requirements:
        match = _NUMPY2.match(line.strip().lower())
        if match and int(match.group(1)) >= 2:
            raise SpecError(
                f"the spec requires {line.strip()!r}, but Triton {release} (before 24.12) "
                "breaks with numpy 2 in the environment (BYTES inputs fail, outputs come back "
                "empty). Require numpy<2, or target --triton-version 24.12 or later."
            )


def runtime_wheel(reporter: Reporter, *, cache_dir: Optional[Path] = None) -> Optional[Path]:
    """Build (or reuse) a wheel of this tritonpy checkout; None when not running from one.

    The sources are copied to a temporary directory first, so the checkout stays untouched.
    """
    root = source_checkout()
    if root is None:
        return None
    fingerprint = source_fingerprint()
    target = (cache_dir or cache_directory()) / "wheels" / fingerprint
    existing = sorted(target.glob("tritonpy-*.whl")) if target.is_dir() else []
    if existing:
        return existing[0]
    with tempfile.TemporaryDirectory(prefix="tritonpy-wheel-") as work:
        source = Path(work) / "src"
        source.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (root / name).is_file():
                shutil.copy2(root / name, source / name)
        shutil.copytree(
            root / "tritonpy", source / "tritonpy", ignore=shutil.ignore_patterns("__pycache__")
        )
        out = Path(work) / "out"
        base = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out)]
        try:
            run_command(
                [*base, "--no-build-isolation", str(source)],
                reporter,
                what="building the tritonpy wheel",
            )
        except CommandError:  # no setuptools/wheel here: let pip fetch the build backend
            run_command([*base, str(source)], reporter, what="building the tritonpy wheel")
        built = sorted(out.glob("tritonpy-*.whl"))
        if not built:
            raise CommandError(f"building the tritonpy wheel from {root} produced no wheel")
        target.mkdir(parents=True, exist_ok=True)
        staged = target / f".{built[0].name}.partial"
        shutil.copy2(built[0], staged)
        os.replace(staged, target / built[0].name)
        return target / built[0].name
