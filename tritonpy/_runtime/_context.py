"""What a model instance knows about where it runs, and the helpers ``setup`` uses with it.

Private: :class:`tritonpy.Model` inherits :class:`ModelContext`; users call these as
``self.parameter(...)``, ``self.model_file(...)``, ``self.read_labels()`` and read
``self.torch_device`` in ``setup``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from ._config_parameters import read_parameter
from .errors import DeclarationError


class ModelContext:
    """The attributes ``initialize`` sets before ``setup``, and helpers that read them."""

    model_config: Dict[str, Any]
    model_name: str
    model_version: int
    model_dir: Path
    version_dir: Path
    instance_name: str
    instance_kind: str
    device_id: int
    batched: bool
    logger: Any

    def parameter(
        self,
        key: str,
        default: Any = None,
        cast: Callable[[str], Any] = str,
        *,
        choices: Optional[Sequence[Any]] = None,
    ) -> Any:
        """The value of ``parameters { key: KEY value { string_value: ... } }`` in the model
        configuration, converted by ``cast``, or ``default`` when the key is absent. A value
        ``cast`` refuses (``ValueError``) or one outside ``choices`` fails the model's load with
        a :class:`DeclarationError` naming the model and the key. Read parameters in ``setup``,
        or declare them once with :func:`tritonpy.config_parameter`.

        Example, with ``parameters { key: "top_k" value { string_value: "5" } }``::

            self.top_k = self.parameter("top_k", 1, cast=tp.parameters.positive_int)  # 5
            self.color = self.parameter("color", "RGB", cast=str.upper, choices=("RGB", "BGR"))
        """
        value, _ = read_parameter(self.model_config, self.model_name, key, default, cast, choices)
        return value

    def model_file(self, name: str, *, in_version: bool = False, hint: str = "") -> Path:
        """The path of a file the model needs (labels, weights, a vocabulary): ``name`` beside
        ``config.pbtxt``, or in the version directory with ``in_version=True``. A missing file
        fails the model's load with a :class:`DeclarationError` naming the model, the path
        and, with ``hint``, how to provide it.

        Example::

            weights = self.model_file("model.pt", in_version=True,
                                      hint="train it with 'python train_digits.py'")
        """
        path = (self.version_dir if in_version else self.model_dir) / name
        if not path.is_file():
            where = "in the version directory" if in_version else "beside config.pbtxt"
            raise DeclarationError(
                f"{self.model_name}: {path} not found; the model needs {name} {where}"
                + (f": {hint}" if hint else "")
            )
        return path

    def read_labels(self, name: str = "labels.txt") -> List[str]:
        """Class names from a text file beside ``config.pbtxt``, one per line in class-id order
        (a blank line is refused: it would shift the ids of the lines after it). A missing,
        empty or malformed file fails the model's load with a :class:`DeclarationError`.

        Example::

            self.labels = self.read_labels()          # labels.txt: "dog\\ncat\\nbird\\n"
        """
        path = self.model_file(name, hint="one class name per line, in class-id order")
        labels = path.read_text(encoding="utf-8").splitlines()
        if not labels:
            raise DeclarationError(
                f"{self.model_name}: {path} is empty; write one class name per line, in "
                f"class-id order"
            )
        for number, label in enumerate(labels, start=1):
            if not label.strip():
                raise DeclarationError(
                    f"{self.model_name}: {path} line {number} is blank; every line must be one "
                    f"class name (a blank line shifts the class ids of the lines after it)"
                )
        return labels

    @property
    def torch_device(self) -> str:
        """The device this instance was placed on, as torch names it: ``"cuda:N"`` for a GPU
        instance (``instance_group { kind: KIND_GPU }``), ``"cpu"`` otherwise.

        Example::

            self.net = build_net().to(self.torch_device).eval()
        """
        return f"cuda:{self.device_id}" if self.instance_kind == "GPU" else "cpu"
