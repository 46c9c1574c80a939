"""The public API, pinned: a public name that appears or disappears unannounced fails here.

The public modules are the ones docs/architecture.md lists; every other module has a private
name (a leading underscore somewhere in its dotted path) and declares no ``__all__``. Changing
the public surface is a deliberate act: update ``PINNED`` below and say it in CHANGELOG.md.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Dict, List

import pytest

import tritonpy

PACKAGE = Path(tritonpy.__file__).resolve().parent

PINNED: Dict[str, List[str]] = {
    "tritonpy": [
        "Bytes",
        "CallError",
        "Codec",
        "CodecPlan",
        "Counter",
        "DTYPES",
        "DType",
        "DeclarationError",
        "ElementCodec",
        "Gauge",
        "Histogram",
        "Image",
        "InputError",
        "JSON",
        "MISSING",
        "MetricError",
        "MissingDependencyError",
        "Model",
        "OutputError",
        "Padded",
        "Response",
        "Sequence",
        "SequenceInfo",
        "Tensor",
        "Text",
        "ToolError",
        "TorchTensor",
        "TritonPyError",
        "TritonRequestError",
        "__version__",
        "config_parameter",
        "group_indices",
        "lookup_dtype",
        "merge_rows",
        "pad_rows",
        "parameters",
        "split_rows",
        "trim_padded",
        "vision",
    ],
    "tritonpy.vision": ["Normalize", "to_chw_batch"],
    "tritonpy.parameters": [
        "boolean",
        "floats",
        "fraction",
        "non_negative_int",
        "positive_int",
        "size",
    ],
    "tritonpy.testing": [
        "CancelAt",
        "ClientCancelledError",
        "EnsembleHarness",
        "ExecuteContractError",
        "HarnessError",
        "ManualClock",
        "ModelBugError",
        "ModelHarness",
        "ModelLoadError",
        "ModelProcessDiedError",
        "RawTarget",
        "Readiness",
        "ReleaseSurfaceWarning",
        "RepositoryHarness",
        "SequenceDriver",
        "fake_pb_utils",
        "fake_pb_utils_installed",
        "install_fake_pb_utils",
        "parse_config_pbtxt",
        "uninstall_fake_pb_utils",
    ],
    "tritonpy.testing.fake_pb_utils": [
        "InferenceRequest",
        "InferenceResponse",
        "LogLevel",
        "Logger",
        "MetricFamily",
        "ModelConfig",
        "PreferredMemory",
        "TRITONSERVER_MEMORY_CPU",
        "TRITONSERVER_MEMORY_GPU",
        "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
        "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
        "TRITONSERVER_REQUEST_RELEASE_ALL",
        "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE",
        "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
        "TRITON_STRING_TO_NUMPY",
        "Tensor",
        "TritonError",
        "TritonModelException",
        "deserialize_bytes_tensor",
        "get_input_config_by_name",
        "get_input_tensor_by_name",
        "get_model_dir",
        "get_output_config_by_name",
        "get_output_tensor_by_name",
        "is_model_ready",
        "load_model",
        "numpy_to_triton_type",
        "serialize_byte_tensor",
        "triton_string_to_numpy",
        "triton_to_numpy_type",
        "unload_model",
        "using_decoupled_model_transaction_policy",
    ],
    "tritonpy.testing.plugin": [],
    "tritonpy.config": [
        "CONFIG_MODULES",
        "ConfigDiff",
        "ConfigError",
        "LoadedModel",
        "apply_declarations",
        "autocomplete_config",
        "config_from_dict",
        "config_to_dict",
        "format_config",
        "load_config",
        "load_model_class",
        "new_config",
        "parse_config",
        "set_parameter",
        "sync_config",
        "write_config",
    ],
    "tritonpy.check": [
        "CheckError",
        "ERROR",
        "Finding",
        "INFO",
        "RULES",
        "Report",
        "WARNING",
        "check_repository",
    ],
    "tritonpy.envs": [
        "ArchiveError",
        "Builder",
        "CommandError",
        "EnvError",
        "EnvSpec",
        "PackOptions",
        "PackResult",
        "Reporter",
        "SpecError",
        "StubMode",
        "VerifyReport",
        "find_default_spec",
        "pack_env",
        "read_spec",
        "verify_archive",
    ],
    "tritonpy.stubs": [
        "FoundStub",
        "StubCache",
        "StubError",
        "StubResult",
        "find_stub",
        "provision_stub",
    ],
    "tritonpy.client": [
        "Endpoint",
        "InferClient",
        "ModelKind",
        "ModelSignature",
        "ModelStatus",
        "OutputTensor",
        "RequestOptions",
        "ResponseStream",
        "SequenceControl",
        "StreamResponse",
        "StreamResult",
        "TensorSpec",
        "WireProtocol",
        "format_output",
        "health_ready",
        "infer_once",
        "model_kind",
        "open_stream",
        "parse_endpoint",
        "parse_input_value",
        "repository_index",
        "request_arrays",
        "stream_infer",
    ],
    "tritonpy.server": [
        "InferClient",
        "LoadFailure",
        "ModelLoadError",
        "ModelStatus",
        "PreflightError",
        "RepositoryWatcher",
        "ServerError",
        "ServerOptions",
        "ServerTimeoutError",
        "TritonServer",
        "WatchEvent",
        "WheelInstallation",
        "find_wheel_installation",
        "preflight",
        "serve_until_exit",
        "stream_infer",
    ],
    "tritonpy.perf": [
        "PerfOptions",
        "PerfPoint",
        "PerfReport",
        "TuneOptions",
        "run_perf",
        "tune",
    ],
    "tritonpy.probe": [
        "ProbeOptions",
        "ProbeReport",
        "ProbeRequestError",
        "ProbeResult",
        "ProbeUsageError",
        "probe",
    ],
    "tritonpy.storage": [
        "DownloadedRepository",
        "PublishError",
        "PublishResult",
        "RepositoryURL",
        "S3_VARIABLES",
        "StorageError",
        "TemporaryDownload",
        "describe_empty_prefix",
        "download_repository",
        "is_remote",
        "list_objects",
        "parse_repository_url",
        "parse_s3_url",
        "publish",
        "s3_client",
    ],
    "tritonpy.fleet": [
        "FleetAnswer",
        "FleetClient",
        "FleetError",
        "FleetStats",
        "ReplicaRollout",
        "ReplicaStats",
        "RolloutError",
        "RolloutReport",
        "replica_fault",
        "roll_out",
    ],
    "tritonpy.export": [
        "ExportError",
        "ExportOptions",
        "ExportResult",
        "ModelExport",
        "OUTPUTS",
        "export_repository",
    ],
    "tritonpy.templates": [
        "ClassifierEnsemble",
        "DigitsEnsemble",
        "ENSEMBLE_TEMPLATE",
        "TEMPLATES_ENV",
        "TemplateError",
        "TemplateExistsError",
        "TemplateNotFoundError",
        "describe_template",
        "digits_holdout",
        "list_templates",
        "render_classifier_ensemble",
        "render_digits_ensemble",
        "render_template",
        "template_dir",
        "templates_root",
    ],
    "tritonpy.cli": ["build_parser", "main"],
    "tritonpy.demo": [
        "DemoResult",
        "Prediction",
        "add_arguments",
        "add_parser",
        "main",
        "run",
        "run_demo",
    ],
}


@pytest.mark.parametrize("module_name", sorted(PINNED))
def test_public_module_exports_exactly_the_pinned_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = sorted(getattr(module, "__all__", []))
    appeared = sorted(set(exported) - set(PINNED[module_name]))
    disappeared = sorted(set(PINNED[module_name]) - set(exported))
    assert not appeared and not disappeared, (
        f"{module_name}.__all__ changed: new {appeared}, gone {disappeared}; if deliberate, "
        f"update PINNED in {Path(__file__).name} and CHANGELOG.md"
    )


@pytest.mark.parametrize("module_name", sorted(PINNED))
def test_every_exported_name_exists(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in getattr(module, "__all__", []) if not hasattr(module, name)]
    assert not missing, f"{module_name}.__all__ lists names it does not define: {missing}"


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> List[str]:
    return sorted(_dotted(path) for path in PACKAGE.rglob("*.py") if path.name != "__main__.py")


def _is_private(module_name: str) -> bool:
    return any(part.startswith("_") for part in module_name.split(".")[1:])


def test_every_other_module_is_private() -> None:
    public_looking = [name for name in _modules() if name not in PINNED and not _is_private(name)]
    assert not public_looking, (
        f"modules with public names that are not part of the public API: {public_looking}; "
        "rename them with a leading underscore, or make them public in PINNED and docs"
    )


def _declares_all(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.Assign)
        and any(getattr(target, "id", None) == "__all__" for target in node.targets)
        for node in tree.body
    )


def test_only_public_modules_declare_all() -> None:
    declaring = [
        _dotted(path)
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and _is_private(_dotted(path)) and _declares_all(path)
    ]
    assert not declaring, (
        f"private modules declaring __all__: {declaring}; only modules users import declare it"
    )


def test_the_snapshot_guards_something() -> None:
    # the checks above must see a real package: the top level exports the model API
    assert {"Model", "Tensor", "InputError"} <= set(PINNED["tritonpy"])
    assert len(_modules()) > 50
