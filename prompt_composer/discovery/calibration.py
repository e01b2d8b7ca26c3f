"""Whether a search matched anything: a calibrated probability from one text's evidence (:data:`MISS_MODELS`); below
:data:`MISS_CONFIDENCE` a search's result is an explained miss (:class:`~.search.ToolSearch`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from .results import SearchStrategy

# Miss calibration: P(a tool of the mode serves the request) = sigmoid(bias + Σ weight × evidence), a logistic
# regression fitted by `python3 benchmarks/bench_search.py --calibrate` on no-match requests and real queries, with
# the line set where it costs real queries little recall; the bias is shifted so that the line sits at
# MISS_CONFIDENCE. Evidence, from the best-matching text of the request (the whole request or one of its needs):
# - ``cover``: the idf-weighted share of the query's words found in the top lexical hit's name, queries, brief or
#   hint (not its full text: one common word deep in a manual is no evidence); ``cover_all``: over every field;
# - ``cos_rel``: how far the top cosine stands above the cosine that small talk reaches in this mode
#   (:data:`~.semantic._SMALL_TALK`), as a share of the way to 1; relative, so a model whose cosines run high (e5)
#   reads the same line as one whose cosines run low (USE).
MISS_MODELS: Mapping[str, tuple[float, Mapping[str, float]]] = {
    "keyword": (-0.397, {"cover": 3.21, "cover_all": 2.65}),
    "semantic": (-0.455, {"cos_rel": 6.79}),
    "hybrid": (-0.966, {"cover": 2.37, "cover_all": 2.14, "cos_rel": 5.62}),
}
MISS_CONFIDENCE = 0.5  # below this, the result is an explained miss


def match_probability(evidence: Mapping[str, float], strategy: SearchStrategy) -> float:
    """P(a tool of the mode serves the request), from one text's evidence (see :data:`MISS_MODELS`)."""
    bias, weights = MISS_MODELS[strategy]
    z = bias + sum(w * evidence.get(k, 0.0) for k, w in weights.items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
