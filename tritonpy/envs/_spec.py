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

import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from .._runtime._optional import require
from .._tooling.errors import SpecError
from .._tooling.resources import find_resource
from ._markers import SkippedLine, TargetPython, marker_applies

if TYPE_CHECKING:
    from packaging.requirements import Requirement

PathLike = Union[str, "os.PathLike[str]"]

_PYTHON = re.compile(r"^python(?:\s*(?:[=<>~!]=?|\s)\s*(\d+)\.(\d+))?")
#: a comment in a requirements file: ``#`` at the start or after whitespace (pip's rule)
_COMMENT = re.compile(r"(^|\s+)#.*$")
_PARSING = "reading environment specs (PEP 508 requirements, environment.yml)"


def parse_requirement(line: str) -> Optional[Requirement]:
    """The PEP 508 requirement of a pip requirement line (comment and per-requirement pip
    options such as ``--hash`` left out), or None for options, paths and URLs.

    >>> str(parse_requirement("opencv-python-headless>=4.5,<5  # comment"))
    'opencv-python-headless<5,>=4.5'
    """
    require("packaging", feature=_PARSING, extra="tools")
    from packaging.requirements import InvalidRequirement, Requirement

    text = _COMMENT.sub("", line).split(" --", 1)[0].strip()
    if not text or text.startswith("-"):
        return None
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None  # a path, a URL, an option pip understands and PEP 508 does not


def requirement_applies(line: str, target: TargetPython) -> bool:
    """Whether pip installs the requirement ``line`` into ``target``: False only for a line
    whose environment marker is false there (options, paths, URLs and undecided markers
    apply).

    >>> requirement_applies('pywin32; sys_platform == "win32"', TargetPython("3.10"))
    False
    """
    requirement = parse_requirement(line)
    return requirement is None or marker_applies(requirement.marker, target) is not False


def canonical_name(name: str) -> str:
    """A project or extra name in its normalised form (PEP 503).

    >>> canonical_name("Pillow_SIMD")
    'pillow-simd'
    """
    require("packaging", feature=_PARSING, extra="tools")
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))


def requirement_name(line: str) -> Optional[str]:
    """The normalised project name of a pip requirement line, or None for options, paths and
    URLs.

    >>> requirement_name("opencv-python-headless>=4.5,<5  # comment")
    'opencv-python-headless'
    """
    requirement = parse_requirement(line)
    return canonical_name(requirement.name) if requirement else None


def requirement_extras(line: str) -> List[str]:
    """The extras a requirement line asks for, normalised, sorted.

    >>> requirement_extras("tritonpy[image, Torch]>=0.1")
    ['image', 'torch']
    """
    requirement = parse_requirement(line)
    return sorted(canonical_name(e) for e in requirement.extras) if requirement else []


