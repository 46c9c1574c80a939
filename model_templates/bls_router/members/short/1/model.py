"""The fast route of bls_router: counts positive and negative words, nothing more."""

import re
from typing import Any, Dict, List

import numpy as np

import tritonpy as tp

POSITIVE = {"good", "great", "excellent", "love", "like", "nice", "fast", "happy", "best"}
NEGATIVE = {"bad", "poor", "terrible", "hate", "slow", "broken", "sad", "worst", "awful"}
_WORD = re.compile(r"[a-z']+")


def label(score: float) -> str:
    return "positive" if score > 0 else "negative" if score < 0 else "neutral"


class ShortSentiment(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"LABEL": tp.Text(), "SCORE": tp.Tensor("FP32", [1])}
    max_batch_size = 32

    def infer(self, TEXT: List[str]) -> Dict[str, Any]:
        scores: List[float] = []
        for text in TEXT:
            words = _WORD.findall(text.lower())
            hits = sum(w in POSITIVE for w in words) - sum(w in NEGATIVE for w in words)
            scores.append(hits / max(len(words), 1))
        return {
            "LABEL": [label(s) for s in scores],
            "SCORE": np.clip(np.array(scores, np.float32), -1, 1),
        }


TritonPythonModel = ShortSentiment
