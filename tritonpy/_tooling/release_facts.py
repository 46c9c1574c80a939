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
from dataclasses import dataclass, field
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

#: characters Triton refuses in model and instance names from 25.08
SHELL_CHARACTERS = frozenset(";|&$`<>()[]{}\"'*?~#!")


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
    #: the numpy requirement the release's container installs (``numpy<2``)
    numpy_pin: str
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
CHANGES: Tuple[Change, ...] = (
    # --- the container --------------------------------------------------------------------
    Change("23.01", "ubuntu", "22.04", "server@r23.01:build.py"),
    Change("23.01", "python", "3.10", "server@r23.01:build.py"),
    Change("24.11", "ubuntu", "24.04", "server@r24.11:build.py"),
    Change("24.11", "python", "3.12", "server@r24.11:qa/L0_backend_python/test.sh"),
    Change("23.01", "numpy_pin", "numpy<2", "server@r23.01:build.py"),
    # --- the stub build -------------------------------------------------------------------
    Change("23.01", "pybind11", "2.10", "python_backend@r23.01:CMakeLists.txt"),
    Change("24.11", "pybind11", "2.12", "python_backend@r24.11:CMakeLists.txt"),
    Change("23.01", "numpy2_bytes_ok", False, "python_backend@r23.01:CMakeLists.txt"),
    Change("24.11", "numpy2_bytes_ok", True, "python_backend@r24.11:CMakeLists.txt"),
    Change("23.01", "min_cmake", (3, 17), "python_backend@r23.01:CMakeLists.txt"),
    Change("25.08", "min_cmake", (3, 31, 8), "python_backend@r25.08:CMakeLists.txt"),
    Change("23.01", "boost", "1.79", "python_backend@r23.01:CMakeLists.txt"),
    Change("25.11", "boost", "1.80", "python_backend@r25.11:CMakeLists.txt"),
    # --- environments and names -----------------------------------------------------------
    Change("23.01", "sources_env_activate", True, "python_backend@r23.01:src/pb_env.cc"),
    Change("25.08", "sources_env_activate", False, "python_backend@r25.08:src/pb_env.cc"),
    Change("23.01", "refuses_unsafe_archives", False, "python_backend@r23.01:src/pb_env.cc"),
    Change("26.06", "refuses_unsafe_archives", True, "python_backend@r26.06:src/pb_env.cc"),
    Change("23.01", "refuses_shell_names", False, "python_backend@r23.01:src/python_be.cc"),
    Change("25.08", "refuses_shell_names", True, "python_backend@r25.08:src/python_be.cc"),
    # --- health ---------------------------------------------------------------------------
    Change("23.01", "model_ready_tracks_stub", False, "python_backend@r23.01:src/python_be.cc"),
    Change("25.12", "model_ready_tracks_stub", True, "python_backend@r25.12:src/python_be.cc"),
    Change("23.01", "server_ready_tracks_stub", False, "core@r23.01:src/server.cc"),
    Change("26.04", "server_ready_tracks_stub", True, "core@r26.04:src/server.cc"),
    # --- the pb_utils API -----------------------------------------------------------------
    Change("23.01", "api", frozenset(), "python_backend@r23.01:src/pb_stub.cc"),
    Change(
        "25.02",
        "api",
        frozenset({API_RESPONSE_PARAMETERS}),
        "python_backend@r25.02:src/pb_stub.cc",
    ),
    Change(
        "25.04",
        "api",
        frozenset({API_RESPONSE_PARAMETERS, API_ITERATOR_CANCEL}),
        "python_backend@r25.04:src/pb_stub.cc",
    ),
    Change(
        "26.03",
        "api",
        frozenset({API_RESPONSE_PARAMETERS, API_ITERATOR_CANCEL, API_IS_READY}),
        "python_backend@r26.03:src/pb_stub.cc",
    ),
)

#: tritonserver version of each release (the server repository's TRITON_VERSION file)
SERVER_VERSIONS: Mapping[str, str] = {}


def _server_version(release: str) -> str:
    known = SERVER_VERSIONS.get(release)
    if known is not None:
        return known
    year, month = _key(release)
    return f"2.{18 + (year - 22) * 12 + (month - 1)}.0"


def known_releases() -> List[str]:
    """Every ``YY.MM`` from :data:`OLDEST_KNOWN` to :data:`NEWEST_KNOWN`."""
    names: List[str] = []
    year, month = _key(OLDEST_KNOWN)
    while (year, month) <= _key(NEWEST_KNOWN):
        names.append(f"{year:02d}.{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return names


def facts_for(release: str) -> ReleaseFacts:
    """The facts of release ``YY.MM``; outside the table, the nearest known release's facts
    with ``assumed_from`` set (never an error)."""
    assumed: Optional[str] = None
    lookup = release
    if _key(release) > _key(NEWEST_KNOWN):
        assumed = lookup = NEWEST_KNOWN
    elif _key(release) < _key(OLDEST_KNOWN):
        assumed = lookup = OLDEST_KNOWN
    values: Dict[str, FactValue] = {}
    sources: Dict[str, str] = {}
    for change in CHANGES:
        if _key(change.release) <= _key(lookup):
            values[change.name] = change.value
            sources[change.name] = change.source
    sources["server_version"] = f"server@r{lookup}:TRITON_VERSION"
    facts = ReleaseFacts(
        release=release,
        server_version=_server_version(release),
        sources=sources,
        assumed_from=assumed,
        **values,  # type: ignore[arg-type]
    )
    return facts


def fact_names() -> List[str]:
    """The names of the facts the table must give for every release."""
    skip = {"release", "server_version", "sources", "assumed_from"}
    return [f.name for f in dataclasses.fields(ReleaseFacts) if f.name not in skip]
