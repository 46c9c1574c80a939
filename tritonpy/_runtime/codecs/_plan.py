"""A codec's plan: how tritonpy moves its values without the codec's general steps
(:class:`CodecPlan`, what :meth:`~tritonpy.Codec.plan` returns), and the one rule of whether
an array fits a declared data type and dims (:class:`ArrayRule`), which the engine applies to
every input it reads and every output it passes that way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

from ..errors import DeclarationError

#: how the direct path takes an input or passes an output (:attr:`CodecPlan.read` and
#: :attr:`CodecPlan.write`): the tensor's numpy array, a torch tensor through DLPack, or the
#: codec's own functions
NUMPY, TORCH, CODEC = "numpy", "torch", "codec"
_WAYS = (None, NUMPY, TORCH, CODEC)
#: what each way needs of the plan, besides the way itself
_NEEDS = {
    "read": {NUMPY: ("dtype",), TORCH: ("dtype", "from_dlpack", "concat")},
    "write": {NUMPY: ("dtype",), TORCH: ("dtype", "tensor_type", "to_dlpack")},
}
_NEEDS["read"][CODEC] = ("decode_one", "decode_many")
_NEEDS["write"][CODEC] = ("to_array",)


@dataclass(frozen=True)
class ArrayRule:
    """Whether an array fits a declared data type and dims (-1: any size): the one rule the
    engine applies to inputs and outputs, with or without the row dimension of a batched
    model. Laid out so that the usual shapes cost no call: ``fixed`` when no dim varies (a
    tuple comparison), the ``rank`` alone when all do, and a ``test`` only for a mix.

    >>> rule = ArrayRule.of(np.dtype(np.float32), (-1, 3))
    >>> rule.fits(np.zeros((2, 5, 3), np.float32), batched=True)
    True
    """

    #: the element type (a numpy dtype, or a torch dtype for torch tensors)
    dtype: Any
    #: the dims when none varies, else None
    fixed: Optional[Tuple[int, ...]]
    rank: int
    #: the test of a shape that mixes fixed and varying dims, else None
    test: Optional[Callable[[Tuple[int, ...]], bool]]

    @classmethod
    def of(cls, dtype: Any, dims: Tuple[int, ...]) -> ArrayRule:
        if -1 not in dims:
            return cls(dtype, dims, len(dims), None)
        if set(dims) == {-1}:
            return cls(dtype, None, len(dims), None)
        return cls(dtype, None, len(dims), shape_test(dims))

    def fits_shape(self, shape: Tuple[int, ...]) -> bool:
        """``shape`` (without the row dimension) fits the dims."""
        if self.fixed is not None:
            return shape == self.fixed
        return len(shape) == self.rank and (self.test is None or self.test(shape))

    def fits(self, value: Any, batched: bool) -> bool:
        """``value`` (anything with ``dtype`` and ``shape``) fits the rule; ``batched``: its
        first dimension is the rows."""
        if value.dtype is not self.dtype and value.dtype != self.dtype:
            return False
        shape = value.shape
        if batched:
            if not shape:
                return False
            shape = shape[1:]
        return self.fits_shape(shape)


@dataclass(frozen=True)
class CodecPlan:
    """How tritonpy moves a codec's values without calling its general steps, field by field:
    what :meth:`Codec.plan` returns. A field left at its default keeps the general steps
    (``decode``, ``merge``, ``encode``, ``to_tensor``), which are always right and word the
    errors: a plan only makes the usual requests cheaper.

    * ``plain``: the value *is* the tensor's numpy array of ``dtype`` and ``dims``: ``decode``
      is ``as_numpy()`` and a check, ``encode`` passes such an array as it is, ``to_tensor`` is
      ``pb_utils.Tensor`` and ``rows`` is ``len`` (like :class:`~tritonpy.Tensor`);
    * ``read``: how a request's tensor becomes the value ``infer`` gets on the direct path:
      ``"numpy"`` (its array, checked against ``dtype`` and ``dims``), ``"torch"``
      (``from_dlpack`` of its capsule, checked the same way; ``concat`` joins the tensors of
      several requests), or ``"codec"``: ``decode_one(name, tensor, batched)`` gives the value
      of a request alone (as merged, so its ``len`` is the rows, when batched) and
      ``decode_many(name, tensors)`` the merged value of several requests and the rows of
      each. Both raise for anything unusual; the general path then decides and words it;
    * ``write``: how an output value goes to the stub on the direct path: ``"numpy"`` (an
      ndarray of ``dtype`` and ``dims`` as it is, an object array only of ``str``/``bytes``;
      ``to_array(value, rows)`` may turn a list of rows into one), ``"torch"`` (a contiguous
      CPU ``tensor_type`` without grad, handed over as ``to_dlpack(value)``), or ``"codec"``:
      ``to_array(value, rows or None)`` gives the array for ``pb_utils.Tensor``, or None for
      anything it does not take as it is;
    * ``groups_requests``: :meth:`Codec.group_key` may return anything but None.

    Example, the plan of ``tp.Tensor("FP32", [-1])`` (batched or not)::

        CodecPlan(plain=True, read="numpy", write="numpy", dtype=np.dtype(np.float32),
                  dims=(-1,), groups_requests=True)
    """

    read: Optional[str] = None
    write: Optional[str] = None
    dtype: Any = None
    dims: Tuple[int, ...] = ()
    plain: bool = False
    groups_requests: bool = False
    decode_one: Optional[Callable[[str, Any, bool], Any]] = None
    decode_many: Optional[Callable[[str, Sequence[Any]], Tuple[Any, List[int]]]] = None
    from_dlpack: Optional[Callable[[Any], Any]] = None
    concat: Optional[Callable[[Sequence[Any]], Any]] = None
    to_array: Optional[Callable[[Any, Optional[int]], Any]] = None
    tensor_type: Any = None
    to_dlpack: Optional[Callable[[Any], Any]] = None

    def __post_init__(self) -> None:
        for field in ("read", "write"):
            way = getattr(self, field)
            if way not in _WAYS:
                raise DeclarationError(
                    f"CodecPlan.{field} must be one of {list(_WAYS)}, got {way!r}"
                )
            missing = [n for n in _NEEDS[field].get(way, ()) if getattr(self, n) is None]
            if missing:
                raise DeclarationError(
                    f"CodecPlan({field}={way!r}) needs {', '.join(missing)}; give them, or "
                    f"leave {field} None for the codec's general steps"
                )
        if self.plain and self.dtype is None:
            raise DeclarationError("CodecPlan(plain=True) needs the numpy dtype of its arrays")

    @property
    def rule(self) -> ArrayRule:
        """The :class:`ArrayRule` of ``dtype`` and ``dims``."""
        return ArrayRule.of(self.dtype, self.dims)


def shape_test(dims: Tuple[int, ...]) -> Callable[[Tuple[int, ...]], bool]:
    """The cheapest test of a shape against ``dims`` (-1: any size), for the hot path: a
    tuple comparison when no dim varies, a length comparison when all do, and otherwise the
    length and the fixed dims only."""
    if -1 not in dims:
        return dims.__eq__
    rank = len(dims)
    if set(dims) == {-1}:
        return lambda shape: len(shape) == rank
    fixed = tuple((axis, size) for axis, size in enumerate(dims) if size != -1)

    def fits(shape: Tuple[int, ...]) -> bool:
        if len(shape) != rank:
            return False
        for axis, size in fixed:  # noqa: SIM110 - a loop: no generator a call
            if shape[axis] != size:
                return False
        return True

    return fits
