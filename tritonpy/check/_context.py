"""What the rules look at: the repository's model directories, their parsed configurations
and (for Python-backend models) their imported ``TritonPythonModel`` classes."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, Iterator, List, Literal, Optional, Tuple

from .._tooling.errors import ArchiveError
from .._tooling.model_dirs import CONFIG_FILE, ENV_PARAMETER, model_directories
from .._tooling.pbtxt import ConfigError, parse_config
from .._tooling.releases import TritonRelease
from ..config import (
    LoadedModel,
    ModelImportError,
    autocomplete_config,
    find_model_file,
    load_model_class,
    version_dirs,
)
from ..envs import EnvImport, EnvStartError, import_in_environment
from ._envimport import ModelEnvironment, stand_in
from ._report import ERROR, Finding, Severity

#: the tensor lists of a ModelConfig (and of a model's declarations)
Section = Literal["input", "output"]
SECTIONS: Tuple[Section, ...] = ("input", "output")


@dataclass
class ModelEntry:
    """One model directory of the repository."""

    repository: Path
    path: Path
    config: Any = None  # the parsed ModelConfig, None when missing or invalid
    config_error: Optional[str] = None
    #: the model's own environment, where model.py is imported (None: the tool's Python)
    environment: Optional[ModelEnvironment] = None
    #: why the model's environment could not be used (then the tool's Python imported it)
    environment_note: Optional[str] = None
    #: why the environment its spec declares could not be built
    environment_error: Optional[str] = None
    #: whether the target release starts the stub through ``source <env>/bin/activate``
    #: (up to 25.07; from 25.08 only PATH and LD_LIBRARY_PATH): model.py is imported so
    sources_activate: bool = True

    @property
    def name(self) -> str:
        """The model's name: its directory's."""
        return self.path.name

    @property
    def config_file(self) -> str:
        """``<model>/config.pbtxt``, relative to the repository."""
        return f"{self.name}/{CONFIG_FILE}"

    @property
    def is_ensemble(self) -> bool:
        """True when config.pbtxt makes it an ensemble (platform or ensemble_scheduling)."""
        config = self.config
        return config is not None and (
            config.platform == "ensemble" or config.HasField("ensemble_scheduling")
        )

    @property
    def is_python(self) -> bool:
        return self.config is not None and self.config.backend == "python"

    @property
    def model_filename(self) -> str:
        return (self.config.default_model_filename if self.config else "") or "model.py"

    def versions(self) -> List[Path]:
        return version_dirs(self.path)

    @cached_property
    def _load(self) -> Tuple[Optional[LoadedModel], Optional[ModelImportError]]:
        if self.config is None or self.is_ensemble or self.env_import is not None:
            return None, None
        try:
            return load_model_class(self.path, filename=self.model_filename), None
        except ModelImportError as exc:
            return None, exc
        except ConfigError:  # no model file: the layout rules report it
            return None, None

    @cached_property
    def env_import(self) -> Optional[EnvImport]:
        """What importing model.py inside the model's own environment gave (None when it has
        none, or its Python did not start: see :attr:`environment_note`)."""
        if self.environment is None or self.config is None or self.is_ensemble:
            return None
        try:
            model_file = find_model_file(self.path, filename=self.model_filename)
        except ConfigError:
            return None
        try:
            return import_in_environment(
                self.environment.path, model_file, sources_activate=self.sources_activate
            )
        except (EnvStartError, ArchiveError) as exc:
            self.environment_note = str(exc)
            return None

    @property
    def loaded(self) -> Optional[LoadedModel]:
        """The model.py of the highest version as imported in the tool's Python (None when
        there is none, it was imported in its environment, or the import failed: see
        :attr:`load_error`)."""
        return self._load[0]

    @property
    def load_error(self) -> Optional[ModelImportError]:
        """The failure of importing model.py in the tool's Python."""
        return self._load[1]

    @property
    def model_file(self) -> str:
        """``<version>/<model file>`` of the version that was imported."""
        loaded = self.loaded
        if loaded is None:
            for version in self.versions():
                if (version / self.model_filename).is_file():
                    return f"{version.name}/{self.model_filename}"
            return self.model_filename
        return f"{loaded.model_file.parent.name}/{loaded.model_file.name}"

    @cached_property
    def model_class(self) -> Optional[Any]:
        """The ``tritonpy.Model`` subclass of model.py (a stand-in carrying its declarations
        when imported in its own environment), or None for other models."""
        found = self.env_import
        if found is not None:
            return stand_in(found) if found.ok and found.is_tritonpy else None
        loaded = self.loaded
        if loaded is not None and loaded.is_tritonpy:
            return loaded.cls
        return None

    @cached_property
    def effective_config(self) -> Any:
        """The configuration the server works with after auto-complete (tritonpy models get
        their declared inputs, outputs and max_batch_size filled in); None when unreadable."""
        if self.config is None:
            return None
        cls = self.model_class
        if cls is None:
            return self.config
        return autocomplete_config(self.config, cls)

    def display(self, path: Path) -> str:
        """``path`` relative to the repository when inside it, else as it is."""
        try:
            return str(path.relative_to(self.repository.absolute()))
        except ValueError:
            return str(path)

    def finding(
        self, code: str, severity: Severity, field: str, message: str, fix: str, file: str = ""
    ) -> Finding:
        """A finding about this model (``file`` defaults to its config.pbtxt)."""
        return Finding(code, severity, file or self.config_file, field, message, fix)


