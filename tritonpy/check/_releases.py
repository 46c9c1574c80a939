"""Release rules (TP8xx): what the target release (``--triton-version YY.MM``) refuses or
changes, by the table of release facts (:mod:`tritonpy._tooling.release_facts`). Every finding
names the release and the table's citation (``repo@rYY.MM:path``) of the fact it applies.

==========  ==============  ==========================================================
TP801       warning         the release is outside the table: its nearest known release's
                            facts are applied
TP802       error / info    a Python model's name holds a character the stub launcher
                            refuses (from 25.08)
TP803       error / info    an ``instance_group`` name holds one (instance names are
                            ``<group>_<n>``)
TP804       warning / info  the environment has conda ``activate.d`` hooks, or
                            ``bin/activate`` exports variables, that the release's launcher
                            no longer runs or sets (from 25.08; info when the only one is
                            conda-pack's own ``CONDA_PREFIX``)
TP805       error / info    an environment archive member written through a symbolic link
                            of the archive (refused from 26.06)
==========  ==============  ==========================================================

Each rule is an error (TP804: a warning, the model may not need what the hooks set) when the
release's facts say so, silent on releases before the change, and ``info`` without
``--triton-version``: the check cannot tell the target, info lines never fail it (not even
with ``--strict``), and a repository checked today often moves to a newer container later.
The archive members TP601-TP603 report carry the release's word too (see
:func:`archive_note`).
"""

from __future__ import annotations

import posixpath
import tarfile
import zlib
from functools import cache
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from .._tooling.archives import member_name
from .._tooling.env_archives import archive_members, resolve_env_path
from .._tooling.model_dirs import ENV_PARAMETER
from .._tooling.release_facts import (
    LAUNCH_BREAKING_CHARACTERS,
    LAUNCH_LINE_SOURCE,
    NEWEST_KNOWN,
    OLDEST_KNOWN,
    SHELL_CHARACTERS,
    FactValue,
    ReleaseFacts,
    facts_for,
    known_releases,
)
from ._activation import Activation, read_activation
from ._context import ModelEntry, Repository
from ._report import ERROR, INFO, WARNING, Finding, Severity

#: every rule code of this family
CODES = tuple(f"TP80{number}" for number in range(1, 6))

#: the characters the stub launcher refuses in a name: python_backend r25.08
#: src/pb_utils.h INVALID_CHARS, whose C string also holds a backslash (the table's
#: SHELL_CHARACTERS has it since its rows were verified; the union keeps this rule right
#: whatever the table holds)
REFUSED_NAME_CHARACTERS = SHELL_CHARACTERS | frozenset("\\")
_FIELD = f"parameters[{ENV_PARAMETER}]"
_EXAMPLES = 3


@cache
def first_release(name: str, value: FactValue) -> str:
    """The first release of the table from which fact ``name`` is ``value`` for good.

    >>> first_release("refuses_shell_names", True)
    '25.08'
    """
    first = NEWEST_KNOWN
    for release in reversed(known_releases()):
        if getattr(facts_for(release), name) != value:
            break
        first = release
    return first


def since(name: str, value: FactValue) -> Tuple[str, str]:
    """(the first release with the fact, its citation)."""
    first = first_release(name, value)
    return first, facts_for(first).cites(name)


def check_releases(repo: Repository) -> Iterator[Finding]:
    """Yield the release findings: TP801 once, then every python model's."""
    facts = repo.release.facts if repo.release is not None else None
    if facts is not None and facts.assumed_from is not None:
        yield _outside(facts)
    for entry in repo:
        if entry.is_python:
            yield from _names(entry, facts)
            yield from _environment(entry, facts)


def _outside(facts: ReleaseFacts) -> Finding:
    side = "newer" if facts.assumed_from == NEWEST_KNOWN else "older"
    assumed = facts.assumed_from
    return Finding(
        "TP801",
        WARNING,
        ".",
        "",
        f"release {facts.release} is {side} than the table of release facts "
        f"({OLDEST_KNOWN}-{NEWEST_KNOWN}, tritonpy._tooling.release_facts): every "
        f"per-release rule applies the facts of {assumed} (read from the r{assumed} branches, "
        f"e.g. {facts.cites('python')}), which {facts.release} may have changed",
        f"read the release notes of {facts.release} for changes since {assumed}, or update "
        f"tritonpy to a version whose table knows {facts.release}",
    )


# --- names ------------------------------------------------------------------------------------


def refused_characters(name: str) -> str:
    """The characters of ``name`` the 25.08+ stub launcher refuses, in order, once each."""
    return "".join(dict.fromkeys(c for c in name if c in REFUSED_NAME_CHARACTERS))


