"""The table of Triton release facts, each one read from the release's own sources.

Every fact starts at one release and holds until a later change: the table is a list of
:class:`Change` rows (release, field, value, citation), and :func:`facts_for` folds the rows up
to a release into one :class:`ReleaseFacts`. A citation names the repository, the branch and
the file the fact was read from (``server@r24.11:qa/L0_backend_python/test.sh``), so that a
reader can check it and a test can keep the table in step with the rules that use it.

>>> facts = facts_for("24.11")
>>> facts.python, facts.numpy_pin
('3.12', 'numpy<2')
>>> facts.cites("python")
'server@r24.11:qa/L0_backend_python/test.sh'
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from dataclasses import dataclass, field
from types import FrameType
from typing import Dict, FrozenSet, List, Mapping, Optional, Tuple, Union

#: what a fact's value may be
FactValue = Union[str, bool, Tuple[int, ...], FrozenSet[str]]

#: the oldest and newest releases whose sources the table was read from
OLDEST_KNOWN = "23.01"
NEWEST_KNOWN = "26.07"

#: pb_utils API names (as :attr:`ReleaseFacts.api` holds them) that some releases lack
API_RESPONSE_PARAMETERS = "InferenceResponse.parameters"
API_ITERATOR_CANCEL = "ResponseIterator.cancel"
API_IS_READY = "TritonPythonModel.is_ready"

#: characters Triton refuses in model and instance names from 25.08: python_backend's
#: ``INVALID_CHARS`` (src/pb_utils.h, r25.08 on), the backslash included
SHELL_CHARACTERS = frozenset(";|&$`<>()[]{}\\\"'*?~#!")

#: characters that break a model before 25.08, where the stub launcher puts the model path
#: and instance name unquoted into a ``bash -c`` line (:data:`LAUNCH_LINE_SOURCE`). Measured
#: on 24.10: with ``( ; "`` the stub never starts and the model never becomes ready, with
#: ``$ \`` the model file is not found; the others by bash's own rules. ``# ! ~ * ? [ ] { }``
#: inside a name survive the line (``#`` measured: the model loads).
LAUNCH_BREAKING_CHARACTERS = frozenset(";|&$`<>()\"'\\")
LAUNCH_LINE_SOURCE = "python_backend@r24.10:src/stub_launcher.cc"


@dataclass(frozen=True)
class Change:
    """One row of the table: from ``release`` on, ``name`` is ``value`` (as ``source`` says)."""

    release: str
    name: str
    value: FactValue
    source: str


@dataclass(frozen=True)
class ReleaseFacts:
    """What one Triton release is, as far as a Python model, its environment and its stub care.

    ``assumed_from`` is set when the release is outside the table: the facts are those of the
    nearest known release (``NEWEST_KNOWN`` for a newer one) and a caller should say so.
    """

    release: str
    server_version: str
    ubuntu: str
    python: str
    #: the numpy requirement the container's own Python holds (``numpy<2`` on every release:
    #: pinned so from 24.06, and numpy 1.x in the older images, built before numpy 2.0)
    numpy_pin: str
    #: whether build.py itself pins it (``"numpy<2"``, from 24.06; before, an unpinned
    #: ``pip3 install --upgrade numpy``, so a rebuilt old image would get numpy 2)
    container_pins_numpy: bool
    #: the pybind11 the stub is built with (``2.10``, ``2.12``)
    pybind11: str
    #: whether the stub handles BYTES tensors with numpy 2 in the environment (pybind11 >= 2.12)
    numpy2_bytes_ok: bool
    #: the CMake version a native stub build needs
    min_cmake: Tuple[int, ...]
    #: the Boost version the stub build fetches (``""`` when it uses the system's)
    boost: str
    #: whether the stub is started through ``source <env>/bin/activate`` (else PATH and
    #: LD_LIBRARY_PATH only, so conda ``activate.d`` hooks do not run)
    sources_env_activate: bool
    #: whether environment archives holding ``..``, absolute paths or writes through links
    #: are refused
    refuses_unsafe_archives: bool
    #: whether model and instance names holding :data:`SHELL_CHARACTERS` are refused
    refuses_shell_names: bool
    #: whether a dead stub turns the model's readiness (``/v2/models/<m>/ready``) to 503
    model_ready_tracks_stub: bool
    #: whether a dead stub turns the server's readiness (``/v2/health/ready``) to 503
    server_ready_tracks_stub: bool
    #: pb_utils API additions the release offers (``API_*`` names)
    api: FrozenSet[str]
    #: field name -> the citation of the row that set it
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)
    assumed_from: Optional[str] = None

    def cites(self, name: str) -> str:
        """The citation (``repo@branch:path``) of fact ``name``."""
        return self.sources[name]

    def has_api(self, name: str) -> bool:
        return name in self.api


def _key(release: str) -> Tuple[int, int]:
    year, month = release.split(".")
    return int(year), int(month)


#: the table; rows for one field are in release order. Every field has a row at OLDEST_KNOWN.
#: Each citation names the file on the release's own branch that shows the new value.
CHANGES: Tuple[Change, ...] = (
    # --- the container --------------------------------------------------------------------
    # build.py's CPU base image (``base_image = 'ubuntu:20.04'``) and its CUDA keyring URL
    Change("23.01", "ubuntu", "20.04", "server@r23.01:build.py"),
    Change("23.05", "ubuntu", "22.04", "server@r23.05:build.py"),
    Change("24.11", "ubuntu", "24.04", "server@r24.11:build.py"),
    # env/test.sh runs a conda env of this Python "without custom Python backend stub";
    # from 23.08 test.sh asserts ``python3 --version`` itself (3.10 up to 24.10, 3.12 after)
    Change("23.01", "python", "3.8", "server@r23.01:qa/L0_backend_python/env/test.sh"),
    Change("23.05", "python", "3.10", "server@r23.05:qa/L0_backend_python/env/test.sh"),
    Change("24.11", "python", "3.12", "server@r24.11:qa/L0_backend_python/test.sh"),
    # build.py's python-backend layer: ``pip3 install --upgrade ... numpy`` (no pin) until
    # 24.05, ``"numpy<2"`` from 24.06 on (still so on 26.07). The unpinned images were built
    # before numpy 2.0 (June 2024), so every release's container holds numpy 1.x: numpy<2
    Change("23.01", "numpy_pin", "numpy<2", "server@r23.01:build.py"),
    Change("23.01", "container_pins_numpy", False, "server@r23.01:build.py"),
    Change("24.06", "container_pins_numpy", True, "server@r24.06:build.py"),
    # --- the stub build (python_backend CMakeLists.txt) -----------------------------------
    # FetchContent pybind11: GIT_TAG "v2.10" to 23.06, v2.10.0's commit from 23.07, v2.12.0's
    # commit (3e9dfa28) from 24.11
    Change("23.01", "pybind11", "2.10", "python_backend@r23.01:CMakeLists.txt"),
    Change("24.11", "pybind11", "2.12", "python_backend@r24.11:CMakeLists.txt"),
    Change("23.01", "numpy2_bytes_ok", False, "python_backend@r23.01:CMakeLists.txt"),
    Change("24.11", "numpy2_bytes_ok", True, "python_backend@r24.11:CMakeLists.txt"),
    Change("23.01", "min_cmake", (3, 17), "python_backend@r23.01:CMakeLists.txt"),
    Change("25.08", "min_cmake", (3, 31, 8), "python_backend@r25.08:CMakeLists.txt"),
    # the boostorg ExternalProject URL (boost_1_76_0.tar.gz, then 1_79_0, then 1_80_0)
    Change("23.01", "boost", "1.76", "python_backend@r23.01:CMakeLists.txt"),
    Change("23.02", "boost", "1.79", "python_backend@r23.02:CMakeLists.txt"),
    Change("25.11", "boost", "1.80", "python_backend@r25.11:CMakeLists.txt"),
    # --- environments and names -----------------------------------------------------------
    # up to 25.07 Launch() runs ``source <env>/bin/activate && exec env LD_LIBRARY_PATH=...``;
    # from 25.08 it calls ParseActivationScript (src/pb_utils.cc), which only sets
    # VIRTUAL_ENV, PATH=<env>/bin:..., LD_LIBRARY_PATH=<env>/lib:... and drops PYTHONHOME
    Change("23.01", "sources_env_activate", True, "python_backend@r23.01:src/stub_launcher.cc"),
    Change("25.08", "sources_env_activate", False, "python_backend@r25.08:src/stub_launcher.cc"),
    # ExtractTarFile: ARCHIVE_EXTRACT_SECURE_NODOTDOT | _NOABSOLUTEPATHS | _SYMLINKS from 26.06
    Change("23.01", "refuses_unsafe_archives", False, "python_backend@r23.01:src/pb_env.cc"),
    Change("26.06", "refuses_unsafe_archives", True, "python_backend@r26.06:src/pb_env.cc"),
    # Launch() refuses a stub name (the instance name; the model name for the auto-complete
    # stub) holding INVALID_CHARS (src/pb_utils.h) with "Invalid stub name: contains invalid
    # characters"; core has no such check
    Change("23.01", "refuses_shell_names", False, "python_backend@r23.01:src/stub_launcher.cc"),
    Change("25.08", "refuses_shell_names", True, "python_backend@r25.08:src/stub_launcher.cc"),
    # --- health ---------------------------------------------------------------------------
    # TRITONBACKEND_ModelInstanceReady (new in core 25.12) answers "Stub process ... is not
    # healthy" when the stub is gone; core's ModelIsReady asks every instance
    Change("23.01", "model_ready_tracks_stub", False, "python_backend@r23.01:src/python_be.cc"),
    Change("25.12", "model_ready_tracks_stub", True, "python_backend@r25.12:src/python_be.cc"),
    # InferenceServer::IsReady asks ModelIsReady of each READY model (strict readiness only,
    # the default --strict-readiness=true)
    Change("23.01", "server_ready_tracks_stub", False, "core@r23.01:src/server.cc"),
    Change("26.04", "server_ready_tracks_stub", True, "core@r26.04:src/server.cc"),
    # --- the pb_utils API (the pybind11 module the stub defines) ---------------------------
    Change("23.01", "api", frozenset(), "python_backend@r23.01:src/pb_stub.cc"),
    # py::class_<InferResponse>: py::arg("parameters") and .def("parameters", ...)
    Change(
        "25.02",
        "api",
        frozenset({API_RESPONSE_PARAMETERS}),
        "python_backend@r25.02:src/pb_stub.cc",
    ),
    # py::class_<ResponseIterator>: .def("cancel", &ResponseIterator::Cancel)
    Change(
        "25.04",
        "api",
        frozenset({API_RESPONSE_PARAMETERS, API_ITERATOR_CANCEL}),
        "python_backend@r25.04:src/pb_stub.cc",
    ),
    # py::hasattr(model_instance_, "is_ready") cached at initialize
    Change(
        "26.03",
        "api",
        frozenset({API_RESPONSE_PARAMETERS, API_ITERATOR_CANCEL, API_IS_READY}),
        "python_backend@r26.03:src/pb_stub.cc",
    ),
)

#: tritonserver version of each release (the server repository's TRITON_VERSION file on the
#: release branch). One minor a month, except 25.07, a patch of 25.06's 2.59 (2.59.1)
SERVER_VERSIONS: Mapping[str, str] = {
    "23.01": "2.30.0",
    "23.02": "2.31.0",
    "23.03": "2.32.0",
    "23.04": "2.33.0",
    "23.05": "2.34.0",
    "23.06": "2.35.0",
    "23.07": "2.36.0",
    "23.08": "2.37.0",
    "23.09": "2.38.0",
    "23.10": "2.39.0",
    "23.11": "2.40.0",
    "23.12": "2.41.0",
    "24.01": "2.42.0",
    "24.02": "2.43.0",
    "24.03": "2.44.0",
    "24.04": "2.45.0",
    "24.05": "2.46.0",
    "24.06": "2.47.0",
    "24.07": "2.48.0",
    "24.08": "2.49.0",
    "24.09": "2.50.0",
    "24.10": "2.51.0",
    "24.11": "2.52.0",
    "24.12": "2.53.0",
    "25.01": "2.54.0",
    "25.02": "2.55.0",
    "25.03": "2.56.0",
    "25.04": "2.57.0",
    "25.05": "2.58.0",
    "25.06": "2.59.0",
    "25.07": "2.59.1",
    "25.08": "2.60.0",
    "25.09": "2.61.0",
    "25.10": "2.62.0",
    "25.11": "2.63.0",
    "25.12": "2.64.0",
    "26.01": "2.65.0",
    "26.02": "2.66.0",
    "26.03": "2.67.0",
    "26.04": "2.68.0",
    "26.05": "2.69.0",
    "26.06": "2.70.0",
    "26.07": "2.71.0",
}


def _server_version(release: str) -> str:
    """TRITON_VERSION of a known release; outside the table, one minor a month from the
    nearest end of it (22.11 -> 2.28.0, 26.08 -> 2.72.0)."""
    known = SERVER_VERSIONS.get(release)
    if known is not None:
        return known
    end = OLDEST_KNOWN if _key(release) < _key(OLDEST_KNOWN) else NEWEST_KNOWN
    minor = int(SERVER_VERSIONS[end].split(".")[1]) + _months(release) - _months(end)
    return f"2.{minor}.0"


def _months(release: str) -> int:
    year, month = _key(release)
    return year * 12 + month


def known_releases() -> List[str]:
    """Every ``YY.MM`` from :data:`OLDEST_KNOWN` to :data:`NEWEST_KNOWN`."""
    names: List[str] = []
    year, month = _key(OLDEST_KNOWN)
    while (year, month) <= _key(NEWEST_KNOWN):
        names.append(f"{year:02d}.{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return names


class ReleaseOutsideTableWarning(UserWarning):
    """A release newer than :data:`NEWEST_KNOWN`: its facts are assumed to be the newest
    known release's, which may be wrong (read the release's sources, then extend the table).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     facts_for("27.01").assumed_from
    '26.07'
    >>> caught[0].category.__name__
    'ReleaseOutsideTableWarning'
    """


def facts_for(release: str) -> ReleaseFacts:
    """The facts of release ``YY.MM``; outside the table, the nearest known release's facts
    with ``assumed_from`` set (never an error). A release newer than the table also warns
    with :class:`ReleaseOutsideTableWarning`.

    >>> facts_for("25.08").refuses_shell_names, facts_for("25.07").refuses_shell_names
    (True, False)
    """
    assumed: Optional[str] = None
    lookup = release
    if _key(release) > _key(NEWEST_KNOWN):
        assumed = lookup = NEWEST_KNOWN
        warnings.warn(
            f"Triton {release} is newer than tritonpy's release table, which ends at "
            f"{NEWEST_KNOWN}: assuming {NEWEST_KNOWN}'s facts for it (Python "
            f"{_value(lookup, 'python')}, {_value(lookup, 'numpy_pin')}, its pb_utils API, "
            f"name, archive and health rules) and server version {_server_version(release)}; "
            f"check them against the r{release} branches and extend the table if they differ",
            ReleaseOutsideTableWarning,
            stacklevel=_outside_stacklevel(),
        )
    elif _key(release) < _key(OLDEST_KNOWN):
        assumed = lookup = OLDEST_KNOWN
    values: Dict[str, FactValue] = {}
    sources: Dict[str, str] = {}
    for change in CHANGES:
        if _key(change.release) <= _key(lookup):
            values[change.name] = change.value
            sources[change.name] = change.source
    sources["server_version"] = f"server@r{lookup}:TRITON_VERSION"
    return ReleaseFacts(
        release=release,
        server_version=_server_version(release),
        sources=sources,
        assumed_from=assumed,
        **values,  # type: ignore[arg-type]
    )


def _outside_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside tritonpy, so that the warning names the
    user's line (``ModelHarness(release=...)``), not the tritonpy module that asked."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame: Optional[FrameType] = sys._getframe(2)  # facts_for's caller
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _value(release: str, name: str) -> FactValue:
    """The value of fact ``name`` at a known ``release`` (the last row at or before it)."""
    rows = [c for c in CHANGES if c.name == name and _key(c.release) <= _key(release)]
    return rows[-1].value


def fact_names() -> List[str]:
    """The names of the facts the table must give for every release."""
    skip = {"release", "server_version", "sources", "assumed_from"}
    return [f.name for f in dataclasses.fields(ReleaseFacts) if f.name not in skip]


#: the columns of :func:`release_table_markdown` after "Releases" and "Server"
_COLUMNS = (
    "Ubuntu / Python",
    "numpy in the container",
    "pybind11 (stub)",
    "CMake / Boost (stub build)",
    "Environment activation",
    "Archive rules",
    "Name rules",
    "Dead stub",
    "pb_utils additions",
)

_API_SHORT = {
    API_RESPONSE_PARAMETERS: "response `parameters`",
    API_ITERATOR_CANCEL: "BLS `cancel()`",
    API_IS_READY: "`is_ready()` hook",
}


def _cells(facts: ReleaseFacts) -> Tuple[str, ...]:
    """The table cells of one release's facts, in :data:`_COLUMNS` order."""
    health = "nothing turns 503"
    if facts.model_ready_tracks_stub:
        health = "model ready 503"
    if facts.server_ready_tracks_stub:
        health += ", server ready 503"
    return (
        f"{facts.ubuntu} / {facts.python}",
        f"`{facts.numpy_pin}`" if facts.container_pins_numpy else "1.x (`numpy` unpinned)",
        f"{facts.pybind11} (numpy 2 {'ok' if facts.numpy2_bytes_ok else 'breaks BYTES'})",
        f"{'.'.join(map(str, facts.min_cmake))} / {facts.boost}",
        "PATH, LD_LIBRARY_PATH only" if not facts.sources_env_activate else "`source bin/activate`",
        "refuses `..`, absolute, links" if facts.refuses_unsafe_archives else "extracted as is",
        "refuses shell characters" if facts.refuses_shell_names else "any",
        health,
        _api_cell(facts),
    )


