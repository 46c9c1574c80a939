"""Streaming BLS target (tritonpy generator): one response per word; the word 'bad' ends the
stream with an error."""

import tritonpy as tp


class Words(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"WORD": tp.Text()}

    def infer(self, TEXT):
        for word in TEXT.split():
            if word == "bad":
                raise tp.InputError("input 'TEXT': expected no 'bad' word, got one")
            yield {"WORD": word}


TritonPythonModel = Words
