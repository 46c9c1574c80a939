"""A streaming pipeline: relays the parts of cf_target_words, upper-cased, as they come."""

import tritonpy as tp


class Relay(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"WORD": tp.Text()}

    def infer(self, TEXT):
        for part in self.call_stream("cf_target_words", {"TEXT": TEXT}):
            yield {"WORD": part["WORD"][0].decode().upper()}


TritonPythonModel = Relay
