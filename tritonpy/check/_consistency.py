"""Consistency rules (TP2xx): config.pbtxt agrees with the tritonpy declarations of model.py.

A field config.pbtxt leaves out is fine: auto-complete fills it from the declarations. What
config.pbtxt does say must agree with them, or the model fails to load.

==========  ========  ==============================================================
TP201       error     an input/output in config.pbtxt the class does not declare
TP202       warning   config.pbtxt lists some inputs/outputs but not a declared one
TP203       error     data_type differs from the declaration
TP204       error     dims differ from the declaration (-1 declared matches any size)
TP205       error     ``optional`` differs from the declaration
TP206       error     max_batch_size above the declared one, or batching the class lacks
TP207       error     ``model_transaction_policy.decoupled`` differs from the class
TP208       error     a tritonpy model.py under another backend or a platform
==========  ========  ==============================================================
"""

from __future__ import annotations

from typing import Any, Dict, Iterator

from .._runtime.codecs.base import shape_matches
from .._tooling.pbtxt import data_type_name
from ..config import declared_decoupled, declared_message
from ._context import SECTIONS, ModelEntry, Repository, Section, error
from ._report import WARNING, Finding


def check_consistency(repo: Repository) -> Iterator[Finding]:
    """Yield the consistency findings of every tritonpy model."""
    for entry in repo:
        cls = entry.model_class
        if cls is not None and entry.config is not None:
            yield from _check_model(entry, cls)


def _check_model(entry: ModelEntry, cls: Any) -> Iterator[Finding]:
    config = entry.config
    declared = declared_message(cls, entry.name)
    owner = f"{cls.__name__} in {entry.name}/{_model_file(entry)}"
    if not config.backend and not config.platform:
        return  # TP108 says it
    if config.platform or config.backend != "python":
        yield error(
            entry,
            "TP208",
            "backend",
            f"model.py defines a tritonpy model ({owner}) but config.pbtxt says backend "
            f"{config.backend!r}, platform {config.platform!r}",
            'set backend: "python" and remove platform',
        )
        return
    for section in SECTIONS:
        yield from _check_section(entry, section, config, declared, owner)
    yield from _check_batch_size(entry, config.max_batch_size, declared.max_batch_size, owner)
    wanted = declared_decoupled(cls) or False
    configured = config.model_transaction_policy.decoupled
    if wanted and not config.HasField("model_transaction_policy"):
        configured = True  # auto-complete sets it (a streaming infer implies decoupled)
    if configured != wanted:
        yield error(
            entry,
            "TP207",
            "model_transaction_policy.decoupled",
            f"config.pbtxt sets decoupled: {str(not wanted).lower()} but {owner} "
            + ("declares decoupled = True" if wanted else "does not declare decoupled = True"),
            "make them agree: set decoupled on the class, or fix model_transaction_policy "
            "in config.pbtxt (run 'tritonpy config')",
        )


def _model_file(entry: ModelEntry) -> str:
    return entry.model_file


def _check_section(
    entry: ModelEntry, section: Section, config: Any, declared: Any, owner: str
) -> Iterator[Finding]:
    configured = {item.name: item for item in getattr(config, section)}
    wanted = {item.name: item for item in getattr(declared, section)}
    yield from _check_names(entry, section, configured, wanted, owner)
    for name, item in configured.items():
        spec = wanted.get(name)
        if spec is not None:
            yield from _check_entry(entry, section, item, spec, owner)


def _check_names(
    entry: ModelEntry,
    section: Section,
    configured: Dict[str, Any],
    wanted: Dict[str, Any],
    owner: str,
) -> Iterator[Finding]:
    """TP201 (configured, not declared) and TP202 (declared, left out of a partial list)."""
    plural = f"{section}s"
    for name in configured:
        if name not in wanted:
            yield error(
                entry,
                "TP201",
                f"{section}[{name}]",
                f"config.pbtxt has {section} {name!r} but {owner} does not declare it "
                f"(declared {plural}: {sorted(wanted)})",
                f"declare it in {plural} = {{...}} or remove it from config.pbtxt",
            )
    missing = [name for name in wanted if name not in configured]
    if configured and missing:
        yield entry.finding(
            "TP202",
            WARNING,
            section,
            f"config.pbtxt lists {plural} {sorted(configured)} but not the declared "
            f"{missing}; auto-complete adds them, but the model fails to load on a server "
            f"started with --disable-auto-complete-config",
            "run 'tritonpy config' to write every declared entry",
        )


def _check_entry(
    entry: ModelEntry, section: Section, item: Any, spec: Any, owner: str
) -> Iterator[Finding]:
    """TP203-TP205: one configured input/output against its declaration ``spec``."""
    name = item.name
    field = f"{section}[{name}]"
    if item.data_type != spec.data_type:
        yield error(
            entry,
            "TP203",
            f"{field}.data_type",
            f"{section} {name!r} is {data_type_name(item.data_type)} in config.pbtxt "
            f"but {data_type_name(spec.data_type)} in {owner}",
            "make them agree (run 'tritonpy config' to take the declaration)",
        )
    dims, spec_dims = list(item.dims), list(spec.dims)
    if not item.HasField("reshape") and not shape_matches(dims, spec_dims):
        yield error(
            entry,
            "TP204",
            f"{field}.dims",
            f"{section} {name!r} has dims {dims} in config.pbtxt but {spec_dims} in {owner}",
            "make them agree (-1 declared accepts any size there)",
        )
    if section == "input" and item.optional != spec.optional:
        yield error(
            entry,
            "TP205",
            f"{field}.optional",
            f"input {name!r} is {_presence(item.optional)} in config.pbtxt but "
            f"{_presence(spec.optional)} in {owner}",
            "make them agree: optional=True (or a default) on the codec, or "
            "optional: true in config.pbtxt",
        )


def _presence(optional: bool) -> str:
    return "optional" if optional else "required"


def _check_batch_size(
    entry: ModelEntry, configured: int, declared: int, owner: str
) -> Iterator[Finding]:
    if declared == 0 and configured > 0:
        yield error(
            entry,
            "TP206",
            "max_batch_size",
            f"config.pbtxt sets max_batch_size {configured} but {owner} declares "
            f"max_batch_size = 0 (infer() expects values without a batch dimension)",
            "set max_batch_size on the class or remove it from config.pbtxt",
        )
    elif declared > 0 and configured > declared:
        yield error(
            entry,
            "TP206",
            "max_batch_size",
            f"config.pbtxt sets max_batch_size {configured}, above the max_batch_size = "
            f"{declared} of {owner}",
            "lower it in config.pbtxt or raise it on the class",
        )
