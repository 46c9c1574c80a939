"""``config.pbtxt`` from a tritonpy model's declarations, merged with what the user wrote.

The declarations decide ``name`` (the directory's name; a file naming another model is refused,
as tritonserver refuses it, unless ``fix_name``), ``backend: "python"``,
``max_batch_size``, ``dynamic_batching`` (when batching), the ``input`` and ``output`` entries
(name, data_type, dims, optional), ``model_transaction_policy.decoupled`` (when the class
sets ``decoupled = True/False``) and, for a stateful model (``sequence = tp.Sequence(...)``),
``sequence_batching``'s strategy, idle timeout, candidate sequences, ordering and
``iterative_sequence`` (in place of a dynamic batcher; Triton's auto-complete cannot add it).
Every other field is the user's and is kept as written: ``instance_group``, ``parameters``,
``dynamic_batching`` settings, the sequence batcher's ``control_input`` and queue delays,
``reshape``, ``label_filename``...

Example::

    from tritonpy.config._declarations import sync_config

    diff = sync_config("model_repository/preprocess", check=True)
    if diff.changed:
        print(diff.diff)            # a unified diff of config.pbtxt
    sync_config("model_repository/preprocess")     # writes it (atomic, stable)
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from .._runtime._declarations import SCHEDULERS, completion
from .._runtime.codecs.base import shape_matches
from .._tooling.model_dirs import CONFIG_FILE, ENV_PARAMETER
from .._tooling.pbtxt import (
    ConfigError,
    PathLike,
    config_from_dict,
    format_config,
    load_config,
    new_config,
    write_config,
)
from ._loader import LoadedModel, ModelImportError, load_model_class

_SCHEDULING = "scheduling_choice"


class NotDerivableError(ConfigError):
    """The model's configuration cannot be derived: ``model.py`` is not a tritonpy model."""


class HandWrittenConfigError(NotDerivableError):
    """The model's configuration is written by hand, as it must be: ``kind`` says why (``"an
    ensemble"``, ``"a plain Python-backend model"``). ``config --check`` accepts it: there
    are no declarations to contradict it (``tritonpy check`` checks the file itself)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class ModelNameError(ConfigError):
    """``config.pbtxt`` names another model than its directory: tritonserver refuses to load
    it, so :func:`sync_config` does not rename it silently."""


def check_model_name(config: Any, directory: Path, path: Path, *, fix: bool) -> None:
    """Refuse a ``name`` that is set and differs from the directory's name, with the message
    tritonserver (r24.10, model_repository_manager.cc) refuses the model with; with ``fix``
    the caller renames it instead."""
    name = config.name
    if not name or name == directory.name or fix:
        return
    raise ModelNameError(
        f"{path}: name is {name!r} but the model directory is {directory.name!r}, and "
        f"tritonserver refuses to load it: \"unexpected directory name '{directory.name}' for "
        f"model '{name}', directory name must equal model name\". Set name: "
        f"\"{directory.name}\" ('tritonpy config {directory} --fix-name' writes it), or rename "
        f"the directory to {name!r}"
    )


@dataclass(frozen=True)
class ConfigDiff:
    """The outcome of :func:`sync_config`: the configuration text before and after (both in
    the stable protobuf text form; ``before`` is empty when there was no file).

    ``autocompletes`` is true when the file differs from the derived configuration only by
    what Triton's auto-complete adds at load time (the two-line ``name`` + ``backend`` file,
    or one that leaves some inputs, outputs or ``max_batch_size`` out): the server then runs
    the declared configuration, so such a file is correct as it stands.
    """

    path: Path
    before: str
    after: str
    written: bool
    autocompletes: bool = False
    completed: str = ""  # the file as Triton's auto-complete completes it ('' if no file)

    @property
    def changed(self) -> bool:
        """True when the declarations change the configuration."""
        return self.before != self.after

    @property
    def contradicts(self) -> bool:
        """True when the file says something the declarations do not (a wrong dtype, dims,
        batch size or an undeclared tensor): Triton would refuse the model, or run another
        configuration than the declared one."""
        return self.changed and not self.autocompletes

    @property
    def diff(self) -> str:
        """A unified diff from the current configuration to the derived one ('' if none)."""
        return self._diff_to_derived(self.before, "now")

    @property
    def conflicts(self) -> str:
        """A unified diff from the file as auto-complete completes it to the derived
        configuration: only what the file contradicts ('' when nothing does)."""
        if not self.completed or self.autocompletes:
            return ""
        return self._diff_to_derived(self.completed, "as auto-complete completes it")

    def _diff_to_derived(self, text: str, label: str) -> str:
        """A unified diff from ``text`` (the file ``label``) to the derived configuration."""
        name = str(self.path)
        lines = difflib.unified_diff(
            text.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"{name} ({label})",
            tofile=f"{name} (from the declarations)",
        )
        return "".join(lines)


def declared_decoupled(cls: type) -> Optional[bool]:
    """The class's ``decoupled`` declaration (a bool attribute), or None when it has none."""
    value = getattr(cls, "decoupled", None)
    return value if isinstance(value, bool) else None


