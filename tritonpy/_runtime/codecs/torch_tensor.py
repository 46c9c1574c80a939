"""``TorchTensor``: torch tensors in and out through DLPack, without copies."""

from __future__ import annotations

from functools import cache
from typing import Any, Dict, Hashable, List, Optional, Sequence

import numpy as np

from .._config_parameters import INSTANCE_DEVICE, defer_config_arguments
from .._optional import codec_dependency
from ..errors import DeclarationError, InputError, OutputError
from ._plan import TORCH, CodecPlan
from .base import MISSING, Codec, format_shape, shape_matches

_TORCH_DTYPES = {
    "BOOL": "bool",
    "UINT8": "uint8",
    "INT8": "int8",
    "INT16": "int16",
    "INT32": "int32",
    "INT64": "int64",
    "FP16": "float16",
    "BF16": "bfloat16",
    "FP32": "float32",
    "FP64": "float64",
}


@cache
def _torch() -> Any:
    return codec_dependency("torch", codec="TorchTensor", library="PyTorch")


def _cat(values: Sequence[Any]) -> Any:
    """The rows of several requests' tensors joined (what :meth:`TorchTensor.merge` does)."""
    return _torch().cat(list(values), dim=0)


@cache
def _to_dlpack() -> Any:
    return _torch().utils.dlpack.to_dlpack


