"""Ensemble rules (TP4xx), as Triton validates an ensemble when it loads it.

Step models are read after auto-complete (a tritonpy step with a two-line config.pbtxt has its
declared inputs and outputs). Steps may come in any order: Triton schedules by data flow.

==========  ========  ==============================================================
TP401       error     a step's model (or model_version) is not in the repository
TP402       error     an input_map value is neither an ensemble input nor a step output
TP403       error     an ensemble output no step produces
TP404       error     data types differ along an edge
TP405       error     shapes differ along an edge (batch dimension rules applied)
TP406       error     steps form a cycle
TP407       warning   a step model output no output_map takes (computed, then dropped)
TP408       error     a batching step's max_batch_size below the ensemble's
TP409       error     an input_map/output_map key the step model does not have
TP410       error     a required step model input left unmapped
TP411       error     an ensemble tensor produced by more than one output_map entry
TP412       error     an ensemble input or step output nothing consumes (Triton refuses)
TP413       error     malformed ensemble: platform, steps, instance_group
==========  ========  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from .._runtime.codecs.base import shape_matches
from .._tooling.pbtxt import data_type_name
from ._context import ModelEntry, Repository, Section, error
from ._report import WARNING, Finding


@dataclass(frozen=True)
class _Node:
    """One end of an edge: a tensor as one model (or the ensemble) sees it."""

    where: str
    data_type: int
    dims: Tuple[int, ...]
    batching: bool

    @property
    def full_dims(self) -> Tuple[int, ...]:
        return (-1, *self.dims) if self.batching else self.dims


def _fits(a: Tuple[int, ...], b: Tuple[int, ...]) -> bool:
    """True when the dims agree along an edge, -1 on either side matching any size (as Triton
    compares an ensemble's tensors): ``a`` takes ``b``'s size where it has -1, then the
    codecs' rule (-1 in ``b`` matches any size) decides."""
    filled = [y if x == -1 else x for x, y in zip(a, b)]
    return len(a) == len(b) and shape_matches(filled, b)


def check_ensembles(repo: Repository) -> Iterator[Finding]:
    """Yield the findings of every ensemble of the repository."""
    for entry in repo:
        if entry.is_ensemble:
            yield from _Ensemble(repo, entry).check()


class _Ensemble:
    def __init__(self, repo: Repository, entry: ModelEntry) -> None:
        self.repo = repo
        self.entry = entry
        self.config = entry.config
        self.steps = list(self.config.ensemble_scheduling.step)
        self.registry: Dict[str, _Node] = {}
        self.reported: Set[str] = set()

    def check(self) -> Iterator[Finding]:
        findings = list(self._structure())
        yield from findings
        if findings:
            return
        yield from self._data_flow()
        batching = self.config.max_batch_size > 0
        for inp in self.config.input:
            dims = inp.reshape.shape if inp.HasField("reshape") else inp.dims
            where = f"ensemble {self.entry.name!r} input {inp.name}"
            self.registry[inp.name] = _Node(where, inp.data_type, tuple(dims), batching)
        for out in self.config.output:
            dims = out.reshape.shape if out.HasField("reshape") else out.dims
            where = f"ensemble {self.entry.name!r} output {out.name}"
            self.registry.setdefault(out.name, _Node(where, out.data_type, tuple(dims), batching))
        for index, step in enumerate(self.steps):
            yield from self._step(index, step)

    # -- the ensemble's own fields -----------------------------------------------------------
    def _structure(self) -> Iterator[Finding]:
        entry, config = self.entry, self.config
        fix_platform = (
            'an ensemble needs platform: "ensemble" and ensemble_scheduling { step [...] }'
        )
        if config.platform != "ensemble":
            yield error(
                entry,
                "TP413",
                "platform",
                f"ensemble_scheduling is set but platform is {config.platform!r}",
                fix_platform,
            )
        if not self.steps:
            yield error(
                entry, "TP413", "ensemble_scheduling.step", "the ensemble has no step", fix_platform
            )
        if len(config.instance_group):
            yield error(
                entry,
                "TP413",
                "instance_group",
                "instance_group is set on an ensemble; Triton refuses it (an ensemble has no "
                "instances of its own)",
                "remove instance_group from the ensemble; set it on the step models",
            )
        for index, step in enumerate(self.steps):
            for what in ("model_name", "input_map", "output_map"):
                if not getattr(step, what):
                    yield error(
                        entry,
                        "TP413",
                        f"ensemble_scheduling.step[{index}].{what}",
                        f"step {index} has no {what}",
                        "give every step a model_name, an input_map and an output_map",
                    )

    # -- data flow between steps -------------------------------------------------------------
    def _data_flow(self) -> Iterator[Finding]:
        inputs = [i.name for i in self.config.input]
        outputs = [o.name for o in self.config.output]
        producer: Dict[str, int] = {}
        yield from self._produced_twice(inputs, producer)
        consumers: Dict[str, List[int]] = {}
        for index, step in enumerate(self.steps):
            for value in step.input_map.values():
                consumers.setdefault(value, []).append(index)
        yield from self._unknown_reads(inputs, producer)
        yield from self._loose_ends(inputs, outputs, producer, consumers)
        yield from self._cycle(producer)

    def _produced_twice(self, inputs: List[str], producer: Dict[str, int]) -> Iterator[Finding]:
        """TP411; fills ``producer`` (ensemble tensor -> index of the first step writing it)."""
        for index, step in enumerate(self.steps):
            for key, value in sorted(step.output_map.items()):
                if value in producer or value in inputs:
                    yield error(
                        self.entry,
                        "TP411",
                        f"ensemble_scheduling.step[{index}].output_map[{key}]",
                        f"ensemble tensor {value!r} is produced again by step {index} "
                        f"({step.model_name!r}): "
                        + (
                            f"step {producer[value]} produces it already"
                            if value in producer
                            else "it is an ensemble input"
                        ),
                        "give every output_map value its own tensor name",
                    )
                producer.setdefault(value, index)

    def _unknown_reads(self, inputs: List[str], producer: Dict[str, int]) -> Iterator[Finding]:
        """TP402: a step reads a tensor that nothing provides."""
        for index, step in enumerate(self.steps):
            for key, value in sorted(step.input_map.items()):
                if value not in producer and value not in inputs:
                    yield error(
                        self.entry,
                        "TP402",
                        f"ensemble_scheduling.step[{index}].input_map[{key}]",
                        f"step {index} ({step.model_name!r}) reads ensemble tensor {value!r}, "
                        f"which is neither an ensemble input ({inputs}) nor any step's "
                        f"output_map value ({sorted(producer)})",
                        "map it from an ensemble input or from an output_map value of a step",
                    )

    def _loose_ends(
        self,
        inputs: List[str],
        outputs: List[str],
        producer: Dict[str, int],
        consumers: Dict[str, List[int]],
    ) -> Iterator[Finding]:
        """TP403: an ensemble output that no step writes; TP412: an ensemble input or a step's
        tensor that nothing reads."""
        for name in outputs:
            if name not in producer:
                yield error(
                    self.entry,
                    "TP403",
                    f"output[{name}]",
                    f"ensemble output {name!r} is produced by no step",
                    f"add an output_map entry with value {name!r} to the step that computes it",
                )
        for name in inputs:
            if name not in consumers:
                yield error(
                    self.entry,
                    "TP412",
                    f"input[{name}]",
                    f"ensemble input {name!r} is not used by any step; Triton refuses the ensemble",
                    "map it in a step's input_map, or remove it from the ensemble inputs",
                )
        for name, index in producer.items():
            if name not in consumers and name not in outputs:
                key = next(k for k, v in self.steps[index].output_map.items() if v == name)
                yield error(
                    self.entry,
                    "TP412",
                    f"ensemble_scheduling.step[{index}].output_map[{key}]",
                    f"ensemble tensor {name!r} (output {key} of step {index}, "
                    f"{self.steps[index].model_name!r}) is consumed by no step and is not an "
                    f"ensemble output; Triton refuses the ensemble",
                    "drop this output_map entry, map it into a step, or make it an ensemble output",
                )

    def _cycle(self, producer: Dict[str, int]) -> Iterator[Finding]:
        """TP406: steps that wait on each other."""
        cycle = _find_cycle(self.steps, producer)
        if cycle:
            names = " -> ".join(f"step {i} ({self.steps[i].model_name!r})" for i in cycle)
            yield error(
                self.entry,
                "TP406",
                "ensemble_scheduling.step",
                f"the steps form a cycle: {names}; their inputs never become ready",
                "break the cycle: a step may only read ensemble inputs or tensors of steps "
                "that do not depend on it",
            )

    # -- one step against its model ----------------------------------------------------------
    def _step(self, index: int, step: Any) -> Iterator[Finding]:
        entry = self.entry
        prefix = f"ensemble_scheduling.step[{index}]"
        model = self.repo.models.get(step.model_name)
        if model is None:
            yield error(
                entry,
                "TP401",
                f"{prefix}.model_name",
                f"step {index} runs model {step.model_name!r}, which is not in the "
                f"repository (models: {sorted(self.repo.models)})",
                f"add {step.model_name}/ to the repository or fix model_name",
            )
            return
        if step.model_version > 0 and not (model.path / str(step.model_version)).is_dir():
            yield error(
                entry,
                "TP401",
                f"{prefix}.model_version",
                f"step {index} asks for version {step.model_version} of "
                f"{step.model_name!r}, which has no such version directory",
                "use model_version: -1 (the latest) or add the version directory",
            )
        config = model.effective_config
        if config is None:
            return  # its own config.pbtxt is reported by the layout rules
        mbs, ensemble_mbs = config.max_batch_size, self.config.max_batch_size
        if mbs != 0 and mbs < ensemble_mbs:
            yield error(
                entry,
                "TP408",
                "max_batch_size",
                f"the ensemble allows max_batch_size {ensemble_mbs} but step {index} model "
                f"{step.model_name!r} allows only {mbs}",
                f"lower the ensemble's max_batch_size to {mbs} or raise the step model's",
            )
        if not config.input and not config.output:
            return  # a plain model completing its own config: its tensors are unknown
        yield from self._mapping(index, step, config, "input", step.input_map)
        yield from self._mapping(index, step, config, "output", step.output_map)

    def _mapping(
        self, index: int, step: Any, config: Any, section: Section, mapping: Any
    ) -> Iterator[Finding]:
        entry = self.entry
        specs = {item.name: item for item in getattr(config, section)}
        field = f"ensemble_scheduling.step[{index}].{section}_map"
        batching = config.max_batch_size > 0
        for key, value in sorted(mapping.items()):
            spec = specs.get(key)
            if spec is None:
                yield error(
                    entry,
                    "TP409",
                    f"{field}[{key}]",
                    f"step {index} maps {section} {key!r}, but model {step.model_name!r} has "
                    f"no {section} of that name ({section}s: {sorted(specs)})",
                    f"use one of the model's {section} names as the {section}_map key",
                )
                continue
            where = f"model {step.model_name!r} {section} {key}"
            node = _Node(where, spec.data_type, tuple(spec.dims), batching)
            yield from self._edge(value, node, f"{field}[{key}]")
        for name, spec in specs.items():
            if name in mapping:
                continue
            if section == "input" and not spec.optional:
                yield error(
                    entry,
                    "TP410",
                    field,
                    f"step {index}: required input {name!r} of model {step.model_name!r} is "
                    f"not mapped",
                    f"add input_map {{ key: {name!r} value: <ensemble tensor> }}",
                )
            elif section == "output":
                yield entry.finding(
                    "TP407",
                    WARNING,
                    field,
                    f"step {index}: output {name!r} of model {step.model_name!r} is computed "
                    f"but no output_map takes it",
                    "map it to an ensemble tensor if it is needed; otherwise ignore this "
                    "(or stop computing it)",
                )

    def _edge(self, tensor: str, node: _Node, field: str) -> Iterator[Finding]:
        known = self.registry.get(tensor)
        if known is None:
            self.registry[tensor] = node
            return
        if tensor in self.reported:
            return
        if known.data_type != node.data_type:
            self.reported.add(tensor)
            yield error(
                self.entry,
                "TP404",
                field,
                f"ensemble tensor {tensor!r}: {known.where} is "
                f"{data_type_name(known.data_type)} but {node.where} is "
                f"{data_type_name(node.data_type)}",
                "make the data types agree along the edge (change the producer's output or "
                "the consumer's input)",
            )
        elif not _fits(known.dims, node.dims) and not _fits(known.full_dims, node.full_dims):
            self.reported.add(tensor)
            yield error(
                self.entry,
                "TP405",
                field,
                f"ensemble tensor {tensor!r}: shape {list(known.full_dims)} from "
                f"{known.where} does not fit {list(node.full_dims)} of {node.where} (a "
                f"leading -1 is the batch dimension of a batching model)",
                "make the dims agree (-1 matches any size); a batching model's dims exclude "
                "the batch dimension, a non-batching model's include it",
            )


def _find_cycle(steps: List[Any], producer: Dict[str, int]) -> Optional[List[int]]:
    """A list of step indices forming a cycle (first index repeated at the end), or None."""
    edges: Dict[int, List[int]] = {i: [] for i in range(len(steps))}
    for index, step in enumerate(steps):
        for value in step.input_map.values():
            if value in producer:
                edges[producer[value]].append(index)
    state: Dict[int, int] = {}  # 1 on the stack, 2 done
    stack: List[int] = []

    def visit(node: int) -> Optional[List[int]]:
        state[node] = 1
        stack.append(node)
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for start in edges:
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None