def _name_rule(
    facts: Optional[ReleaseFacts], name: str
) -> Optional[Tuple[Severity, str, str, str]]:
    """(severity, the characters, what the release does, its source) for ``name``, None when
    the release serves it."""
    bad = refused_characters(name)
    if not bad:
        return None
    if facts is None:
        first, cite = since("refuses_shell_names", True)
        return INFO, bad, f"Triton refuses it from release {first} on", cite
    if facts.refuses_shell_names:
        return ERROR, bad, f"release {facts.release} refuses it", facts.cites("refuses_shell_names")
    breaking = "".join(c for c in bad if c in LAUNCH_BREAKING_CHARACTERS)
    if not breaking:
        return None
    verdict = (
        f"release {facts.release} does not load it: its stub launcher puts the name unquoted "
        f"into a bash -c line ({LAUNCH_LINE_SOURCE}), where these characters end the command "
        f"or expand (measured on 24.10: the stub never starts, or the model file is not "
        f"found), and 25.08 and later refuse it"
    )
    return ERROR, breaking, verdict, LAUNCH_LINE_SOURCE


def _names(entry: ModelEntry, facts: Optional[ReleaseFacts]) -> Iterator[Finding]:
    """TP802 (the model's name) and TP803 (instance_group names)."""
    more = "" if facts is not None else "; pass --triton-version to check your release"
    rule = _name_rule(facts, entry.name)
    if rule is not None:
        severity, bad, verdict, cite = rule
        yield entry.finding(
            "TP802",
            severity,
            "name",
            f"the model name {entry.name!r} holds {bad!r}; {verdict} {_launcher(cite)}",
            f"rename the model directory and config.pbtxt's name without {bad!r}, e.g. "
            f"{_clean(entry.name)!r} (and every client and ensemble naming it){more}",
        )
    groups = entry.config.instance_group if entry.config is not None else ()
    for index, group in enumerate(groups):
        rule = _name_rule(facts, group.name)
        if rule is not None:
            severity, bad, verdict, cite = rule
            yield entry.finding(
                "TP803",
                severity,
                f"instance_group[{index}].name",
                f"the instance group name {group.name!r} of model {entry.name!r} holds "
                f"{bad!r}; {verdict} {_launcher(cite)}",
                f"rename the group without those characters, e.g. name: "
                f'"{_clean(group.name)}"{_default_name(entry.name, index)}{more}',
            )


def _launcher(cite: str) -> str:
    if cite == LAUNCH_LINE_SOURCE:
        return "(the launcher runs every instance '<group>_<n>' this way)"
    return (
        f"({cite}: the Python backend's stub launcher checks the model's name and every "
        f"instance name '<group>_<n>' and fails the load with 'Invalid stub name: contains "
        f"invalid characters')"
    )


def _default_name(model: str, index: int) -> str:
    """``, or remove name (...)`` when the default group name is itself accepted."""
    if refused_characters(model):
        return ""  # the default '<model>_<index>' holds the model's characters (TP802)
    return f", or remove name (the default is '{model}_{index}')"


def _clean(name: str) -> str:
    return "".join("_" if c in REFUSED_NAME_CHARACTERS else c for c in name)


# --- environments -----------------------------------------------------------------------------


def _environment(entry: ModelEntry, facts: Optional[ReleaseFacts]) -> Iterator[Finding]:
    """TP804 and TP805 for the model's EXECUTION_ENV_PATH environment."""
    if entry.config is None or ENV_PARAMETER not in entry.config.parameters:
        return
    raw = entry.config.parameters[ENV_PARAMETER].string_value
    place = resolve_env_path(raw, entry.path)
    if not place.path.exists():
        return  # TP501
    try:
        if facts is None or not facts.sources_env_activate:
            found = _activation(entry, raw, place.path, facts)
            if found is not None:
                yield found
        if place.path.is_file() and (facts is None or facts.refuses_unsafe_archives):
            yield from _through_links(entry, place.path, facts)
    except (tarfile.TarError, OSError, EOFError, zlib.error):
        return  # TP604 reports an unreadable archive


def _activation(
    entry: ModelEntry, raw: str, path: Path, facts: Optional[ReleaseFacts]
) -> Optional[Finding]:
    found = read_activation(path)
    if found is None or not (found.hooks or found.missing()):
        return None
    if facts is None:
        first, cite = since("sources_env_activate", False)
        who, severity = f"from release {first} on, Triton", INFO
    else:
        who, severity = f"release {facts.release}", _activation_severity(found)
        cite = facts.cites("sources_env_activate")
    parts: List[str] = []
    if found.hooks:
        parts.append(f"conda activation hooks {_listed(found.hooks)} that will not run")
    missing = found.missing()
    if missing:
        parts.append(f"activation settings that stay unset: {', '.join(found.assignments())}")
    message = (
        f"the environment {raw!r} has {' and '.join(parts)}: {who} starts the stub without "
        f"sourcing bin/activate ({cite}: the server's environment plus PATH, LD_LIBRARY_PATH, "
        f"VIRTUAL_ENV and VIRTUAL_ENV_PROMPT only)"
    )
    name = missing[0] if missing else "NAME"
    fix = (
        f"set what the model needs itself: in model.py, before the import that needs it, "
        f"os.environ.setdefault({name!r}, ...) (VIRTUAL_ENV holds the environment's path), "
        f"or export it in the server's environment (docker run -e {name}=...), which the "
        f"stub inherits"
    )
    if facts is None:
        fix += "; pass --triton-version to check your release"
    return entry.finding("TP804", severity, _FIELD, message, fix)