@dataclass(frozen=True)
class EnvSpec:
    """What an environment must contain.

    ``python`` is ``"X.Y"`` or None (not pinned); ``conda`` the conda packages other than
    ``python`` and ``pip``; ``pip`` the pip requirement lines (options such as
    ``--extra-index-url`` included, nested ``-r FILE`` files inlined, ``-c FILE`` paths made
    absolute, ``tritonpy`` lines left out); ``tritonpy_lines`` the ``tritonpy`` lines (their
    extras are honoured, the running tritonpy is installed); ``text`` the source text and
    ``included`` the texts of the nested ``-r``/``-c`` files, by absolute path (both part of
    the rebuild hash); ``python_full`` the full version of the environment's Python when known
    (markers are evaluated for :attr:`target`, not for the running interpreter).
    """

    name: Optional[str]
    python: Optional[str]
    conda: Tuple[str, ...] = ()
    pip: Tuple[str, ...] = ()
    channels: Tuple[str, ...] = ()
    source: Optional[Path] = None
    text: str = ""
    tritonpy_lines: Tuple[str, ...] = ()
    included: Tuple[Tuple[Path, str], ...] = ()
    python_full: Optional[str] = None

    @property
    def target(self) -> TargetPython:
        """The environment the requirement lines' markers are evaluated for: Python
        ``python`` (``python_full`` when known), Linux, this machine's architecture."""
        return TargetPython(self.python, self.python_full)

    @property
    def applicable_pip(self) -> Tuple[str, ...]:
        """The pip lines without those whose marker is false for :attr:`target`."""
        return tuple(line for line in self.pip if requirement_applies(line, self.target))

    @property
    def distributions(self) -> List[str]:
        """Project names of the pip requirements that apply to :attr:`target` (what the
        progress line lists and verification imports); a line whose marker is false there is
        left out: pip skips it too (:attr:`marker_skipped`)."""
        names = [requirement_name(line) for line in self.applicable_pip]
        return [n for n in names if n]

    @property
    def marker_skipped(self) -> List[SkippedLine]:
        """The pip lines whose environment marker is false for :attr:`target`, with why."""
        skipped = []
        for line in self.pip:
            requirement = parse_requirement(line)
            if requirement is not None and not requirement_applies(line, self.target):
                name = canonical_name(requirement.name)
                marker = str(requirement.marker)
                skipped.append(SkippedLine(line, name, marker, self.target.describe()))
        return skipped

    @property
    def tritonpy_extras(self) -> List[str]:
        """The extras the spec's ``tritonpy[...]`` lines ask for, in order, without repeats
        (a line whose marker is false for :attr:`target` asks for none)."""
        lines = [ln for ln in self.tritonpy_lines if requirement_applies(ln, self.target)]
        found = [e for line in lines for e in requirement_extras(line)]
        return list(dict.fromkeys(found))

    @property
    def digest(self) -> str:
        """A stable hash of everything that decides the environment's content."""
        parts = [self.text, repr((self.python, self.conda, self.pip, self.channels))]
        parts.extend(text for _, text in self.included)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def with_python(self, python: str, full: Optional[str] = None) -> EnvSpec:
        """A copy with ``python`` replaced (``--python`` overrides the spec's pin) and the
        full version ``full`` (``"3.10.13"``: the local builder's interpreter; None: not
        known) that markers are evaluated for."""
        return dataclasses.replace(self, python=python, python_full=full)


# ------------------------------------------------------------------------ environment.yml
def parse_environment_yaml(text: str, source: str = "environment.yml") -> Dict[str, Any]:
    """Parse a conda environment file with PyYAML (``safe_load``); a syntax error names the
    file and line.

    >>> parse_environment_yaml("name: x\\ndependencies:\\n  - python=3.10\\n  - pip:\\n"
    ...                        "      - numpy<2\\n")["dependencies"]
    ['python=3.10', {'pip': ['numpy<2']}]
    """
    require("yaml", feature=_PARSING, extra="tools")
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        # the context mark is where the broken construct starts (the line to fix)
        mark = exc.context_mark or exc.problem_mark
        where = f", line {mark.line + 1}" if mark is not None else ""
        what = " ".join(p for p in (exc.problem, exc.context) if p)
        raise SpecError(
            f"{source}{where}: not valid YAML ({what}). A conda environment file is a mapping "
            "with name, channels and a dependencies list ('- numpy', '- pip:' with a list)."
        ) from exc
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise SpecError(f"{source}: expected a mapping (name, channels, dependencies)")
    return data


# ----------------------------------------------------------------------------- spec reading
#: a nested requirements or constraints file: ``-r FILE``, ``-rFILE``, ``--requirement=FILE``
_NESTED = re.compile(r"^(-r|-c|--requirement|--constraint)\s*=?\s*(\S+)$")


def _read_nested(target: Path, including: Path, line: str) -> str:
    try:
        return target.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(
            f"{including}: the line {line!r} names {target}, which cannot be read "
            f"({exc.strerror or exc}). Paths after -r/-c are relative to the file that names "
            "them; fix the path or create the file."
        ) from exc


