"""Exact parameter counts from a config alone (no weights): a BERT-family encoder, the seed's hand formula, and any
encoder–decoder Transformer sub-layer by sub-layer.

Every Linear(a, b) has a·b weights and b biases; every LayerNorm(H) has 2H. The BERT counts are shown by the masked-LM
tab's model card (§13) and tested against transformers' module counts (tests/nets/test_bert_parity.py); the Transformer
counts (the seed's Transformer base, §11) by the Transformer tab, tested against torch.nn.Transformer's submodules
(tests/transformer/test_transformer.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.text import i18n
from core.text.errors import UserInputError

if TYPE_CHECKING:  # counting needs the config's numbers only; core.nets imports torch
    from core.nets.bert_encoder import BertConfig


# parameter_breakdown's part names (English identifiers that code and tests index by) → the stable key of each, for
# the translation tables: the masked-LM tab's card shows ``mlm.part.<key>`` in the learner's language.
PART_KEYS = {
    "embeddings: token": "token", "embeddings: segment": "segment", "embeddings: position": "position",
    "embeddings: LayerNorm": "embedding_ln", "attention: Q, K, V, O weights": "attention_weights",
    "attention: Q, K, V, O biases": "attention_biases", "feed-forward: weights": "ffn_weights",
    "feed-forward: biases": "ffn_biases", "LayerNorm (2 per layer)": "layer_ln", "pooler": "pooler",
    "head: masked LM (transform + LayerNorm + bias; decoder tied)": "head_mlm",
    "head: next-sentence prediction": "head_nsp", "head: token classifier": "head_token",
    "head: span start/end": "head_span", "total": "total",
}


def parameter_breakdown(config: BertConfig, pooler: bool = True, heads: tuple[str, ...] = ()) -> dict[str, int]:
    """Exact parameter counts by part. ``heads`` ⊂ {"mlm", "nsp", "token_classification", "qa"}.

    Every Linear(a, b) has a·b weights and b biases; every LayerNorm(H) has 2H. The MLM decoder weight is tied to
    the word embeddings, so it adds only its V biases.
    """
    H, L, V, I = config.hidden_size, config.num_hidden_layers, config.vocab_size, config.intermediate_size
    P, S = config.max_position_embeddings, config.type_vocab_size  # DistilBERT: S = 0, no segment embeddings
    parts = {
        "embeddings: token": V * H,
        "embeddings: segment": S * H,
        "embeddings: position": P * H,
        "embeddings: LayerNorm": 2 * H,
        "attention: Q, K, V, O weights": L * 4 * H * H,
        "attention: Q, K, V, O biases": L * 4 * H,
        "feed-forward: weights": L * 2 * H * I,
        "feed-forward: biases": L * (I + H),
        "LayerNorm (2 per layer)": L * 2 * 2 * H,
    }
    if pooler and config.has_pooler:
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


# ------------------------------------------------------------------------------------------------------------------
# Parameter counts from a shape (seed §11: the Transformer base)


@dataclass(frozen=True)
class TransformerShape:
    """The numbers that fix a Transformer's size. Encoder-only models (BERT) have no decoder layers."""

    name: str
    encoder_layers: int  # N
    decoder_layers: int
    d_model: int
    heads: int  # h; each head has d_k = d_model / h
    d_ff: int  # the FFN's inner width
    vocab_size: int
    shared_embeddings: bool = True  # source, target and pre-softmax weights are one matrix (Vaswani et al. §3.4)
    learned_positions: int = 0  # rows of a learned position table (BERT); 0 = sinusoidal, no parameters
    segment_vocab: int = 0  # BERT's segment (A/B) embeddings
    embedding_norm: bool = False  # BERT normalises the summed embeddings
    pooler: bool = False  # BERT's tanh(W h_[CLS] + b)

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads


# The seed's Transformer base (§11; Vaswani et al. 2017, Table 3): every count below is computed from these.
TRANSFORMER_BASE = dict(name="Transformer base", encoder_layers=6, decoder_layers=6, d_model=512, heads=8, d_ff=2048,
                        vocab_size=37000, shared_embeddings=True)
TRANSFORMER_BIG = dict(TRANSFORMER_BASE, name="Transformer big", d_model=1024, heads=16, d_ff=4096)
MAX_SHAPE = dict(encoder_layers=128, decoder_layers=128, d_model=16384, heads=256, d_ff=65536, vocab_size=1_000_000)


