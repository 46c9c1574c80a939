"""What the rules look at: the repository's model directories, their parsed configurations
and (for Python-backend models) their imported ``TritonPythonModel`` classes."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, Iterator, List, Literal, Optional, Tuple

from .._runtime.model import Model
from .._tooling.model_dirs import CONFIG_FILE, model_directories
from .._tooling.pbtxt import ConfigError, parse_config
from .._tooling.releases import TritonRelease
from ..config._declarations import autocomplete_config
from ..config._loader import LoadedModel, ModelImportError, load_model_class, version_dirs
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
        if self.config is None or self.is_ensemble:
            return None, None
        try:
            return load_model_class(self.path, filename=self.model_filename), None
        except ModelImportError as exc:
            return None, exc
        except ConfigError:  # no model file: the layout rules report it
            return None, None

    @property
    def loaded(self) -> Optional[LoadedModel]:
        """The imported model.py of the highest version (None when there is none or the
        import failed: see :attr:`load_error`)."""
        return self._load[0]

    @property
    def load_error(self) -> Optional[ModelImportError]:
        return self._load[1]

    @property
    def model_class(self) -> Optional[Any]:
        """The ``tritonpy.Model`` subclass of model.py, or None for other models."""
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
        if cls is None or not issubclass(cls, Model):
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
    ) -> Repository:
        """Read every model directory (a non-hidden subdirectory) and parse its config."""
        repo = cls(root, release, server_python or (release.python if release else None))
        for path in model_directories(root):
            entry = ModelEntry(root, path)
            config_path = path / CONFIG_FILE
            if config_path.is_file():
                try:
                    text = config_path.read_text(encoding="utf-8")
                    entry.config = parse_config(text, entry.config_file)
                except (OSError, UnicodeDecodeError) as exc:
                    entry.config_error = f"{entry.config_file}: cannot be read: {exc}"
                except ConfigError as exc:
                    entry.config_error = str(exc)
            repo.models[path.name] = entry
        return repo

    def __iter__(self) -> Iterator[ModelEntry]:
        return iter(self.models.values())


def error(entry: ModelEntry, code: str, field: str, message: str, fix: str) -> Finding:
    """Shorthand for an error finding on ``entry``'s config.pbtxt."""
    return entry.finding(code, ERROR, field, message, fix)
