"""The careful route of bls_router: word lists, negations ("not good") and an average over
sentences, so that one sentence does not decide a long text."""

import re
from typing import Any, Dict, List

import numpy as np

import tritonpy as tp

POSITIVE = {"good", "great", "excellent", "love", "like", "nice", "fast", "happy", "best"}
NEGATIVE = {"bad", "poor", "terrible", "hate", "slow", "broken", "sad", "worst", "awful"}
NEGATIONS = {"not", "no", "never", "hardly", "isn't", "wasn't", "don't", "doesn't", "didn't"}
_SENTENCE = re.compile(r"[^.!?]+")
_WORD = re.compile(r"[a-z']+")


def sentence_score(sentence: str) -> float:
    score, flip = 0, 1
    for word in _WORD.findall(sentence.lower()):
        if word in NEGATIONS:
            flip = -1  # flips the next sentiment word of the sentence
            continue
        value = (word in POSITIVE) - (word in NEGATIVE)
        if value:
            score += flip * value
            flip = 1
    return float(np.sign(score))


class LongSentiment(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"LABEL": tp.Text(), "SCORE": tp.Tensor("FP32", [1])}
    max_batch_size = 32

    def infer(self, TEXT: List[str]) -> Dict[str, Any]:
        scores: List[float] = []
        for text in TEXT:
            sentences = [s for s in _SENTENCE.findall(text) if s.strip()]
            scores.append(float(np.mean([sentence_score(s) for s in sentences or [""]])))
        labels = ["positive" if s > 0 else "negative" if s < 0 else "neutral" for s in scores]
        return {"LABEL": labels, "SCORE": np.array(scores, np.float32)}


TritonPythonModel = LongSentiment
