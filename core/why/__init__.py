""""Why this answer": attributions (integrated gradients, gradient x input, attention rollout) and the logit
lens, for every predicting model. Like the ladder, it may use other chapters' public modules.
"""

__all__ = [
    "why", "encoders", "attribution", "logit_lens",
]  # the public modules; the others are this package's internals
