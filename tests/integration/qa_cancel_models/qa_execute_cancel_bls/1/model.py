"""Hands each request to qa_execute_cancel through BLS and answers what it answered; logs
whether the callee saw a cancellation and whether its own request was cancelled meanwhile
(24.10: a client's cancel reaches the caller's request, not the callee's)."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            delay = pb_utils.get_input_tensor_by_name(request, "EXECUTE_DELAY")
            call = pb_utils.InferenceRequest(
                model_name="qa_execute_cancel", inputs=[delay], requested_output_names=["POLLS"]
            )
            answer = call.exec()
            callee = "cancelled" if answer.has_error() else "ran to its end"
            pb_utils.Logger.log_info(
                f"[qa_execute_cancel_bls] callee {callee}; "
                f"caller cancelled: {request.is_cancelled()}"
            )
            responses.append(answer)
        return responses