def transformer_shape(config: dict) -> TransformerShape:
    """A checked TransformerShape from a plain config (the preset, or the numbers a learner typed)."""
    values = dict(config)
    for key, limit in MAX_SHAPE.items():
        value = values.get(key)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise UserInputError("transformer.shape_whole_number", name=i18n.text(f"transformer.field_{key}"))
        low = 0 if key.endswith("_layers") else 1
        if not low <= value <= limit:
            raise UserInputError("transformer.shape_between", name=i18n.text(f"transformer.field_{key}"), low=low,
                                 high=f"{limit:,}", value=f"{value:,}")
        values[key] = value
    if values["encoder_layers"] + values["decoder_layers"] == 0:
        raise UserInputError("transformer.shape_no_layers")
    if values["d_model"] % values["heads"]:
        raise UserInputError("transformer.shape_heads_split", d_model=values["d_model"], heads=values["heads"])
    return TransformerShape(**values)


def encoder_shape(config: BertConfig, name: str, pooler: bool = True) -> TransformerShape:
    """The shape of a BERT-family encoder from its config."""
    return TransformerShape(name=name, encoder_layers=config.num_hidden_layers, decoder_layers=0,
                            d_model=config.hidden_size, heads=config.num_attention_heads,
                            d_ff=config.intermediate_size, vocab_size=config.vocab_size, shared_embeddings=True,
                            learned_positions=config.max_position_embeddings,
                            segment_vocab=config.type_vocab_size, embedding_norm=True,
                            pooler=pooler and config.has_pooler)


@dataclass
class ParamRow:
    group: str  # "embeddings", "encoder layer", "decoder layer", "output"
    part: str  # "self-attention", "FFN", ...
    formula: str  # the count in symbols
    each: int  # parameters in one copy
    copies: int  # how many layers have it

    @property
    def total(self) -> int:
        return self.each * self.copies


@dataclass
class ParamCount:
    shape: TransformerShape
    rows: list[ParamRow]

    @property
    def total(self) -> int:
        return sum(row.total for row in self.rows)

    def group_total(self, group: str) -> int:
        return sum(row.total for row in self.rows if row.group == group)


def parameter_count(shape: TransformerShape) -> ParamCount:
    """Exact counts per sub-layer. Linear(a, b) has a·b weights + b biases; LayerNorm(d) has 2d (gain and bias).

    Attention: W_Q, W_K, W_V are d × d (h heads of d × d_k side by side) and W_O is d × d: 4d² + 4d. Cross-attention
    has the same four matrices (queries from the decoder, keys and values from the encoder's output)."""
    d, f, V, N, M = shape.d_model, shape.d_ff, shape.vocab_size, shape.encoder_layers, shape.decoder_layers
    attention = 4 * d * d + 4 * d
    ffn = 2 * d * f + f + d
    rows: list[ParamRow] = []
    if shape.shared_embeddings or not (N and M):
        label = "token embeddings (shared: encoder, decoder, output)" if N and M else "token embeddings"
        rows.append(ParamRow("embeddings", label, "V·d", V * d, 1))
    else:
        rows += [ParamRow("embeddings", "source token embeddings", "V·d", V * d, 1),
                 ParamRow("embeddings", "target token embeddings", "V·d", V * d, 1)]
    if shape.learned_positions:
        rows.append(ParamRow("embeddings", "position embeddings (learned)", "P·d", shape.learned_positions * d, 1))
    else:
        rows.append(ParamRow("embeddings", "positional encoding (sin/cos, fixed)", "0", 0, 1))
    if shape.segment_vocab:
        rows.append(ParamRow("embeddings", "segment embeddings", "S·d", shape.segment_vocab * d, 1))
    if shape.embedding_norm:
        rows.append(ParamRow("embeddings", "embedding LayerNorm", "2d", 2 * d, 1))
    if N:
        rows += [ParamRow("encoder layer", "self-attention", "4d² + 4d", attention, N),
                 ParamRow("encoder layer", "FFN", "2·d·d_ff + d_ff + d", ffn, N),
                 ParamRow("encoder layer", "2 LayerNorms", "2·2d", 4 * d, N)]
    if M:
        rows += [ParamRow("decoder layer", "masked self-attention", "4d² + 4d", attention, M),
                 ParamRow("decoder layer", "cross-attention (encoder–decoder)", "4d² + 4d", attention, M),
                 ParamRow("decoder layer", "FFN", "2·d·d_ff + d_ff + d", ffn, M),
                 ParamRow("decoder layer", "3 LayerNorms", "3·2d", 6 * d, M)]
        if shape.shared_embeddings:
            rows.append(ParamRow("output", "pre-softmax linear (tied to the embeddings)", "0", 0, 1))
        else:
            rows.append(ParamRow("output", "pre-softmax linear (no bias)", "V·d", V * d, 1))
    if shape.pooler:
        rows.append(ParamRow("output", "pooler tanh(W h_[CLS] + b)", "d² + d", d * d + d, 1))
    return ParamCount(shape, rows)
