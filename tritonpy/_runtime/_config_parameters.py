"""Config parameters a model declares, resolved from ``config.pbtxt`` at ``initialize``.

Work in progress of issue 30 (item 5): ``Model.initialize`` calls
:func:`resolve_config_parameters` before ``setup()``; declared parameters land here.
"""

from __future__ import annotations

from typing import Any


def resolve_config_parameters(model: Any) -> None:
    """Resolve and validate the parameters ``model``'s class declares, from
    ``model.model_config``; a model that declares none is left as it is."""
    del model  # no declarations are read yet: the declaration form lands with issue 30 item 5