def _api_cell(facts: ReleaseFacts) -> str:
    names = [text for name, text in _API_SHORT.items() if facts.has_api(name)]
    return ", ".join(names) if names else "none"


def _groups() -> List[List[str]]:
    """Runs of consecutive known releases whose facts (server version aside) are equal."""
    groups: List[List[str]] = []
    previous: Optional[Tuple[str, ...]] = None
    for release in known_releases():
        cells = _cells(facts_for(release))
        if cells == previous:
            groups[-1].append(release)
        else:
            groups.append([release])
        previous = cells
    return groups


def _source_value(change: Change) -> str:
    value = change.value
    if isinstance(value, tuple):
        return ".".join(map(str, value))
    if isinstance(value, frozenset):
        return ", ".join(sorted(value)) or "none of the additions"
    return str(value)


def release_table_markdown() -> str:
    """The table of every known release as Markdown (what ``docs/releases.md`` shows): one row
    per run of releases with the same facts, then each change with its citation.

    >>> release_table_markdown().splitlines()[0].startswith("| Releases | Server |")
    True
    """
    lines = [
        "| Releases | Server | " + " | ".join(_COLUMNS) + " |",
        "|" + "---|" * (len(_COLUMNS) + 2),
    ]
    for group in _groups():
        first, last = group[0], group[-1]
        names = first if first == last else f"{first} to {last}"
        versions = _server_version(first)
        if first != last:
            versions += f" to {_server_version(last)}"
        lines.append(f"| {names} | {versions} | " + " | ".join(_cells(facts_for(first))) + " |")
    lines += [
        "",
        "Each fact, from the release where it takes its value, and the file showing it:",
        "",
    ]
    for change in sorted(CHANGES, key=lambda c: (_key(c.release), fact_names().index(c.name))):
        lines.append(
            f"- {change.release}: `{change.name}` = {_source_value(change)} (`{change.source}`)"
        )
    lines.append(
        f"- every release: `server_version` from `server@rYY.MM:TRITON_VERSION` "
        f"({SERVER_VERSIONS[OLDEST_KNOWN]} for {OLDEST_KNOWN} ... "
        f"{SERVER_VERSIONS[NEWEST_KNOWN]} for {NEWEST_KNOWN}; 25.07 is 2.59.1)"
    )
    return "\n".join(lines) + "\n"
