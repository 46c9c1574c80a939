"""Environment specs: conda environment files (with a ``pip:`` section) and requirements files.

Both builders read the same :class:`EnvSpec`: the conda builder installs ``conda`` packages with
conda and ``pip`` lines with pip; the local builder takes the Python version and the pip lines
(and refuses conda-only packages, naming them). ``tritonpy`` lines are kept apart
(``tritonpy_lines``): the builders always install the running tritonpy themselves, and only the
extras these lines name (``tritonpy[image]``) are honoured.

``--env NAME`` also names a spec that ships with tritonpy (:func:`resolve_spec`).

Example::

    spec = read_spec(resolve_spec("opencv"))     # the shipped envs/opencv.yml
    spec.python, spec.pip      # ('3.10', ('numpy<2', 'opencv-python-headless>=4.5,<5'))
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from .._tooling.errors import SpecError
from .._tooling.resources import find_resource

__all__ = [
    "EnvSpec",
    "parse_environment_yaml",
    "read_spec",
    "requirement_extras",
    "requirement_name",
    "resolve_spec",
    "shipped_specs",
]

PathLike = Union[str, "os.PathLike[str]"]

_PYTHON = re.compile(r"^python(?:\s*(?:[=<>~!]=?|\s)\s*(\d+)\.(\d+))?")
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\s*\[([^\]]*)\]")


def requirement_name(line: str) -> Optional[str]:
    """The normalised project name of a pip requirement line, or None for options, paths and
    URLs.

    >>> requirement_name("opencv-python-headless>=4.5,<5  # comment")
    'opencv-python-headless'
    """
    text = line.split("#", 1)[0].strip()
    if not text or text.startswith(("-", ".", "/")) or "://" in text.split("@")[0]:
        return None
    match = _NAME.match(text)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else None


def requirement_extras(line: str) -> List[str]:
    """The extras a requirement line asks for, normalised.

    >>> requirement_extras("tritonpy[image, Torch]>=0.1")
    ['image', 'torch']
    """
    match = _EXTRAS.match(line.split("#", 1)[0].strip())
    if not match:
        return []
    extras = [e.strip() for e in match.group(1).split(",")]
    return [re.sub(r"[-_.]+", "-", e).lower() for e in extras if e]


@dataclass(frozen=True)
class EnvSpec:
    """What an environment must contain.

    ``python`` is ``"X.Y"`` or None (not pinned); ``conda`` the conda packages other than
    ``python`` and ``pip``; ``pip`` the pip requirement lines (options such as
    ``--extra-index-url`` included, ``-r``/``-c`` paths made absolute, ``tritonpy`` lines
    left out); ``tritonpy_lines`` the ``tritonpy`` lines (their extras are honoured, the
    running tritonpy is installed); ``text`` the source text (part of the rebuild hash).
    """

    name: Optional[str]
    python: Optional[str]
    conda: Tuple[str, ...] = ()
    pip: Tuple[str, ...] = ()
    channels: Tuple[str, ...] = ()
    source: Optional[Path] = None
    text: str = ""
    tritonpy_lines: Tuple[str, ...] = ()

    @property
    def distributions(self) -> List[str]:
        """Project names of the pip requirements (what verification imports)."""
        names = [requirement_name(line) for line in self.pip]
        return [n for n in names if n]

    @property
    def tritonpy_extras(self) -> List[str]:
        """The extras the spec's ``tritonpy[...]`` lines ask for, in order, without repeats."""
        found = [e for line in self.tritonpy_lines for e in requirement_extras(line)]
        return list(dict.fromkeys(found))

    @property
    def digest(self) -> str:
        """A stable hash of everything that decides the environment's content."""
        parts = [self.text, repr((self.python, self.conda, self.pip, self.channels))]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def with_python(self, python: str) -> EnvSpec:
        """A copy with ``python`` replaced (``--python`` overrides the spec's pin)."""
        return EnvSpec(
            self.name,
            python,
            self.conda,
            self.pip,
            self.channels,
            self.source,
            self.text,
            self.tritonpy_lines,
        )