#: what conda-pack's own bin/activate exports (besides PATH): every conda-packed environment
#: has it, and few models read it, so alone it is an info line (it never fails --strict)
_CONDA_PACK_ONLY = ("CONDA_PREFIX",)


def _activation_severity(found: Activation) -> Severity:
    """A warning when hooks would have run or a variable beyond conda-pack's own is lost."""
    if found.hooks or found.missing() != _CONDA_PACK_ONLY:
        return WARNING
    return INFO


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_EXAMPLES])
    return shown + (f" and {len(names) - _EXAMPLES} more" if len(names) > _EXAMPLES else "")


def links_written_through(members: Sequence[tarfile.TarInfo]) -> List[Tuple[str, str]]:
    """``(member, link)`` for every member whose path (or, for a hard link, whose target)
    passes through a symbolic link an earlier member created, in archive order: what
    libarchive's ``ARCHIVE_EXTRACT_SECURE_SYMLINKS`` refuses. A later member of the link's own
    name replaces the link (libarchive removes a link in the last place of a path)."""
    links: Dict[str, str] = {}
    hits: List[Tuple[str, str]] = []
    for member in members:
        name = posixpath.normpath(member_name(member.name))
        paths = [name] + ([posixpath.normpath(member.linkname)] if member.islnk() else [])
        for path in paths:
            through = _through(path, links, last=path != name)
            if through is not None:
                hits.append((member.name, f"{through} -> {links[through]}"))
                break
        if member.issym():
            links[name] = member.linkname
        else:
            links.pop(name, None)
    return hits


def _through(path: str, links: Dict[str, str], *, last: bool) -> Optional[str]:
    """The first link among ``path``'s parents (and ``path`` itself when ``last``)."""
    parts = path.split("/")
    for end in range(1, len(parts) + (1 if last else 0)):
        prefix = "/".join(parts[:end])
        if prefix in links:
            return prefix
    return None


def _through_links(
    entry: ModelEntry, archive: Path, facts: Optional[ReleaseFacts]
) -> Iterator[Finding]:
    if not archive.name.endswith(".tar.gz"):
        return
    hits = links_written_through(archive_members(archive))
    if not hits:
        return
    if facts is None:
        first, cite = since("refuses_unsafe_archives", True)
        verdict, severity = f"Triton refuses the archive from release {first} on", INFO
    else:
        verdict, severity = f"release {facts.release} refuses the archive", ERROR
        cite = facts.cites("refuses_unsafe_archives")
    shown = _listed([f"{name} (through {link})" for name, link in hits])
    count = len(hits)
    yield Finding(
        "TP805",
        severity,
        entry.display(archive),
        "",
        f"{count} member{'s' * (count != 1)} written through a symbolic link of the "
        f"archive: {shown}; {verdict} ({cite}: it extracts with "
        f"ARCHIVE_EXTRACT_SECURE_SYMLINKS, libarchive's 'Cannot extract through symlink') and "
        f"the model fails to load",
        "pack the files under the link's real folder and keep the link after them (or drop "
        "it): conda-pack and 'tritonpy pack-env' store a linked folder as the link alone"
        + ("; pass --triton-version to check your release" if facts is None else ""),
    )


# --- the TP60x archive findings ------------------------------------------------------------


def archive_note(kind: str, facts: Optional[ReleaseFacts]) -> str:
    """What the target release does with the members a TP601/TP602/TP603 finding names,
    for the end of its message (``""`` without a release, or for other kinds)."""
    if facts is None or kind not in ("absolute", "parent", "link"):
        return ""
    release = facts.release
    if facts.refuses_unsafe_archives:
        cite = facts.cites("refuses_unsafe_archives")
        if kind == "link":
            return (
                f"; release {release} extracts a symbolic link itself but refuses hard links "
                f"climbing out and any member written through a link (TP805) ({cite})"
            )
        what = (
            "a member path starting with '/' ('Path is absolute')"
            if kind == "absolute"
            else "'..' in a path ('Path contains '..'')"
        )
        return f"; release {release} refuses {what} and the model fails to load ({cite})"
    first, cite = since("refuses_unsafe_archives", True)
    if kind == "link":
        return f"; release {release} extracts them as they are (refused from {first} on: {cite})"
    return (
        f"; release {release} extracts them where they point, outside the environment "
        f"(refused from {first} on: {cite})"
    )