@dataclass(frozen=True)
class EnvImports:
    """How the check finds each model's environment: ``enabled`` (False: every model.py is
    imported in the tool's Python, as before), ``build`` (build a spec's environment that is
    not in the cache yet) and the ``builder`` for that."""

    enabled: bool = True
    build: bool = False
    builder: str = "auto"


def _find_environment(entry: ModelEntry, repo: Repository, envs: EnvImports) -> None:
    """Set ``entry.environment`` (or ``environment_error``) for a python-backend model."""
    from .._runtime.errors import ToolError
    from ._envimport import configured_environment, spec_environment

    if not envs.enabled or not entry.is_python:
        return
    entry.environment = configured_environment(entry.path, entry.config)
    if entry.environment is not None or ENV_PARAMETER in entry.config.parameters:
        return
    try:
        entry.environment = spec_environment(
            entry.path, repo.release, build=envs.build, builder=envs.builder
        )
    except ToolError as exc:
        entry.environment_error = str(exc)


@dataclass
class Repository:
    """A model repository and the target server the check assumes."""

    root: Path
    release: Optional[TritonRelease] = None
    server_python: Optional[str] = None
    models: Dict[str, ModelEntry] = field(default_factory=dict)

    @classmethod
    def scan(
        cls,
        root: Path,
        *,
        release: Optional[TritonRelease] = None,
        server_python: Optional[str] = None,
        envs: EnvImports = EnvImports(),
    ) -> Repository:
        """Read every model directory (a non-hidden subdirectory), parse its config and find
        the environment its model.py is imported in (see :class:`EnvImports`)."""
        repo = cls(root, release, server_python or (release.python if release else None))
        for path in model_directories(root):
            entry = ModelEntry(root, path)
            if release is not None:
                entry.sources_activate = release.facts.sources_env_activate
            config_path = path / CONFIG_FILE
            if config_path.is_file():
                try:
                    text = config_path.read_text(encoding="utf-8")
                    entry.config = parse_config(text, entry.config_file)
                except (OSError, UnicodeDecodeError) as exc:
                    entry.config_error = f"{entry.config_file}: cannot be read: {exc}"
                except ConfigError as exc:
                    entry.config_error = str(exc)
            _find_environment(entry, repo, envs)
            repo.models[path.name] = entry
        return repo

    def __iter__(self) -> Iterator[ModelEntry]:
        return iter(self.models.values())


def error(entry: ModelEntry, code: str, field: str, message: str, fix: str) -> Finding:
    """Shorthand for an error finding on ``entry``'s config.pbtxt."""
    return entry.finding(code, ERROR, field, message, fix)