# ---------------------------------------------------------------------- a YAML subset reader
def _strip_comment(text: str) -> str:
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _scalar(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(item) for item in text[1:-1].split(",") if item.strip()]
    return text


def parse_environment_yaml(text: str, source: str = "environment.yml") -> Dict[str, Any]:
    """Parse the YAML subset conda environment files use (mappings, block and inline lists,
    quotes, comments). Uses PyYAML when it is installed.

    >>> parse_environment_yaml("name: x\\ndependencies:\\n  - python=3.10\\n  - pip:\\n"
    ...                        "      - numpy<2\\n")["dependencies"]
    ['python=3.10', {'pip': ['numpy<2']}]
    """
    try:
        import yaml
    except ImportError:
        yaml = None  # type: ignore[assignment]
    if yaml is not None:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SpecError(f"{source}: not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise SpecError(f"{source}: expected a mapping (name, channels, dependencies)")
        return data
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        body = _strip_comment(raw)
        if body.strip():
            lines.append((number, len(body) - len(body.lstrip(" ")), body.strip()))
    value, end = _block(lines, 0, 0, source)
    if end != len(lines) or not isinstance(value, dict):
        line = lines[end][0] if end < len(lines) else len(lines)
        raise SpecError(f"{source}, line {line}: unexpected indentation or content")
    return value


def _block(lines: List[Tuple[int, int, str]], i: int, indent: int, source: str) -> Any:
    if i >= len(lines):
        return None, i
    is_list = lines[i][2].startswith("- ") or lines[i][2] == "-"
    result: Any = [] if is_list else {}
    while i < len(lines) and lines[i][1] == indent:
        number, _, body = lines[i]
        if is_list:
            if not (body.startswith("- ") or body == "-"):
                raise SpecError(f"{source}, line {number}: expected a list item '- ...'")
            item = body[1:].strip()
            key, sep, rest = item.partition(":")
            if sep and not rest.strip() and re.fullmatch(r"[A-Za-z_][\w-]*", key):
                child_indent = lines[i + 1][1] if i + 1 < len(lines) else indent
                if child_indent <= indent:
                    raise SpecError(f"{source}, line {number}: '{key}:' has no entries")
                value, i = _block(lines, i + 1, child_indent, source)
                result.append({key: value})
                continue
            result.append(_scalar(item))
            i += 1
        else:
            key, sep, rest = body.partition(":")
            if not sep:
                raise SpecError(f"{source}, line {number}: expected 'key: value'")
            if rest.strip():
                result[key.strip()] = _scalar(rest)
                i += 1
            elif i + 1 < len(lines) and lines[i + 1][1] > indent:
                result[key.strip()], i = _block(lines, i + 1, lines[i + 1][1], source)
            elif i + 1 < len(lines) and lines[i + 1][1] == indent and lines[i + 1][2][:1] == "-":
                result[key.strip()], i = _block(lines, i + 1, indent, source)
            else:
                result[key.strip()] = None
                i += 1
    return result, i


# ----------------------------------------------------------------------------- spec reading
def _pip_lines(entries: List[str], base: Path) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(pip lines, tritonpy lines)."""
    kept, tritonpy = [], []
    for entry in entries:
        line = str(entry).strip()
        option = re.match(r"^(-r|-c|--requirement|--constraint)\s*=?\s*(\S+)$", line)
        if option:
            target = Path(option.group(2))
            line = f"{option.group(1)} {target if target.is_absolute() else base / target}"
        elif requirement_name(line) == "tritonpy":
            tritonpy.append(line)  # the builders install the running tritonpy themselves
            continue
        if line:
            kept.append(line)
    return tuple(kept), tuple(tritonpy)


def _python_of(dependency: str) -> Optional[Tuple[bool, Optional[str]]]:
    text = dependency.strip()
    match = _PYTHON.match(text)
    if not match or (len(text) > 6 and text[6] not in " \t=<>~!"):
        return None  # not python (e.g. python-dateutil)
    return True, (f"{match.group(1)}.{match.group(2)}" if match.group(1) else None)


def read_spec(path: PathLike) -> EnvSpec:
    """Read a conda environment file (``.yml``/``.yaml``) or a requirements file (any other
    name).

    Example::

        read_spec("model_templates/image_preprocess/environment.yml").pip
        # ('numpy<2', 'opencv-python-headless>=4.5,<5')
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(
            f"cannot read the environment spec {path}: {exc.strerror or exc}. Pass a conda "
            "environment file (--env envs/NAME.yml) or a requirements file (--requirements)."
        ) from exc
    base = path.parent.absolute()
    if path.suffix not in (".yml", ".yaml"):
        entries = [_strip_comment(line).strip() for line in text.splitlines()]
        pip, tritonpy = _pip_lines([e for e in entries if e], base)
        return EnvSpec(None, None, pip=pip, source=path, text=text, tritonpy_lines=tritonpy)
    data = parse_environment_yaml(text, str(path))
    python: Optional[str] = None
    conda: List[str] = []
    pip_entries: List[str] = []
    dependencies = data.get("dependencies") or []
    if not isinstance(dependencies, list):
        raise SpecError(f"{path}: 'dependencies' must be a list, got {dependencies!r}")
    for dependency in dependencies:
        if isinstance(dependency, dict):
            unknown = set(dependency) - {"pip"}
            if unknown:
                raise SpecError(
                    f"{path}: unknown dependency section(s) {sorted(unknown)}; expected "
                    "'- pip:' with a list of pip requirements"
                )
            pip_entries.extend(str(p) for p in dependency.get("pip") or [])
            continue
        text_dep = str(dependency)
        found = _python_of(text_dep)
        if found is not None:
            python = found[1] or python
        elif text_dep.strip().split("=")[0].split(" ")[0] != "pip":
            conda.append(text_dep.strip())
    channels = data.get("channels") or []
    name = data.get("name")
    pip, tritonpy = _pip_lines(pip_entries, base)
    return EnvSpec(
        str(name) if name else None,
        python,
        tuple(conda),
        pip,
        tuple(str(c) for c in channels),
        path,
        text,
        tritonpy,
    )


def shipped_specs() -> List[str]:
    """The names of the environment specs that ship with tritonpy (``envs/NAME.yml``).

    >>> "opencv" in shipped_specs()
    True
    """
    folder = find_resource("envs")
    if folder is None or not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.iterdir() if p.suffix in (".yml", ".yaml"))


def resolve_spec(value: PathLike) -> Path:
    """The spec file ``value`` names: an existing file, else a shipped spec by name
    (``"opencv"`` or ``"opencv.yml"`` -> ``envs/opencv.yml`` of this tritonpy installation).

    Example::

        resolve_spec("opencv")      # .../site-packages/tritonpy/_data/envs/opencv.yml
        resolve_spec("./env.yml")   # PosixPath('env.yml')
    """
    path = Path(value)
    if path.exists() or len(path.parts) != 1:
        return path
    stem = path.name[: -len(path.suffix)] if path.suffix in (".yml", ".yaml") else path.name
    if stem in shipped_specs():
        found = find_resource(f"envs/{stem}.yml") or find_resource(f"envs/{stem}.yaml")
        if found is not None:
            return found
    raise SpecError(
        f"the environment spec {str(value)!r} is neither a file nor a spec shipped with "
        f"tritonpy (shipped: {', '.join(shipped_specs()) or 'none'}). Pass the path of a conda "
        "environment file (--env FILE) or requirements file (--requirements FILE), or one of "
        "the shipped names (--env opencv)."
    )
