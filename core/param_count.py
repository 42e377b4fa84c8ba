"""Exact parameter counts of a BERT-family encoder from its config alone (no weights), and the seed's hand formula.

Shown by the masked-LM tab's model card (§13): every Linear(a, b) has a·b weights and b biases; every LayerNorm(H)
has 2H. The counts are tested against transformers' module counts (tests/test_bert_parity.py).
"""
from __future__ import annotations

from core.nets.bert import BertConfig

def parameter_breakdown(config: BertConfig, pooler: bool = True, heads: tuple[str, ...] = ()) -> dict[str, int]:
    """Exact parameter counts by part. ``heads`` ⊂ {"mlm", "nsp", "token_classification", "qa"}.

    Every Linear(a, b) has a·b weights and b biases; every LayerNorm(H) has 2H. The MLM decoder weight is tied to
    the word embeddings, so it adds only its V biases.
    """
    H, L, V, I = config.hidden_size, config.num_hidden_layers, config.vocab_size, config.intermediate_size
    P, S = config.max_position_embeddings, config.type_vocab_size
    distil = config.model_type == "distilbert"
    parts = {
        "embeddings: token": V * H,
        "embeddings: segment": 0 if distil else S * H,
        "embeddings: position": P * H,
        "embeddings: LayerNorm": 2 * H,
        "attention: Q, K, V, O weights": L * 4 * H * H,
        "attention: Q, K, V, O biases": L * 4 * H,
        "feed-forward: weights": L * 2 * H * I,
        "feed-forward: biases": L * (I + H),
        "LayerNorm (2 per layer)": L * 2 * 2 * H,
    }
    if pooler and not distil:
        parts["pooler"] = H * H + H
    if "mlm" in heads:
        parts["head: masked LM (transform + LayerNorm + bias; decoder tied)"] = H * H + H + 2 * H + V
    if "nsp" in heads:
        parts["head: next-sentence prediction"] = 2 * H + 2
    if "token_classification" in heads:
        parts["head: token classifier"] = config.num_labels * (H + 1)
    if "qa" in heads:
        parts["head: span start/end"] = 2 * H + 2
    parts["total"] = sum(parts.values())
    return parts


def seed_hand_count(V: int = 30522, P: int = 512, S: int = 2, H: int = 768, L: int = 12, A: int = 12) -> int:
    """The seed post's hand formula for BERT-base (seed 001), term by term:

    (V + P + S)·H  +  H·2  +  L·( H·H/A·3·A  +  H·H  +  H·4H·2  +  H·2·2 )
    embeddings       emb LN     Q,K,V weights  W_O    FFN weights  2 LayerNorms
    It leaves out the linear layers' biases and the pooler.
    """
    return (V + P + S) * H + H * 2 + L * (H * H // A * 3 * A + H * H + H * 4 * H * 2 + H * 2 * 2)
