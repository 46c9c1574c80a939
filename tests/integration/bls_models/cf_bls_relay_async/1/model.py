"""The relay as an async generator: call_stream_async on Triton's event loop."""

import tritonpy as tp


class RelayAsync(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"WORD": tp.Text()}

    async def infer(self, TEXT):
        async for part in self.call_stream_async("cf_target_words", {"TEXT": TEXT}):
            yield {"WORD": part["WORD"][0].decode()[::-1]}


TritonPythonModel = RelayAsync
