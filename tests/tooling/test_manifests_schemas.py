"""Every manifest ``tritonpy export`` writes passes Kubernetes' own schemas
(``kubernetes-validate``, strict: an unknown field fails) for the newest release it ships,
1.37, and the oldest, 1.25 (the oldest Kubernetes the manifests claim: policy/v1 PDBs and
autoscaling/v2 HPAs are GA there), and the InferenceService passes KServe's v1beta1 CRD schema
(tests/data/kserve/PROVENANCE.md).

What the KServe check covers: the CRD's openAPIV3Schema validated with jsonschema (types,
enums, required fields, patterns), plus what the API server's structural-schema pruning would
silently drop: a field a schema object does not declare, where the object neither allows
additional properties nor sets ``x-kubernetes-preserve-unknown-fields``, is an error here.
``metadata`` is the API server's own (ObjectMeta), not the CRD's: kubernetes-validate checks
it in the Deployment; the CRD's extensions (``x-kubernetes-int-or-string``, ...) are read only
where jsonschema understands their ``anyOf``."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any, Dict, Iterator, List

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.tooling.test_export import make_repo
from tritonpy.export import export_repository
from tritonpy.export._deploy import kserve_storage_uri, storage_settings
from tritonpy.export._manifests import (
    DeploySettings,
    deployment_manifests,
    kserve_manifest,
    secret_template,
)

KUBERNETES = ("1.37.0", "1.25.0")
SCHEMA = (
    Path(__file__).parent.parent / "data" / "kserve" / "inferenceservice-v1beta1.schema.json.gz"
)


def _closed(schema: Any) -> Any:
    """The schema with every declared object closed to undeclared fields, as structural
    pruning treats them (kept open where the CRD preserves unknown fields)."""
    if isinstance(schema, dict):
        closed = {key: _closed(value) for key, value in schema.items()}
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


@pytest.fixture(scope="module")
def kserve_validator() -> jsonschema.protocols.Validator:
    schema = _closed(json.loads(gzip.decompress(SCHEMA.read_bytes())))
    schema["properties"]["metadata"] = {"type": "object"}  # ObjectMeta: the API server's
    return jsonschema.Draft7Validator(schema)


def kserve_errors(validator: Any, document: Dict[str, Any]) -> List[str]:
    return [
        f"{'/'.join(str(p) for p in error.absolute_path)}: {error.message}"
        for error in validator.iter_errors(document)
    ]


def settings_variants() -> Iterator[DeploySettings]:
    base = DeploySettings(name="digits", image="registry.example/digits:24.10", release="24.10")
    yield base
    yield storage_settings(base, "s3://127.0.0.1:9000/models/digits")
    yield storage_settings(base, "s3://models/digits")
    yield dataclasses.replace(base, replicas=3, max_replicas=9)
    yield dataclasses.replace(
        base, cpu="500m", memory="1Gi", cpu_limit="2", memory_limit="3Gi", shm_bytes=512 << 20
    )


def all_documents(settings: DeploySettings) -> List[Dict[str, Any]]:
    documents = deployment_manifests(settings)
    secret = secret_template(settings)
    return documents + ([secret] if secret else [])


@pytest.mark.parametrize("version", KUBERNETES)
def test_every_manifest_passes_the_kubernetes_schemas(version: str) -> None:
    kinds = set()
    for settings in settings_variants():
        for document in all_documents(settings):
            kubernetes_validate.validate(document, version, strict=True)
            kinds.add(document["kind"])
    assert kinds == {
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "Secret",
    }


def test_an_exported_directory_passes_both_schemas(tmp_path: Path, kserve_validator: Any) -> None:
    export_repository(
        make_repo(tmp_path / "repo"),
        tmp_path / "out",
        triton_version="24.10",
        replicas=3,
        cpu_limit="4",
        memory_limit="8Gi",
    )
    k8s = tmp_path / "out" / "k8s"
    for document in yaml.safe_load_all((k8s / "deployment.yaml").read_text()):
        for version in KUBERNETES:
            kubernetes_validate.validate(document, version, strict=True)
    (isvc,) = yaml.safe_load_all((k8s / "inferenceservice.yaml").read_text())
    assert kserve_errors(kserve_validator, isvc) == []


def test_every_inference_service_passes_the_kserve_schema(kserve_validator: Any) -> None:
    for settings in settings_variants():
        document = kserve_manifest(settings, kserve_storage_uri(settings))
        assert kserve_errors(kserve_validator, document) == [], settings


def test_a_misspelled_field_fails_both_checks(kserve_validator: Any) -> None:
    settings = DeploySettings(name="digits", image="digits:24.10", release="24.10")
    deployment = copy.deepcopy(deployment_manifests(settings)[0])
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["securityContext"]["readOnlyRootFileSystem"] = True  # "FileSystem": wrong
    with pytest.raises(kubernetes_validate.ValidationError, match="readOnlyRootFileSystem"):
        kubernetes_validate.validate(deployment, KUBERNETES[0], strict=True)
    budget = copy.deepcopy(deployment_manifests(settings)[2])
    budget["spec"]["maxUnavailable"] = [1]  # a list where an int or a string belongs
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(budget, KUBERNETES[0], strict=True)

    isvc = kserve_manifest(settings, "s3://models/digits")
    isvc["spec"]["predictor"]["model"]["storageURI"] = isvc["spec"]["predictor"]["model"].pop(
        "storageUri"
    )
    assert any("storageURI" in line for line in kserve_errors(kserve_validator, isvc))
    isvc = kserve_manifest(settings, "s3://models/digits")
    isvc["spec"]["predictor"]["minReplicas"] = "one"  # an integer field
    assert any("minReplicas" in line for line in kserve_errors(kserve_validator, isvc))
