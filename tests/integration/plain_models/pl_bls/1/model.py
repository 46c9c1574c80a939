"""Calls TARGET through BLS (pl_decoupled: decoupled exec; pl_instance: plain exec; any other
name: a model that does not exist), with exec or (ASYNC) async_exec from an async execute,
and reports the values and the error (with its code). exec(decoupled=...) is STREAM when
given, else whether the target is pl_decoupled."""

import numpy as np
import triton_python_backend_utils as pb_utils


def tensor(name, value):
    return pb_utils.Tensor(name, np.array([value], np.int32))


class TritonPythonModel:
    async def execute(self, requests):
        return [await self.answer(request) for request in requests]

    async def answer(self, request):
        target = pb_utils.get_input_tensor_by_name(request, "TARGET").as_numpy()[0].decode()
        count = int(pb_utils.get_input_tensor_by_name(request, "COUNT").as_numpy()[0])
        use_async = bool(pb_utils.get_input_tensor_by_name(request, "ASYNC").as_numpy()[0])
        stream = pb_utils.get_input_tensor_by_name(request, "STREAM")
        # STREAM (optional) asks exec for a decoupled call whatever the target is
        decoupled = bool(stream.as_numpy()[0]) if stream is not None else target == "pl_decoupled"
        if target == "pl_decoupled":
            inputs = [tensor("COUNT", count), tensor("MODE", 1)]
            outputs = ["OUT"]
        else:
            x = pb_utils.Tensor("X", np.full(count, -1.0 if count > 2 else 1.0, np.float32))
            inputs, outputs = [x], ["NAME"]
        bls = pb_utils.InferenceRequest(
            model_name=target, inputs=inputs, requested_output_names=outputs
        )
        values, error = [], b""
        try:
            if use_async:
                result = await bls.async_exec(decoupled=decoupled)
            else:
                result = bls.exec(decoupled=decoupled)
            for item in result if decoupled else [result]:
                if item.has_error():
                    code = int(item.error().code())
                    error = f"code {code}: {item.error().message()}".encode()
                    break
                for t in item.output_tensors():
                    if t.name() == "OUT":
                        values.append(int(t.as_numpy()[0]))
                    else:
                        values.append(len(t.as_numpy()))
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}".encode()
        return pb_utils.InferenceResponse(
            [
                pb_utils.Tensor("VALUES", np.array(values, np.int32)),
                pb_utils.Tensor("ERROR", np.array([error], dtype=np.object_)),
            ]
        )
