"""The codecs of one model instance as the hot loops read them: :class:`CodecTables`, built
once from the instance's ``inputs`` and ``outputs`` (``setup()`` may have replaced a codec)
and their :class:`~tritonpy._runtime.codecs.base.CodecPlan`; the one place where a plan
becomes the tuples and rules the loops unpack."""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from ..codecs._plan import CODEC, NUMPY, TORCH, ArrayRule, CodecPlan
from ..codecs.base import Codec

#: how the direct path takes an input or passes an output (CodecPlan.read / .write), as the
#: small ints its loops compare
AS_NUMPY, AS_TORCH, BY_CODEC = 0, 1, 2
_WAYS = {NUMPY: AS_NUMPY, TORCH: AS_TORCH, CODEC: BY_CODEC}

#: an input's direct steps: (way, dtype, fixed dims or None, rank, shape test or None, calls),
#: the fields of its ArrayRule laid out for unpacking; calls: (from_dlpack, concat) when
#: AS_TORCH, (decode_one, decode_many) when BY_CODEC
DirectInput = Tuple[int, Any, Optional[Tuple[int, ...]], int, Any, Any]
#: an output's: (name, way, dtype, fixed dims or None, rank, shape test or None, call); call:
#: to_array (AS_NUMPY: may be None; BY_CODEC), (tensor_type, to_dlpack) when AS_TORCH
DirectOutput = Tuple[str, int, Any, Optional[Tuple[int, ...]], int, Any, Any]


class CodecTables:
    """Per input and output, what ``execute()`` needs of its codec, computed once (the hot
    path does no lookups)."""

    def __init__(
        self, inputs: Mapping[str, Codec], outputs: Mapping[str, Codec], batched: bool
    ) -> None:
        self.input_plan: Tuple[Tuple[str, Codec], ...] = tuple(inputs.items())
        self.output_plan: Tuple[Tuple[str, Codec], ...] = tuple(outputs.items())
        self.output_names: FrozenSet[str] = frozenset(outputs)
        in_plans = {name: codec.plan(batched) for name, codec in self.input_plan}
        out_plans = {name: codec.plan(batched) for name, codec in self.output_plan}
        # plain Tensors are checked and wrapped without a codec call (CodecPlan.plain)
        self.input_entries: Dict[str, Tuple[Codec, Optional[ArrayRule]]] = {
            name: (codec, _plain_rule(in_plans[name])) for name, codec in self.input_plan
        }
        self.output_entries: Tuple[Tuple[str, Codec, Optional[ArrayRule]], ...] = tuple(
            (name, codec, _plain_rule(out_plans[name])) for name, codec in self.output_plan
        )
        # the inputs that can keep two requests apart (the others' group key is always None)
        self.key_inputs = tuple(
            (name, codec)
            for name, codec in self.input_plan
            if codec.optional or in_plans[name].groups_requests
        )
        # with one output, a request asks for it or for everything: no need to ask which
        self.may_request_fewer = len(self.output_plan) > 1
        # the inputs whose value for a request alone is not the decoded one (ragged="pad"
        # gives a Padded, an Image decodes its rows when merged)
        self.merged_alone: Tuple[Tuple[str, Codec], ...] = tuple(
            (name, codec) for name, codec in self.input_plan if not codec.merge_keeps_one()
        )
        # a request alone, and a merged call, take the direct path (see _direct.py) when
        # every input and output has one
        self.direct_inputs: Optional[Dict[str, DirectInput]] = _direct_inputs(
            self.input_plan, in_plans, batched
        )
        self.direct_outputs: Tuple[DirectOutput, ...] = _direct_outputs(out_plans)
        if not self.direct_outputs and out_plans:
            self.direct_inputs = None


def _plain_rule(plan: CodecPlan) -> Optional[ArrayRule]:
    return plan.rule if plan.plain else None


def _direct_inputs(
    inputs: Tuple[Tuple[str, Codec], ...], plans: Dict[str, CodecPlan], batched: bool
) -> Optional[Dict[str, DirectInput]]:
    """The direct steps of every input, or None when some input has none."""
    steps: Dict[str, DirectInput] = {}
    for name, codec in inputs:
        plan = plans[name]
        if plan.read is None:
            return None
        way = _WAYS[plan.read]
        # with batching, a codec's own steps must give what merge() would; the plain arrays of
        # several requests merge only when their shapes agree (else: the general path)
        if batched and (plan.groups_requests if way == BY_CODEC else not codec.merge_keeps_one()):
            return None
        if way == BY_CODEC:
            steps[name] = (
                way,
                None,
                None,
                len(plan.dims),
                None,
                (plan.decode_one, plan.decode_many),
            )
            continue
        rule = plan.rule
        calls = (plan.from_dlpack, plan.concat) if way == AS_TORCH else None
        steps[name] = (way, rule.dtype, rule.fixed, rule.rank, rule.test, calls)
    return steps


def _direct_outputs(plans: Dict[str, CodecPlan]) -> Tuple[DirectOutput, ...]:
    """The direct steps of every output, or () when some output has none."""
    steps: List[DirectOutput] = []
    for name, plan in plans.items():
        if plan.write is None:
            return ()
        way = _WAYS[plan.write]
        call: Any = (plan.tensor_type, plan.to_dlpack) if way == AS_TORCH else plan.to_array
        if way == BY_CODEC:
            steps.append((name, way, None, None, len(plan.dims), None, call))
            continue
        rule = plan.rule
        steps.append((name, way, rule.dtype, rule.fixed, rule.rank, rule.test, call))
    return tuple(steps)