def _nested(
    line: str, source: Path, chain: Tuple[Path, ...], included: Dict[Path, str]
) -> Optional[List[str]]:
    """The lines ``line`` stands for when it names a nested file (None when it does not): a
    ``-r`` file's lines (followed recursively), a ``-c`` file's absolute path. Every nested
    file's text goes into ``included``; a file that includes itself is refused."""
    option = _NESTED.match(line)
    if not option or "://" in option.group(2):
        return None  # a requirement, an option, or a URL pip fetches itself
    flag, name = option.groups()
    target = Path(name) if Path(name).is_absolute() else source.parent.absolute() / name
    real = target.resolve()
    if real in chain:
        cycle = " -> ".join(str(p) for p in (*chain, real))
        raise SpecError(
            f"{source}: {line!r} makes a cycle of requirements files ({cycle}); remove one of "
            "the -r/-c lines of that cycle"
        )
    constraint = [f"-c {target}"] if flag in ("-c", "--constraint") else []
    if real in included:
        return constraint  # a file included twice installs its lines once
    included[real] = _read_nested(target, source, line)
    lines = _expand(_entries(included[real]), target, (*chain, real), included)
    return constraint or lines  # pip reads the constraints itself; followed for the hash


#: one line of a spec: its line number in the file (None: not known) and its text
_Entry = Tuple[Optional[int], str]


def _entries(text: str) -> List[_Entry]:
    r"""The non-empty lines of a requirements file with their line numbers, comments left
    out, a line ending in a backslash joined with the next one (as pip joins them).

    >>> _entries("numpy==1.26.4 \\\n    --hash=sha256:ab  # pinned\n\n# comment\nfoo\n")
    [(1, 'numpy==1.26.4     --hash=sha256:ab'), (5, 'foo')]
    """
    joined: List[_Entry] = []
    pending: List[str] = []
    first = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.endswith("\\") and not _COMMENT.match(raw):
            first = first if pending else number
            pending.append(raw.rstrip("\\"))
            continue
        joined.append((first, "".join([*pending, raw])) if pending else (number, raw))
        pending = []
    if pending:
        joined.append((first, "".join(pending)))
    stripped = ((n, _COMMENT.sub("", line).strip()) for n, line in joined)
    return [(n, line) for n, line in stripped if line]


def _yaml_entries(text: str, entries: Sequence[str]) -> List[_Entry]:
    """The pip entries of an environment file with the line numbers they are found on (in
    order; None where the YAML text does not hold the entry as written)."""
    lines = text.splitlines()
    found: List[_Entry] = []
    at = 0
    for entry in entries:
        number = next((i for i in range(at, len(lines)) if entry.strip() in lines[i]), None)
        at = at if number is None else number + 1
        found.append((None if number is None else number + 1, entry))
    return found


#: what pip takes for a path, an archive or a URL rather than a requirement
_LOCATION = re.compile(r"://|^file:|[/\\]|^[.~]|\$\{|\.(whl|zip|tar|tgz|tar\.(gz|bz2|xz))$")
#: ``numpy=1.26``: a single ``=`` where pip needs ``==``
_SINGLE_EQUALS = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?)\s*=\s*([^=<>!~].*)$")


def _check_line(line: str, source: Path, number: Optional[int]) -> None:
    """Refuse a line that is neither a PEP 508 requirement nor what pip reads besides
    (an option such as ``--index-url``/``-e``, a path, an archive, a URL), naming the file
    and line."""
    text = line.split(" --", 1)[0].strip()
    if not text or text.startswith("-") or _LOCATION.search(text):
        return
    require("packaging", feature=_PARSING, extra="tools")
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        Requirement(text)
    except InvalidRequirement as exc:
        where = f"{source}, line {number}" if number else str(source)
        why = str(exc).splitlines()[0] if str(exc) else "not PEP 508"
        single = _SINGLE_EQUALS.match(text)
        hint = f" Did you mean '{single.group(1)}=={single.group(2)}'?" if single else ""
        raise SpecError(
            f"{where}: {text!r} is not a valid requirement ({why}).{hint} A requirement line "
            "is NAME[EXTRAS] [VERSIONS] [; MARKER] (numpy==1.26.4, "
            'foo>=1; python_version < "3.9"), a pip option (--index-url URL, -e PATH), a '
            "path or a URL; fix the line."
        ) from exc