def declared_message(cls: Any, name: str) -> Any:
    """A ``ModelConfig`` holding only what the declarations of a :class:`tritonpy.Model`
    subclass determine.

    >>> declared_message(Double, "double").max_batch_size     # doctest: +SKIP
    8
    """
    # declared_config() holds model_transaction_policy too when the class is decoupled
    return config_from_dict({"name": name, "backend": "python", **cls.declared_config()})


def apply_declarations(config: Any, cls: Any, name: str) -> Any:
    """A copy of ``config`` with the declared fields set from ``cls``, the rest kept.

    ``max_batch_size`` keeps a hand-set value between 1 and the declared one; ``dims`` keep a
    hand-set refinement of the declared ``-1`` wildcards (and are left alone under
    ``reshape``); inputs and outputs follow the declaration order; configured inputs and
    outputs the class does not declare are removed (the model would refuse to load).

    Example::

        merged = apply_declarations(load_config("m/config.pbtxt"), Double, "m")
    """
    declared = declared_message(cls, name)
    result = new_config()
    result.CopyFrom(config)
    if result.platform or (result.backend and result.backend != "python"):
        raise ConfigError(
            f"model {name!r}: config.pbtxt says platform {result.platform!r} / backend "
            f"{result.backend!r}, but model.py is a tritonpy (python backend) model; set "
            f'backend: "python" and remove platform'
        )
    result.name = name
    result.backend = "python"
    configured = result.max_batch_size
    wanted = declared.max_batch_size
    result.max_batch_size = configured if 0 < configured <= wanted else wanted
    if result.max_batch_size == 0:
        result.ClearField("dynamic_batching")
    elif declared.HasField("dynamic_batching") and result.WhichOneof(_SCHEDULING) is None:
        result.dynamic_batching.SetInParent()
    _merge_io(result.input, declared.input, is_input=True)
    _merge_io(result.output, declared.output, is_input=False)
    _merge_sequence(result.sequence_batching, getattr(cls, "sequence", None))
    decoupled = declared_decoupled(cls)
    if decoupled is not None:
        result.model_transaction_policy.decoupled = decoupled
        if not result.model_transaction_policy.ListFields():
            result.ClearField("model_transaction_policy")
    return result


def autocomplete_config(config: Any, cls: Any) -> Any:
    """A copy of ``config`` completed the way Triton's auto-complete runs the class's
    ``auto_complete_config`` (the same rule, :func:`completion`): missing inputs/outputs
    added, ``max_batch_size`` set when 0, ``dynamic_batching`` added when no scheduler is set.
    Conflicts are left as they are (the checker reports them)."""
    result = new_config()
    result.CopyFrom(config)
    scheduled = [field for field in SCHEDULERS if result.HasField(field)]
    steps = completion(cls, result.max_batch_size, scheduled)
    if steps.max_batch_size is not None:
        result.max_batch_size = steps.max_batch_size
    if steps.dynamic_batching:
        result.dynamic_batching.SetInParent()
    added = config_from_dict({"input": steps.inputs, "output": steps.outputs})
    for section in ("input", "output"):
        present = {entry.name for entry in getattr(result, section)}
        for entry in getattr(added, section):
            if entry.name not in present:
                getattr(result, section).add().CopyFrom(entry)
    if steps.decoupled:
        result.model_transaction_policy.decoupled = True
    return result


def _merge_sequence(batching: Any, declared: Any) -> None:
    """Set the declared ``sequence_batching`` fields (``declared``: the class's
    ``tp.Sequence``, or None to leave the field alone), keeping the user's others (control
    inputs, queue delays, a strategy's settings when the strategy stays)."""
    if declared is None:
        return
    if batching.WhichOneof("strategy_choice") != declared.strategy:
        getattr(batching, declared.strategy).SetInParent()  # the oneof drops the other one
    if declared.strategy == "oldest":
        oldest = batching.oldest
        if declared.max_candidate_sequences is not None:
            oldest.max_candidate_sequences = declared.max_candidate_sequences
        oldest.preserve_ordering = declared.preserve_ordering
    batching.max_sequence_idle_microseconds = declared.idle_microseconds
    batching.iterative_sequence = declared.iterative


def _merge_io(repeated: Any, declared: Sequence[Any], *, is_input: bool) -> None:
    existing = {entry.name: entry for entry in repeated}
    merged = []
    for entry in declared:
        item = type(entry)()
        old = existing.get(entry.name)
        item.CopyFrom(old if old is not None else entry)
        item.data_type = entry.data_type
        if not item.HasField("reshape") and not shape_matches(list(item.dims), list(entry.dims)):
            del item.dims[:]
            item.dims.extend(entry.dims)
        if is_input:
            if entry.optional:
                item.optional = True
            else:
                item.ClearField("optional")
        merged.append(item)
    del repeated[:]
    repeated.extend(merged)


