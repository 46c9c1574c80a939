"""A PodDisruptionBudget and a HorizontalPodAutoscaler for the Deployment.

The autoscaler follows Triton's own chart (server@r26.07:deploy/k8s-onprem values.yaml and
templates/hpa.yaml): a ``Pods`` metric ``avg_time_queue_us`` that the prometheus adapter
derives from Triton's ``nv_inference_queue_duration_us`` over ``nv_inference_request_success``
(:data:`ADAPTER_RULE`), target an average of 50 µs per pod; CPU utilisation is a second
metric, which keeps scaling up for CPU-bound Python models where no adapter serves the first.

Example::

    autoscaler(DeploySettings(name="digits", image="digits:24.10", release="24.10"))
"""

from __future__ import annotations

from typing import Any, Dict

from ._pod import DeploySettings

#: the prometheus-adapter rule that serves avg_time_queue_us (the chart's values.yaml)
ADAPTER_RULE = """\
- seriesQuery: 'nv_inference_queue_duration_us{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: "namespace"}
      pod: {resource: "pod"}
  name:
    matches: "nv_inference_queue_duration_us"
    as: "avg_time_queue_us"
  metricsQuery: 'avg(delta(nv_inference_queue_duration_us{<<.LabelMatchers>>}[30s])/\
(1+delta(nv_inference_request_success{<<.LabelMatchers>>}[30s]))) by (<<.GroupBy>>)'
"""
CPU_UTILIZATION = 80


def max_replicas(settings: DeploySettings) -> int:
    """The autoscaler's ceiling: given, else twice the replicas (at least 3, the chart's)."""
    return settings.max_replicas or max(3, 2 * settings.replicas)


def disruption_budget(settings: DeploySettings) -> Dict[str, Any]:
    """At most one pod down at a time for a voluntary disruption (a node drained)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": settings.name, "labels": settings.labels},
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": settings.name}},
        },
    }


def autoscaler(settings: DeploySettings) -> Dict[str, Any]:
    """An ``autoscaling/v2`` autoscaler on Triton's queue time per request, then CPU."""
    queue = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "avg_time_queue_us"},
            "target": {"type": "AverageValue", "averageValue": str(settings.queue_time_us)},
        },
    }
    cpu = {
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": CPU_UTILIZATION},
        },
    }
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": settings.name, "labels": settings.labels},
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": settings.name,
            },
            "minReplicas": settings.replicas,
            "maxReplicas": max_replicas(settings),
            "metrics": [queue, cpu],
        },
    }
