"""What a model's environment needs beyond its spec: the packages of the codecs it declares
(``tp.Image`` needs OpenCV, ``tp.TorchTensor`` needs torch) and the requirements of the
tritonpy extras its spec asks for (``tritonpy[image]``).

The codecs are found by importing ``model.py`` the way the config tooling does (fake pb_utils,
import only, nothing of the model runs). A distribution the spec already names is never added:
any pin the user wrote wins.

Example::

    scan = scan_model(Path("model_repository/preprocess"))
    [need.extra for need, where in scan.needs]        # ['image']
    for addition in plan_additions(read_spec("requirements.txt"), scan):
        print(addition.requirement, "for", addition.reason)
        # opencv-python-headless>=4.5 for tp.Image (input 'IMAGE')
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .._tooling.errors import SpecError
from ._selfwheel import running_distribution
from ._spec import EnvSpec, canonical_name, conda_package_name, parse_requirement, requirement_name


@dataclass(frozen=True)
class CodecNeed:
    """A codec class (``module``, ``name``) that imports ``imports`` when it runs; the tritonpy
    extra ``extra`` installs it; any distribution of ``provides`` (pip or conda names)
    satisfies it."""

    module: str
    name: str
    extra: str
    imports: str
    provides: Tuple[str, ...]


#: the codecs whose packages tritonpy's core does not install
CODEC_NEEDS: Tuple[CodecNeed, ...] = (
    CodecNeed(
        "tritonpy._runtime.codecs.image",
        "Image",
        "image",
        "cv2",
        (
            "opencv-python-headless",
            "opencv-python",
            "opencv-contrib-python-headless",
            "opencv-contrib-python",
            "opencv",  # conda
            "py-opencv",  # conda
        ),
    ),
    CodecNeed(
        "tritonpy._runtime.codecs.torch_tensor",
        "TorchTensor",
        "torch",
        "torch",
        ("torch", "pytorch"),
    ),
)

# used only when the running tritonpy has no installed metadata (a checkout never installed):
# the same requirements as pyproject.toml's extras
_FALLBACK_EXTRAS: Dict[str, Tuple[str, ...]] = {
    "image": ("opencv-python-headless>=4.5",),
    "torch": ("torch>=2.0",),
}

_EXTRA_CLAUSE = re.compile(r'extra == "([^"]+)"')

# import name -> the distribution to name in a "missing package" message, where they differ
_MODULE_HINTS = {
    "cv2": "opencv-python-headless",
    "PIL": "pillow",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "yaml": "pyyaml",
    "google": "protobuf",
    "bs4": "beautifulsoup4",
}


def missing_module_hint(module: str) -> str:
    """The distribution that usually provides the top-level module ``module``.

    >>> missing_module_hint("cv2.dnn")
    'opencv-python-headless'
    """
    top = module.split(".", 1)[0]
    return _MODULE_HINTS.get(top, top.replace("_", "-"))


@dataclass(frozen=True)
class Addition:
    """A requirement pack-env adds to the spec, and why."""

    requirement: str
    reason: str


@dataclass
class ModelScan:
    """What importing ``model.py`` told: the file (None when the model directory has none),
    whether it is a tritonpy model, the codec needs with where they are declared, and why the
    import failed (``error``; then nothing is known about the codecs)."""

    model_file: Optional[Path] = None
    is_tritonpy: bool = False
    needs: List[Tuple[CodecNeed, str]] = field(default_factory=list)
    error: Optional[str] = None


def _codec_need(codec: object) -> Optional[CodecNeed]:
    for need in CODEC_NEEDS:
        # the class itself: its __module__ says "tritonpy", where users import it from
        if isinstance(codec, getattr(importlib.import_module(need.module), need.name)):
            return need
    return None


def scan_model(model_dir: Path) -> ModelScan:
    """Import the model's ``model.py`` (highest version) with the fake pb_utils and list the
    codec needs of a tritonpy model's declared inputs and outputs.

    Example::

        need, where = scan_model(Path("models/preprocess")).needs[0]
        need.name, where       # ('Image', "input 'IMAGE'")
    """
    from .._tooling.pbtxt import ConfigError
    from ..config import find_model_file, load_model_class

    try:
        model_file = find_model_file(model_dir)
    except ConfigError:
        return ModelScan()
    try:
        loaded = load_model_class(model_dir)
    except ConfigError as exc:
        return ModelScan(model_file, error=str(exc))
    scan = ModelScan(model_file, loaded.is_tritonpy)
    if loaded.is_tritonpy:
        for section, kind in (("inputs", "input"), ("outputs", "output")):
            declared = getattr(loaded.cls, section, None) or {}
            for name, codec in declared.items():
                need = _codec_need(codec)
                if need is not None:
                    scan.needs.append((need, f"{kind} {name!r}"))
    return scan


def _provided_extras() -> List[str]:
    dist = running_distribution()
    if dist is None:
        return sorted(_FALLBACK_EXTRAS)
    extras = dist.metadata.get_all("Provides-Extra") or []
    return sorted({canonical_name(e) for e in extras})


def _strip_extra_marker(requirement: str, extra: str) -> Optional[str]:
    """``requirement`` (a ``Requires-Dist`` line) without its ``extra == "<extra>"`` clause, or
    None when the requirement belongs to another extra (or to none).

    >>> _strip_extra_marker('torch>=2; python_version < "3.13" and extra == "torch"', "torch")
    'torch>=2; python_version < "3.13"'
    """
    parsed = parse_requirement(requirement)
    if parsed is None or parsed.marker is None:
        return None
    # packaging writes a marker back normalised (extra == "image", one space, double quotes);
    # metadata writers put the extra clause last, as a top-level "and" term
    terms = str(parsed.marker).split(" and ")
    extras = [m.group(1) for m in map(_EXTRA_CLAUSE.fullmatch, terms) if m]
    if extra not in (canonical_name(e) for e in extras):
        return None
    rest = " and ".join(t for t in terms if not _EXTRA_CLAUSE.fullmatch(t))
    parsed.marker = None
    return f"{parsed}; {rest}" if rest else str(parsed)


def extra_requirements(extra: str) -> List[str]:
    """The requirements of the running tritonpy's extra ``extra``, from its installed
    metadata (``Requires-Dist: ...; extra == "image"``).

    >>> extra_requirements("image")
    ['opencv-python-headless>=4.5']
    """
    wanted = canonical_name(extra)
    dist = running_distribution()
    if dist is None:
        found = list(_FALLBACK_EXTRAS.get(wanted, ()))
    else:
        stripped = (_strip_extra_marker(r, wanted) for r in dist.requires or [])
        found = [r for r in stripped if r]
    if not found and wanted not in _provided_extras():
        raise SpecError(
            f"the spec asks for tritonpy[{extra}], but tritonpy has no extra {extra!r} "
            f"(it has: {', '.join(_provided_extras())}). Fix the tritonpy line of the spec."
        )
    return found


def _named(spec: EnvSpec) -> set[str]:
    conda = (requirement_name(conda_package_name(c)) for c in spec.conda)
    return set(spec.distributions) | {c for c in conda if c}


def plan_additions(spec: EnvSpec, scan: ModelScan) -> List[Addition]:
    """The requirements to add to ``spec``: those of the spec's ``tritonpy[...]`` extras, then
    those of the model's codecs, leaving out every distribution the spec (or an earlier
    addition) already names.

    Example::

        plan_additions(EnvSpec(None, None, pip=("opencv-python==4.10.0.84",)), scan)   # []
    """
    named = _named(spec)
    additions: List[Addition] = []

    def add(requirements: Sequence[str], provides: Sequence[str], reason: str) -> None:
        if named & set(provides):
            return
        for requirement in requirements:
            name = requirement_name(requirement)
            if name and name not in named:
                additions.append(Addition(requirement, reason))
                named.add(name)

    for extra in spec.tritonpy_extras:
        for requirement in extra_requirements(extra):
            name = requirement_name(requirement)
            add([requirement], [name] if name else [], f"tritonpy[{extra}] in the spec")
    for need, where in scan.needs:
        requirements = extra_requirements(need.extra)
        add(requirements, need.provides, f"tp.{need.name} ({where})")
    return additions
