"""The seed's worked examples (../shared/seed-examples.md) as data, for the tabs' presets and the tests.

Torch-free on purpose: the UI reads these while the app is built, before any model (and torch) is imported
(core/loading/lazy.py). The torch-backed core modules re-export the names they always had (``core.tasks.qa.SEED_ZH`` …).

- §3 (embeddings): SEED_Q, the 5 × 3 embedding matrix that a one-hot vector selects a row of.
- §9 (attention): thinking_machines(), q·k = 112 and 96 with d_k = 64.
- §12 vs §13.1 (GPT vs BERT): GPT_VS_BERT, one blank read from the left only or from both sides.
- §14.1 (sentence pairs): SEED_PAIR_ZH → [0.02, 0.98] (SEED_PAIR_PROBS), and its English twin SEED_PAIR_EN.
- §14.2 (single sentences): SEED_SINGLE_ZH, not a coherent sentence, and its English twin SEED_SINGLE_EN;
  DIANPING_REVIEW, a review for the Chinese sentiment checkpoint (ours, not the seed's).
- §14.3 (extractive QA): SEED_ZH, answered "37 摄氏度"; seed 001's two English questions on PRECIPITATION (SEED_EN).
- §14.4 (NER): the seed tags "爱因斯坦在柏林发表演讲" in IOBES (B-PER I-PER E-PER O S-LOC O O); SEED_WORD_TAGS is
  the same tagging written in BIO, which the NER tab converts back.
"""
from __future__ import annotations

import numpy as np

from core.loading.checkpoints import CHINESE_GPT2_ID

# §3: 5 words, 3 dimensions. The one-hot vector of word 4 picks row 4.
SEED_Q = np.array([[17, 24, 1], [23, 5, 7], [4, 6, 13], [10, 12, 19], [11, 18, 25]], dtype=float)


def thinking_machines(d_k: int = 64) -> dict[str, np.ndarray]:
    """The seed's worked example (§9) as concrete vectors: q₁·k₁ = 112 and q₁·k₂ = 96 exactly, with d_k = 64.

    The seed gives only the dot products, so the vectors are constructed to produce them: q₁ alternates 1, 2;
    k₂ is all ones (32·1 + 32·2 = 96); k₁ adds 1 at eight of q₁'s "2" positions (96 + 8·2 = 112). q₂ ("Machines")
    and the values are ours: small integers, so z₁ = 0.88·v₁ + 0.12·v₂ can be checked by eye.
    """
    q1 = np.tile([1.0, 2.0], d_k // 2)
    k2 = np.ones(d_k)
    k1 = k2.copy()
    k1[1:17:2] += 1.0  # eight positions where q₁ = 2
    q2 = np.tile([2.0, 1.0], d_k // 2)  # q₂·k₁ = 104, q₂·k₂ = 96
    rng = np.random.default_rng(9)
    v1, v2 = rng.integers(-3, 4, d_k).astype(float), rng.integers(-3, 4, d_k).astype(float)
    return {"Q": np.stack([q1, q2]), "K": np.stack([k1, k2]), "V": np.stack([v1, v2])}


# §12 vs §13.1: the seed's example and its English twin: (sentence, causal LM online, masked LM).
GPT_VS_BERT = {
    "zh": ("今天天气很__，我们不得不取消户外运动", CHINESE_GPT2_ID, "bert-base-chinese"),
    "en": ("The weather today is very ___, so we had to cancel the outdoor game.", "gpt2", "bert-base-uncased"),
}

# §14.1: "[CLS]我很喜欢你[SEP]我很中意你" → [0.02, 0.98], "similar". The numbers are the post's illustration,
# not the output of a named checkpoint; the preset shows what a real one gives.
SEED_PAIR_ZH = ("我很喜欢你", "我很中意你")
SEED_PAIR_EN = ("I like you very much.", "I am very fond of you.")
SEED_PAIR_PROBS = (0.02, 0.98)
# §14.2: a scrambled string judged "not a coherent sentence" (a CoLA-style acceptability task).
SEED_SINGLE_ZH = "海大球星饭茶吃"
SEED_SINGLE_EN = "Big sea ball star rice tea eat."
# A Dianping-style restaurant review for the Chinese sentiment checkpoint.
DIANPING_REVIEW = "菜很好吃，服务也很热情，下次还会再来。"

# §14.3 (Chinese) and seed 001 (English) examples, as (question, context) presets.
SEED_ZH = ("今天的最高温度是多少", "天气预报显示今天最高温度 37 摄氏度")
PRECIPITATION = (
    "Precipitation is any water that falls from the sky, such as rain, sleet, snow or hail. It forms when water "
    "vapour in the air condenses into tiny droplets that gather into clouds. Within a cloud, water droplets collide "
    "with ice crystals and with each other, and grow until they are too heavy to stay aloft. Precipitation then "
    "falls under gravity, reaching the ground as rain when the air below the cloud is warm, or as snow when it is "
    "cold."
)
SEED_EN = [("What causes precipitation to fall?", PRECIPITATION),
           ("Where do water droplets collide with ice crystals to form precipitation?", PRECIPITATION)]

# §14.4: the seed's words with its IOBES tagging written in BIO; converted, they give the seed's B-PER I-PER E-PER O
# S-LOC O O.
SEED_WORD_TAGS = [("爱", "B-PER"), ("因", "I-PER"), ("斯坦", "I-PER"), ("在", "O"), ("柏林", "B-LOC"),
                  ("发表", "O"), ("演讲", "O")]