class TorchTensor(Codec):
    """A ``torch.Tensor`` exchanged with Triton through DLPack: no copy on the way in, none on
    the way out (for contiguous tensors).

    ``device`` says where ``infer`` wants its inputs: ``None`` (default) keeps them where
    Triton put them (CPU unless the model's config sets
    ``parameters { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value { string_value: "no" } }``),
    ``"cpu"`` or ``"cuda"``/``"cuda:N"`` moves them there (a copy when they are elsewhere);
    ``"instance"`` moves them to the instance's GPU (``self.torch_device``) for an
    ``instance_group { kind: KIND_GPU }`` instance and keeps them where Triton put them on a
    CPU one. ``device`` may also name a ``config.pbtxt`` parameter
    (:func:`tp.config_parameter <tritonpy.config_parameter>`).
    Outputs may live on any device; numpy arrays are accepted too. Unlike :class:`Tensor`,
    ``BF16`` works. With batching, the rows of all requests are joined with ``torch.cat``
    (one copy; none for a single request).

    Example::

        inputs = {"PIXELS": tp.TorchTensor("FP32", [3, 224, 224], device="cuda")}
        outputs = {"LOGITS": tp.TorchTensor("FP32", [1000])}

        def infer(self, PIXELS):
            with torch.inference_mode():
                return {"LOGITS": self.net(PIXELS)}

    Needs ``torch`` in the model's environment.
    """

    def __init__(
        self,
        dtype: str,
        dims: Sequence[int],
        *,
        device: Optional[str] = None,
        optional: bool = False,
        default: Any = MISSING,
    ) -> None:
        if device == "instance":
            device = INSTANCE_DEVICE  # type: ignore[assignment]
        if defer_config_arguments(self, TorchTensor.__init__, locals()):
            return  # built with device None; initialize rebuilds it for the instance
        super().__init__(dtype, dims, optional=optional, default=default)
        if self.dtype.name not in _TORCH_DTYPES:
            raise DeclarationError(
                f"TorchTensor({self.dtype.name!r}): torch has no such dtype; expected one of "
                f"{list(_TORCH_DTYPES)}"
            )
        self.device = device
        self._torch_dtype_name = _TORCH_DTYPES[self.dtype.name]
        self._torch_dtype: Any = None  # resolved on first use: torch is imported only then

    @property
    def torch_dtype(self) -> Any:
        if self._torch_dtype is None:
            self._torch_dtype = getattr(_torch(), self._torch_dtype_name)
        return self._torch_dtype

    # -- inputs ------------------------------------------------------------------------------
    def decode(self, name: str, tensor: Any, batched: bool) -> Any:
        torch = _torch()
        # the capsule, not the pb_utils tensor itself: the __dlpack__ protocol costs the real
        # stub 6 us a tensor against 1.4 us for to_dlpack() (benchmarks/HISTORY.md)
        value = torch.from_dlpack(tensor.to_dlpack())
        shape = value.shape  # a torch.Size: a tuple
        if value.dtype is not (self._torch_dtype or self.torch_dtype) or not shape_matches(
            shape[1:] if batched else shape, self.dims
        ):
            expected = format_shape(["rows", *self.dims] if batched else self.dims)
            raise InputError(
                f"input {name!r}: expected {self.dtype.name} with shape {expected}, got "
                f"{value.dtype} with shape {format_shape(shape)}",
                input_name=name,
            )
        if self.device is not None and value.device != torch.device(self.device):
            value = value.to(self.device)
        return value

    def group_key(self, value: Any) -> Hashable:
        return tuple(value.shape[1:]) if -1 in self.dims and value is not None else None

    def plan(self, batched: bool) -> CodecPlan:
        own = type(self)
        fields: Dict[str, Any] = {
            # a subclass keys its own way; else only a -1 dim keeps requests apart
            "groups_requests": own.group_key is not TorchTensor.group_key or -1 in self.dims,
            "dtype": self.torch_dtype,
            "dims": self.dims,
        }
        # a tensor left where Triton put it: decode() is from_dlpack and a check (a device to
        # move it to, or a subclass's own steps, take the general path)
        if not (
            self.optional
            or self.device is not None
            or own.decode is not TorchTensor.decode
            or own.rows is not TorchTensor.rows
        ):
            fields.update(read=TORCH, from_dlpack=_torch().from_dlpack, concat=_cat)
        # a CPU tensor of the declared dtype and shape, contiguous and without grad: what
        # encode() passes as it is and to_tensor() hands over as a DLPack capsule
        if own.encode is TorchTensor.encode and own.to_tensor is TorchTensor.to_tensor:
            fields.update(write=TORCH, tensor_type=_torch().Tensor, to_dlpack=_to_dlpack())
        return CodecPlan(**fields)

    @staticmethod
    def rows(value: Any) -> int:
        return int(value.shape[0])  # len() of a tensor goes through torch's Python layer

    def split(self, encoded: Any, counts: Sequence[int]) -> List[Any]:
        return list(encoded.split(list(counts)))  # one call, views (rows of a C-order tensor)

    def merge(self, values: Sequence[Any]) -> Any:
        if len(values) == 1:
            return values[0]
        return _cat(values)

    def merge_keeps_one(self) -> bool:
        return type(self).merge is TorchTensor.merge

    def missing(self, rows: Optional[int]) -> Any:
        if self.default is None:
            return None
        torch = _torch()
        value = torch.as_tensor(np.asarray(self.default), dtype=self.torch_dtype)
        if -1 not in self.dims:
            value = value.expand(self.dims)
        if rows is not None:
            value = value.expand(rows, *value.shape)
        return value.contiguous().to(self.device or "cpu")

    # -- outputs -----------------------------------------------------------------------------
    def encode(self, name: str, value: Any, batched: bool) -> Any:
        torch = _torch()
        if (
            type(value) is torch.Tensor
            and value.dtype is self._torch_dtype
            and shape_matches(value.shape[1:] if batched else value.shape, self.dims)
            and not value.requires_grad
            and value.is_contiguous()
        ):
            return value  # already what the declaration says (a model's usual output)
        if not isinstance(value, torch.Tensor):
            value = torch.as_tensor(np.asarray(value))
        if value.dtype != self.torch_dtype:
            if not torch.can_cast(value.dtype, self.torch_dtype):
                raise OutputError(
                    f"output {name!r}: expected {self.dtype.name}, got {value.dtype}, which "
                    f"does not convert without loss of kind; cast it with "
                    f".to(torch.{self._torch_dtype_name})"
                )
            value = value.to(self.torch_dtype)
        if value.requires_grad:
            value = value.detach()
        shape = value.shape
        if self.dims == (1,) and len(shape) == (1 if batched else 0):
            value = value.reshape(-1, 1) if batched else value.reshape(1)
            shape = tuple(value.shape)
        if not shape_matches(shape[1:] if batched else shape, self.dims):
            expected = format_shape(["rows", *self.dims] if batched else self.dims)
            raise OutputError(
                f"output {name!r}: expected shape {expected}, got {format_shape(shape)}"
            )
        return value.contiguous()

    def to_tensor(self, name: str, part: Any, pb: Any) -> Any:
        if part.is_cpu:
            # a capsule: 3.4 us against 11 us through the protocol in the real stub; a GPU
            # tensor keeps the protocol, which synchronises its stream
            return pb.Tensor.from_dlpack(name, _to_dlpack()(part))
        return pb.Tensor.from_dlpack(name, part)