def sync_config(
    model_dir: PathLike,
    *,
    check: bool = False,
    version: Optional[int] = None,
    fix_name: bool = False,
) -> ConfigDiff:
    """Derive ``<model_dir>/config.pbtxt`` from the declarations of ``<version>/model.py``
    (the highest version by default), merged with the existing file. Writes it atomically
    when it changes, unless ``check`` is true; a file whose configuration already matches is
    not rewritten (its comments survive). Raises :class:`NotDerivableError` for a plain
    (non-tritonpy) ``model.py``, and :class:`ModelNameError` for a file whose ``name``
    differs from the directory's (tritonserver refuses such a model) unless ``fix_name``
    (and not ``check``): then ``name`` becomes the directory's name.

    Example::

        diff = sync_config("model_repository/double", check=True)
        assert not diff.changed, diff.diff
    """
    root = Path(model_dir)
    path = root / CONFIG_FILE
    exists = path.is_file()
    existing = load_config(path) if exists else new_config()
    check_model_name(existing, root.resolve(), path, fix=fix_name and not check)
    if existing.platform == "ensemble" or existing.HasField("ensemble_scheduling"):
        raise HandWrittenConfigError(
            f"{path}: {root.name!r} is an ensemble; its configuration has no model.py to be "
            f"derived from and is written by hand (check it with 'tritonpy check')",
            "an ensemble",
        )
    filename = existing.default_model_filename or "model.py"
    try:
        loaded = load_model_class(root, version=version, filename=filename)
    except ModelImportError as exc:
        raise _own_environment_hint(exc, root, existing) from exc.cause
    cls = tritonpy_class(loaded)
    updated = apply_declarations(existing, cls, root.resolve().name)
    before = format_config(existing) if exists else ""
    after = format_config(updated)
    completed = _autocompleted(existing, cls, root.resolve().name) if exists else None
    autocompletes = (
        completed is not None and before != after and _same_configuration(completed, updated)
    )
    written = False
    if not check and before != after:
        write_config(path, updated)
        written = True
    completed_text = format_config(_ordered_like(completed, updated)) if completed else ""
    return ConfigDiff(path, before, after, written, autocompletes, completed_text)


#: the files that give a model directory an environment spec of its own (as pack-env reads)
_OWN_SPECS = ("environment.yml", "environment.yaml", "requirements.txt")


def _own_environment_hint(exc: ModelImportError, root: Path, config: Any) -> ModelImportError:
    """``exc``, saying where to check a model that imports only inside its own environment
    (this tool imports model.py in its own Python; ``tritonpy check`` imports it there)."""
    own = ENV_PARAMETER in config.parameters or any((root / n).is_file() for n in _OWN_SPECS)
    if not own:
        return exc
    return ModelImportError(
        f"{exc}; {root.name!r} has its own environment (EXECUTION_ENV_PATH or a spec beside "
        f"config.pbtxt) and tritonpy config imports model.py in this Python only: run "
        f"'tritonpy check {root.parent}', which imports it inside its environment and checks "
        "config.pbtxt against its declarations",
        exc.cause,
    )


def _autocompleted(config: Any, cls: Any, name: str) -> Any:
    """What Triton loads from ``config``: the directory's name when the file names none,
    then the class's ``auto_complete_config``."""
    named = new_config()
    named.CopyFrom(config)
    if not named.name:
        named.name = name
    if not named.backend and not named.platform:
        named.backend = "python"
    return autocomplete_config(named, cls)


def _same_configuration(left: Any, right: Any) -> bool:
    """Equal messages, ignoring the order of inputs and outputs (auto-complete appends the
    ones a file leaves out; the declaration order is not significant to Triton)."""
    return bool(_ordered_like(left, right) == right)


def _ordered_like(message: Any, reference: Any) -> Any:
    """A copy of ``message`` with its inputs and outputs in the order of ``reference``'s
    (names ``reference`` lacks go last), so that a diff shows contents, not order."""
    copy = new_config()
    copy.CopyFrom(message)
    for section in ("input", "output"):
        rank = {entry.name: index for index, entry in enumerate(getattr(reference, section))}
        entries = sorted(getattr(copy, section), key=lambda e: rank.get(e.name, len(rank)))
        kept = [type(entry)() for entry in entries]
        for fresh, entry in zip(kept, entries):
            fresh.CopyFrom(entry)
        del getattr(copy, section)[:]
        getattr(copy, section).extend(kept)
    return copy


def tritonpy_class(loaded: LoadedModel) -> Any:
    """The loaded ``TritonPythonModel`` when it is a tritonpy model, else
    :class:`NotDerivableError` saying why."""
    if loaded.cls is None:
        raise NotDerivableError(
            f"{loaded.model_file}: defines no TritonPythonModel class, so there is nothing "
            f"to derive config.pbtxt from; bind it: TritonPythonModel = YourModel"
        )
    if not loaded.is_tritonpy:
        raise HandWrittenConfigError(
            f"{loaded.model_file}: TritonPythonModel ({loaded.cls.__name__}) is a plain "
            f"Python-backend model, not a tritonpy.Model subclass; its inputs and outputs "
            f"cannot be derived. Write them in config.pbtxt by hand, or make the class "
            f"subclass tritonpy.Model with inputs/outputs declarations",
            "a plain Python-backend model",
        )
    return loaded.cls
