"""The rest of the pb_utils surface a model touches: OP names what to try, RESULT lists what
each step returned or raised."""

import numpy as np
import triton_python_backend_utils as pb_utils


def attempt(step):
    try:
        return repr(step())
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


class TritonPythonModel:
    def initialize(self, args):
        self.metric_errors = []

    def execute(self, requests):
        responses = []
        for request in requests:
            op = pb_utils.get_input_tensor_by_name(request, "OP").as_numpy()[0].decode()
            result = getattr(self, "op_" + op)(request)
            out = np.array([str(r).encode() for r in result], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("RESULT", out)]))
        return responses

    def op_request(self, request):
        return [
            request.flags(),
            request.correlation_id(),
            request.request_id(),
            request.is_cancelled(),
            request.get_response_sender().is_cancelled(),
            request.requested_output_names(),
            request.parameters(),
            request.timeout(),
        ]

    def op_logger(self, request):
        logger = pb_utils.Logger
        logger.log_info("surface info")
        logger.log_warn("surface warn")
        logger.log_error("surface error")
        logger.log_verbose("surface verbose")
        logger.log("surface default")
        return [
            attempt(
                lambda: (
                    logger.log("surface level", logger.INFO) if hasattr(logger, "INFO") else None
                )
            )
        ]

    def op_models(self, request):
        return [
            attempt(lambda: pb_utils.is_model_ready("pl_instance")),
            attempt(lambda: pb_utils.is_model_ready("pl_instance", "1")),
            attempt(lambda: pb_utils.is_model_ready("pl_instance", "7")),
            attempt(lambda: pb_utils.is_model_ready("nope")),
            attempt(lambda: pb_utils.unload_model("pl_instance")),
            attempt(lambda: pb_utils.is_model_ready("pl_instance")),
            attempt(lambda: pb_utils.load_model("pl_instance")),
            attempt(lambda: pb_utils.is_model_ready("pl_instance")),
            attempt(lambda: pb_utils.unload_model("nope")),
        ]

    # measured on 24.10: this refusal now raises in the model, now aborts tritonserver
    def op_load_missing(self, request):
        return [attempt(lambda: pb_utils.load_model("nope"))]

    def families(self):
        # made once and kept: tritonserver 24.10 aborted (boost lock_exception) when a model
        # made same-name families again in a later execute and dropped the first ones
        if not hasattr(self, "kept"):
            family = pb_utils.MetricFamily
            self.kept = (
                family("pl_surface_count", "a counter", family.COUNTER),
                family("pl_surface_gauge", "a gauge", family.GAUGE),
                family("pl_surface_hist", "a histogram", family.HISTOGRAM),
            )
        return self.kept

    def op_metrics(self, request):
        counter, gauge, hist = self.families()
        c = counter.Metric(labels={"model": "pl_surface", "which": "c"})
        g = gauge.Metric(labels={"which": "g"})
        h = hist.Metric(labels={"which": "h"}, buckets=[1.0, 5.0])
        # the family outlives this call, and so do its values: report the change only
        before = c.value()
        c.increment(2)
        g.set(7.5)
        h.observe(3.0)
        return [c.value() - before, g.value()]

    def op_metric_buckets(self, request):
        counter, _, hist = self.families()
        return [
            attempt(lambda: hist.Metric(labels={})),
            attempt(lambda: counter.Metric(labels={}, buckets=[1.0])),
        ]

    # The server refuses these. Measured on 24.10: its refusal now raises in the model, now
    # aborts the whole tritonserver (boost lock_exception), so they are not in the
    # conformance suite; the harness makes each one a model bug.
    def op_refused_increment_counter(self, request):
        return [self.families()[0].Metric(labels={"which": "c"}).increment(-1)]

    def op_refused_observe_gauge(self, request):
        return [self.families()[1].Metric(labels={"which": "g"}).observe(1)]

    def op_refused_value_histogram(self, request):
        return [self.families()[2].Metric(labels={"which": "h"}, buckets=[1.0]).value()]

    # measured on 24.10: these two refusals now raise in the model, now abort tritonserver
    def op_metric_names(self, request):
        family = pb_utils.MetricFamily
        self.families()
        return [
            attempt(lambda: family("pl_surface_count", "again", family.GAUGE)),
            attempt(lambda: family("bad name", "x", family.COUNTER)),
        ]

    def op_metric_deleted(self, request):
        family = pb_utils.MetricFamily
        return [attempt(lambda: family("pl_surface_tmp", "tmp", family.COUNTER).Metric().value())]