def _expand(
    entries: Sequence[_Entry], source: Path, chain: Tuple[Path, ...], included: Dict[Path, str]
) -> List[str]:
    """``entries`` (the lines of ``source``) with nested files followed (see :func:`_nested`)
    and every other line checked (see :func:`_check_line`)."""
    kept: List[str] = []
    for number, entry in entries:
        line = str(entry).strip()
        nested = _nested(line, source, chain, included)
        if nested is None:
            _check_line(line, source, number)
        kept.extend([line] if nested is None else nested)
    return [line for line in kept if line]


def _pip_lines(
    entries: Sequence[_Entry], source: Path
) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[Tuple[Path, str], ...]]:
    """(pip lines, tritonpy lines, nested files read) of the pip entries of ``source``."""
    included: Dict[Path, str] = {}
    lines = _expand(entries, source, (source.resolve(),), included)
    kept = [line for line in lines if requirement_name(line) != "tritonpy"]
    tritonpy = [line for line in lines if requirement_name(line) == "tritonpy"]
    return tuple(kept), tuple(tritonpy), tuple(included.items())


def _python_of(dependency: str) -> Optional[Tuple[bool, Optional[str]]]:
    text = dependency.strip()
    match = _PYTHON.match(text)
    if not match or (len(text) > 6 and text[6] not in " \t=<>~!"):
        return None  # not python (e.g. python-dateutil)
    return True, (f"{match.group(1)}.{match.group(2)}" if match.group(1) else None)


def conda_package_name(dependency: str) -> str:
    """The package name of a conda dependency (MatchSpec: ``numpy>=1.26``, ``python=3.10.*``,
    ``libjpeg-turbo 3.*``).

    >>> conda_package_name("libjpeg-turbo >=3")
    'libjpeg-turbo'
    """
    return re.split(r"[=<>!~\s\[]", dependency.strip(), maxsplit=1)[0]


def _conda_dependencies(
    path: Path, data: Dict[str, Any]
) -> Tuple[Optional[str], List[str], List[str]]:
    """(the Python pin, the conda packages other than python and pip, the pip entries) of an
    environment file's ``dependencies``."""
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
        text = str(dependency).strip()
        found = _python_of(text)
        if found is not None:
            python = found[1] or python
        elif conda_package_name(text) != "pip":
            conda.append(text)
    return python, conda, pip_entries


def read_spec(path: PathLike) -> EnvSpec:
    """Read a conda environment file (``.yml``/``.yaml``) or a requirements file (any other
    name). Nested ``-r FILE``/``-c FILE`` lines (also ``--requirement=FILE``,
    ``--constraint=FILE``; relative to the file that names them) are followed recursively: a
    ``-r`` file's requirements count as the spec's, every nested file's text is part of the
    rebuild hash, and a cycle is refused.

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
    if path.suffix not in (".yml", ".yaml"):
        pip, tritonpy, included = _pip_lines(_entries(text), path)
        return EnvSpec(
            None, None, pip=pip, source=path, text=text, tritonpy_lines=tritonpy, included=included
        )
    data = parse_environment_yaml(text, str(path))
    python, conda, pip_entries = _conda_dependencies(path, data)
    pip, tritonpy, included = _pip_lines(_yaml_entries(text, pip_entries), path)
    name = data.get("name")
    channels = tuple(str(c) for c in data.get("channels") or [])
    return EnvSpec(
        str(name) if name else None,
        python,
        tuple(conda),
        pip,
        channels,
        path,
        text,
        tritonpy,
        included,
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
    if path.exists():
        return path
    stem = path.name[: -len(path.suffix)] if path.suffix in (".yml", ".yaml") else path.name
    if len(path.parts) == 1 and stem in shipped_specs():
        found = find_resource(f"envs/{stem}.yml") or find_resource(f"envs/{stem}.yaml")
        if found is not None:
            return found
    shipped = ", ".join(shipped_specs()) or "none"
    raise SpecError(
        f"the environment spec {str(value)!r} is neither a file (no file {path.absolute()}) "
        f"nor a spec shipped with tritonpy (shipped: {shipped}). Pass the path of a conda "
        "environment file (--env FILE) or requirements file (--requirements FILE), or one of "
        "the shipped names (--env opencv)."
    )
