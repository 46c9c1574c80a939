"""pb_utils model configuration: ``ModelConfig`` (for ``auto_complete_config``) and the config
look-up helpers."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import json
from typing import Any, Dict, Optional, Sequence


def get_input_config_by_name(model_config: Dict[str, Any], name: str) -> Optional[Dict[str, Any]]:
    for entry in model_config.get("input", []):
        if entry["name"] == name:
            return entry  # type: ignore[no-any-return]
    return None


def get_output_config_by_name(model_config: Dict[str, Any], name: str) -> Optional[Dict[str, Any]]:
    for entry in model_config.get("output", []):
        if entry["name"] == name:
            return entry  # type: ignore[no-any-return]
    return None


def using_decoupled_model_transaction_policy(model_config: Dict[str, Any]) -> bool:
    if "model_transaction_policy" in model_config:
        return bool(model_config["model_transaction_policy"]["decoupled"])
    return False


class ModelConfig:
    """The model configuration handed to ``auto_complete_config``.

    Only max_batch_size, inputs, outputs, dynamic batching and the transaction policy can be
    changed; the error messages are those of the real module."""

    def __init__(self, model_config: str) -> None:
        self._model_config: Dict[str, Any] = json.loads(model_config)

    def as_dict(self) -> Dict[str, Any]:
        return self._model_config

    def _name(self) -> str:
        return str(self._model_config["name"])

    def set_max_batch_size(self, max_batch_size: int) -> None:
        current = self._model_config["max_batch_size"]
        if current > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {current}, but in auto-complete-config "
                f"function for model '{self._name()}' specified max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self) -> None:
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            if scheduler in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{scheduler}', but "
                    f"auto-complete-config function for model '{self._name()}' tries to set "
                    f"scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def _check_io(self, io: Dict[str, Any], what: str, allowed: Sequence[str]) -> None:
        for prop in io:
            if prop not in allowed:
                if len(allowed) == 4:
                    listed = "'name', 'data_type', 'dims' and 'optional'"
                else:
                    listed = "'name', 'data_type' and 'dims'"
                raise ValueError(
                    f"{what} '{io['name']}' in auto-complete-config function for model "
                    f"'{self._name()}' contains property other than {listed}."
                )
        if "name" not in io:
            raise ValueError(
                f"{what} in auto-complete-config function for model '{self._name()}' is "
                f"missing 'name' property."
            )
        for prop in ("data_type", "dims"):
            if prop not in io:
                raise ValueError(
                    f"{what} '{io['name']}' in auto-complete-config function for model "
                    f"'{self._name()}' is missing '{prop}' property."
                )

    def _merge_io(self, io: Dict[str, Any], what: str, with_optional: bool) -> None:
        section = self._model_config[what]
        for current in section:
            if current["name"] != io["name"]:
                continue
            if current["data_type"] != "TYPE_INVALID" and current["data_type"] != io["data_type"]:
                raise ValueError(
                    f"unable to load model '{self._name()}', configuration expects datatype "
                    f"{current['data_type']} for {what} '{io['name']}', model provides "
                    f"{io['data_type']}"
                )
            if current["dims"] and current["dims"] != io["dims"]:
                raise ValueError(
                    f"model '{self._name()}', tensor '{io['name']}': the model expects dims "
                    f"{io['dims']!s} but the model configuration specifies dims "
                    f"{current['dims']!s}"
                )
            if (
                with_optional
                and "optional" in current
                and "optional" in io
                and current["optional"] != io["optional"]
            ):
                raise ValueError(
                    f"model '{self._name()}', tensor '{io['name']}': the model expects optional "
                    f"{io['optional']!s} but the model configuration specifies optional "
                    f"{current['optional']!s}"
                )
            current["data_type"] = io["data_type"]
            current["dims"] = io["dims"]
            if with_optional and "optional" in io:
                current["optional"] = io["optional"]
            return
        section.append(io)

    def add_input(self, input: Dict[str, Any]) -> None:
        self._check_io(input, "input", ("name", "data_type", "dims", "optional"))
        self._merge_io(input, "input", with_optional=True)

    def add_output(self, output: Dict[str, Any]) -> None:
        self._check_io(output, "output", ("name", "data_type", "dims"))
        self._merge_io(output, "output", with_optional=False)

    def set_model_transaction_policy(self, transaction_policy_dict: Dict[str, Any]) -> None:
        for prop in transaction_policy_dict:
            if prop != "decoupled":
                raise ValueError(
                    f"model transaction property in auto-complete-config function for model "
                    f"'{self._name()}' contains property other than 'decoupled'."
                )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            new = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != new:
                raise ValueError(
                    f"trying to change decoupled property in auto-complete-config for model "
                    f"'{self._name()}', which is already set to '{policy['decoupled']!s}'."
                )
            policy["decoupled"] = new
