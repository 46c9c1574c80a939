"""The target release's rules for a model environment, each decided by the release table
(:mod:`tritonpy._tooling.release_facts`) and saying which fact of which release decided it.

- :func:`stub_decision`: an environment needs its own ``triton_python_backend_stub`` exactly
  when its Python is not the release container's (``facts.python``);
- :func:`env_numpy_limit` / :func:`container_numpy_pin`: numpy 2 inside an environment works
  only where the release's stub handles BYTES with it (``facts.numpy2_bytes_ok``); the
  container's own Python keeps ``facts.numpy_pin`` (``numpy<2``) on every release;
- :func:`name_problem`: model and instance names holding shell characters are refused from
  25.08 (``facts.refuses_shell_names``);
- :func:`inspect_archive`: archive members 26.06's extractor refuses
  (``facts.refuses_unsafe_archives``) and conda ``activate.d`` hooks that stop running from
  25.08 (``facts.sources_env_activate`` false).

Example::

    release = TritonRelease.parse("24.11")
    decision = stub_decision("3.10", release)
    decision.needed        # True: the 24.11 container runs Python 3.12
    decision.reason        # '... Python 3.12 (server@r24.11:qa/L0_backend_python/test.sh)'
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Dict, FrozenSet, List, Optional, Set

from .._tooling.archives import member_name, member_problem
from .._tooling.release_facts import SHELL_CHARACTERS
from .._tooling.releases import TritonRelease

#: what python_backend's IsValidIdentifier refuses (pb_utils.h INVALID_CHARS, r25.08 on): the
#: table's SHELL_CHARACTERS plus the backslash, which the same string holds
REFUSED_NAME_CHARACTERS: FrozenSet[str] = SHELL_CHARACTERS | {"\\"}

#: where conda keeps the hooks its ``activate`` script sources
HOOKS_DIR = "etc/conda/activate.d/"
_EXPORT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=", re.MULTILINE)
_HOOK_BYTES = 65536  # hooks are short scripts; a longer member is read this far


def _cite(release: TritonRelease, fact: str) -> str:
    facts = release.facts
    where = facts.cites(fact)
    if facts.assumed_from is not None:
        where += f"; {release} is outside the table: the facts of {facts.assumed_from} assumed"
    return where


@dataclass(frozen=True)
class StubDecision:
    """Whether an environment of Python ``python`` needs its own stub on ``release``."""

    python: str
    release: str
    container_python: str
    needed: bool
    reason: str


def stub_decision(python: str, release: TritonRelease) -> StubDecision:
    """Needed iff ``python`` differs from the Python of the release's container.

    >>> stub_decision("3.12", TritonRelease.parse("24.11")).needed
    False
    """
    container = release.python
    needed = python != container
    relation = "differs from" if needed else "is"
    verdict = "needs its own triton_python_backend_stub" if needed else "runs on the release's stub"
    reason = (
        f"environment Python {python} {relation} the Python {container} of the release "
        f"{release} container ({_cite(release, 'python')}): it {verdict}"
    )
    return StubDecision(python, release.name, container, needed, reason)


def env_numpy_limit(release: TritonRelease) -> Optional[str]:
    """The limit an environment's numpy must keep on ``release`` (``"numpy<2"``), or None
    where numpy 2 works (the stub's pybind11 handles BYTES tensors with it).

    >>> env_numpy_limit(TritonRelease.parse("24.10")), env_numpy_limit(TritonRelease.parse("24.11"))
    ('numpy<2', None)
    """
    return None if release.facts.numpy2_bytes_ok else "numpy<2"


def env_numpy_reason(release: TritonRelease) -> str:
    """Why :func:`env_numpy_limit` decided as it did, naming the release and the fact."""
    facts = release.facts
    where = _cite(release, "numpy2_bytes_ok")
    if facts.numpy2_bytes_ok:
        return (
            f"the release {release} stub is built with pybind11 {facts.pybind11}, which "
            f"handles BYTES tensors with numpy 2 ({where})"
        )
    return (
        f"the release {release} stub is built with pybind11 {facts.pybind11}: with numpy 2 in "
        f"the environment BYTES requests fail ({where})"
    )


def container_numpy_pin(release: TritonRelease) -> str:
    """The numpy requirement of the container's own Python (``numpy<2`` on every release
    known): what an install into it must keep.

    >>> container_numpy_pin(TritonRelease.parse("26.07"))
    'numpy<2'
    """
    return release.facts.numpy_pin


def container_numpy_reason(release: TritonRelease) -> str:
    return (
        f"the release {release} container installs {release.facts.numpy_pin} "
        f"({_cite(release, 'numpy_pin')})"
    )


def name_problem(kind: str, name: str, release: TritonRelease) -> Optional[str]:
    """Why Triton ``release`` refuses the ``kind`` (``"model"``, ``"instance group"``)
    ``name``, or None when it takes it.

    >>> name_problem("model", "a;b", TritonRelease.parse("24.10")) is None
    True
    """
    if not release.facts.refuses_shell_names:
        return None
    found = sorted({c for c in name if c in REFUSED_NAME_CHARACTERS})
    if not found:
        return None
    return (
        f"{kind} name {name!r} holds {' '.join(found)}: Triton {release} refuses the stub of a "
        f"Python model whose name holds any of {''.join(sorted(REFUSED_NAME_CHARACTERS))} "
        f"({_cite(release, 'refuses_shell_names')}); rename it with letters, digits, '_', "
        "'-' or '.' only"
    )


def model_name_problems(directory: str, config: Any, release: TritonRelease) -> List[str]:
    """What ``release`` refuses in the names of the Python model of directory ``directory``
    (its config.pbtxt as ``config``, or None): the model's name (the directory Triton loads
    it by, and the config's ``name``) and its instance groups' names, which the stub's name
    and its shared-memory region are made of.

    >>> model_name_problems("a&b", None, TritonRelease.parse("25.08"))[0][:24]
    "model name 'a&b' holds &"
    """
    names = [("model", directory)]
    if config is not None:
        if config.name and config.name != directory:
            names.append(("model", config.name))
        names.extend(("instance group", g.name) for g in config.instance_group if g.name)
    problems = (name_problem(kind, name, release) for kind, name in names)
    return [problem for problem in problems if problem is not None]


@dataclass
class ArchiveFindings:
    """What :func:`inspect_archive` found: members the release's extractor refuses
    (``unsafe``, one line each) and conda activation hooks (member -> the variables it sets)."""

    unsafe: List[str] = field(default_factory=list)
    hooks: Dict[str, List[str]] = field(default_factory=dict)


def _through_link(name: str, links: Set[str]) -> Optional[str]:
    parts = PurePosixPath(name).parts
    for end in range(1, len(parts)):
        parent = "/".join(parts[:end])
        if parent in links:
            return parent
    return None


def _member_line(member: tarfile.TarInfo, links: Set[str]) -> Optional[str]:
    """The 26.06 refusal of ``member`` (libarchive's SECURE_NODOTDOT, SECURE_NOABSOLUTEPATHS,
    SECURE_SYMLINKS; and a link pointing outside, which tritonpy never writes)."""
    problem = member_problem(member)
    if problem is not None:
        return f"{problem.name!r}: {problem.why}"
    link = _through_link(member_name(member.name), links)
    if link is not None:
        return f"{member.name!r}: written through the symbolic link {link!r} of the archive"
    return None


def inspect_archive(archive: str) -> ArchiveFindings:
    """One read of the environment archive ``archive``: the unsafe members and the
    ``etc/conda/activate.d`` hooks with the variables they set."""
    findings = ArchiveFindings()
    links: Set[str] = set()
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            line = _member_line(member, links)
            if line is not None:
                findings.unsafe.append(line)
            name = member_name(member.name)
            if member.issym():
                links.add(name.rstrip("/"))
            if name.startswith(HOOKS_DIR) and member.isfile() and name.endswith(".sh"):
                stream = tar.extractfile(member)
                text = stream.read(_HOOK_BYTES).decode("utf-8", "replace") if stream else ""
                variables = [v for v in dict.fromkeys(_EXPORT.findall(text))]
                findings.hooks[name] = variables
    return findings


def unsafe_message(archive: str, unsafe: List[str], release: TritonRelease) -> str:
    shown = "\n".join(f"  {line}" for line in unsafe[:10])
    more = f"\n  ... and {len(unsafe) - 10} more" if len(unsafe) > 10 else ""
    refuses = release.facts.refuses_unsafe_archives
    verdict = "refuses" if refuses else "accepts, but releases from 26.06 refuse,"
    return (
        f"the environment archive {archive} holds {len(unsafe)} member(s) Triton {release} "
        f"{verdict} ({_cite(release, 'refuses_unsafe_archives')}: no '..', no absolute "
        f"path, no write through a link):\n{shown}{more}\nRebuild the environment without "
        "them (a link to a file outside the environment: copy the file in instead)"
    )


def hooks_message(archive: str, hooks: Dict[str, List[str]], release: TritonRelease) -> str:
    """The warning for conda activation hooks that ``release`` does not run."""
    listed = "; ".join(
        f"{name} (sets {', '.join(variables) or 'no variable tritonpy can name'})"
        for name, variables in hooks.items()
    )
    variables = sorted({v for names in hooks.values() for v in names})
    first = variables[0] if variables else "NAME"
    return (
        f"the environment {archive} has conda activation hooks: {listed}. Triton {release} "
        "no longer sources the environment's bin/activate "
        f"({_cite(release, 'sources_env_activate')}): the stub gets only PATH and "
        "LD_LIBRARY_PATH, so these hooks do not run and the "
        "variables they set are unset when the model runs. Set them in the model itself "
        f"before importing what needs them (in initialize: os.environ['{first}'] = ...), or "
        "build the environment without the packages that need them, or target "
        "--triton-version 25.07 or earlier"
    )
