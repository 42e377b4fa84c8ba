"""BERT's encoder, written out, returning every hidden state and every attention probability: the parts the BERT
family shares (core/nets/bert.py, distilbert.py and roberta.py build on this module, never on each other).

Built bottom-up like nanoGPT: config → embeddings → self-attention → feed-forward → layer → encoder → BertModel,
then what every head model has (``PretrainedMixin``: its encoder, tied decoder, and what the tabs may ask of it),
the bare ``Encoder`` the attention views load, and the key normalisation. Submodule names equal the Hugging Face
checkpoint keys (``embeddings.word_embeddings``, ``encoder.layer.3.attention.self.query``, ...), so loading is a
strict ``load_state_dict`` after ``normalize_state_dict``. The task heads are in each family's file.

Equations (seed §8–§13):
  input     E = LayerNorm(token_emb + segment_emb + position_emb)                  (BERT input representation)
  attention Attention(Q, K, V) = softmax(Q Kᵀ / √d_k + mask) V, per head, heads concatenated then × W_O
  sub-layer LayerNorm(x + Sublayer(x))                                               (post-norm residual)
  FFN       FFN(x) = GELU(x W1 + b1) W2 + b2,  W1: H × 4H
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


# ------------------------------------------------------------------------------------------------------------------
# Config


@dataclass
class BertConfig:
    """The subset of a Hugging Face config.json that shapes the network. DistilBERT's names are mapped on read."""

    model_type: str = "bert"  # "bert", "distilbert" or "roberta"
    vocab_size: int = 30522
    hidden_size: int = 768  # H
    num_hidden_layers: int = 12  # L
    num_attention_heads: int = 12  # A
    intermediate_size: int = 3072  # 4H
    hidden_act: str = "gelu"
    max_position_embeddings: int = 512
    type_vocab_size: int = 2  # segment A/B; DistilBERT has no segment embeddings (0)
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    sinusoidal_pos_embds: bool = False
    num_labels: int = 2
    id2label: dict[int, str] = field(default_factory=dict)
    problem_type: str | None = None  # "multi_label_classification" makes the pipeline use a sigmoid
    architectures: list[str] = field(default_factory=list)
    tie_word_embeddings: bool = True
    position_offset: int = 0  # RoBERTa numbers positions from pad_token_id + 1, so its table holds that many fewer
    has_pooler: bool = True  # the bare model has a pooler (DistilBERT's has none)
    pretrained_with_nsp: bool = True  # masked LM + next-sentence prediction (BERT); masked LM only (the others)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "BertConfig":
        raw = dict(raw)
        if raw.get("model_type") == "distilbert":
            raw.update(
                hidden_size=raw.get("dim", 768), num_hidden_layers=raw.get("n_layers", 6),
                num_attention_heads=raw.get("n_heads", 12), intermediate_size=raw.get("hidden_dim", 3072),
                hidden_act=raw.get("activation", "gelu"), type_vocab_size=0, layer_norm_eps=1e-12,
                has_pooler=False, pretrained_with_nsp=False,
            )
        id2label = {int(k): v for k, v in (raw.get("id2label") or {}).items()}
        raw["id2label"] = id2label
        raw["num_labels"] = len(id2label) or raw.get("num_labels", 2)
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names and v is not None})

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def max_tokens(self) -> int:
        """The longest input the position table covers, special tokens included."""
        return self.max_position_embeddings - self.position_offset


ACTIVATIONS = {
    "gelu": F.gelu,  # exact erf GELU, as in the original BERT
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


# ------------------------------------------------------------------------------------------------------------------
# Outputs


@dataclass
class EncoderOutput:
    last_hidden_state: torch.Tensor  # (B, T, H)
    hidden_states: tuple[torch.Tensor, ...]  # L+1 tensors (B, T, H): embeddings, then each layer; () if not asked
    attentions: tuple[torch.Tensor, ...]  # L tensors (B, A, T, T) of softmax probabilities; () if not asked for
    pooler_output: torch.Tensor | None = None  # (B, H) tanh(W h_[CLS] + b), BERT with pooler only


@dataclass
class HeadOutput:
    logits: torch.Tensor  # MLM (B, T, V); token classes (B, T, C); sequence classes (B, C)
    encoder: EncoderOutput
    seq_relationship_logits: torch.Tensor | None = None  # NSP (B, 2): index 0 = IsNext, 1 = NotNext


@dataclass
class SpanOutput:
    start_logits: torch.Tensor  # (B, T) the score S·h_i of token i starting the answer
    end_logits: torch.Tensor  # (B, T) the score E·h_i of token i ending it
    encoder: EncoderOutput


# ------------------------------------------------------------------------------------------------------------------
# BERT building blocks (names follow modeling_bert.py)


class BertEmbeddings(nn.Module):
    """E = LayerNorm(word + token_type + position): the (B, T, H) input of the first layer."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def components(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        """The three embeddings before they are summed (shown as heatmaps in the masked-LM tab)."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)  # (T,)
        return {
            "token": self.word_embeddings(input_ids),  # (B, T, H)
            "segment": self.token_type_embeddings(token_type_ids),  # (B, T, H)
            "position": self.position_embeddings(positions)[None],  # (1, T, H)
        }

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        parts = self.components(input_ids, token_type_ids)
        return self.LayerNorm(parts["token"] + parts["segment"] + parts["position"])  # (B, T, H)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, additive_mask: torch.Tensor | None,
              need_probs: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """softmax(Q Kᵀ / √d_k + mask) V for all heads at once; returns the output and (optionally) the probabilities.

    When the probabilities are not needed, PyTorch's fused scaled_dot_product_attention computes the same thing faster.
    """
    if not need_probs:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=additive_mask), None
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)  # (B, A, T, T); scaling q is T/hs x less work
    if additive_mask is not None:
        scores += additive_mask  # in place: 0 where attending is allowed, a large negative number where not
    probs = scores.softmax(dim=-1)  # (B, A, T, T), each row sums to 1: the one softmax, returned as it is
    return probs @ v, probs  # (B, A, T, hs)


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads, self.head_size = config.num_attention_heads, config.head_size
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.head_size).transpose(1, 2)  # (B, A, T, hs)

    def forward(self, x, additive_mask, need_probs):
        q, k, v = self.split_heads(self.query(x)), self.split_heads(self.key(x)), self.split_heads(self.value(x))
        context, probs = attention(q, k, v, additive_mask, need_probs)  # (B, A, T, hs)
        B, A, T, hs = context.shape
        return context.transpose(1, 2).reshape(B, T, A * hs), probs  # heads concatenated: (B, T, H)


class BertSelfOutput(nn.Module):
    """× W_O, then LayerNorm(x + Sublayer(x))."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, context, residual):
        return self.LayerNorm(residual + self.dense(context))


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, x, additive_mask, need_probs):
        context, probs = self.self(x, additive_mask, need_probs)
        return self.output(context, x), probs


class BertIntermediate(nn.Module):
    """GELU(x W1 + b1): H → 4H."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, x):
        return self.act(self.dense(x))  # (B, T, 4H)


class BertOutput(nn.Module):
    """(·) W2 + b2: 4H → H, then LayerNorm(x + FFN(x))."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden, residual):
        return self.LayerNorm(residual + self.dense(hidden))  # (B, T, H)


@dataclass
class BlockParts:
    """One post-norm encoder layer's submodules in the order its forward pass calls them, whatever the family names
    them: what the Transformer tab's walk (core/transformer/transformer.py) runs one at a time."""

    query: nn.Linear
    key: nn.Linear
    value: nn.Linear
    attention_output: nn.Linear  # W_O
    attention_norm: nn.LayerNorm
    ffn_in: nn.Linear  # W₁: H → 4H
    activation: Any  # a function of a tensor
    ffn_out: nn.Linear  # W₂: 4H → H
    ffn_norm: nn.LayerNorm


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, x, additive_mask, need_probs):
        x, probs = self.attention(x, additive_mask, need_probs)
        return self.output(self.intermediate(x), x), probs

    def block_parts(self) -> BlockParts:
        s, o = self.attention.self, self.attention.output
        return BlockParts(s.query, s.key, s.value, o.dense, o.LayerNorm, self.intermediate.dense,
                          self.intermediate.act, self.output.dense, self.output.LayerNorm)


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])


class BertPooler(nn.Module):
    """tanh(W h_[CLS] + b): the sentence vector that NSP and sentence classification read."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden):
        return torch.tanh(self.dense(hidden[:, 0]))  # (B, H)


def additive_attention_mask(attention_mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """(B, T) of 1/0 → (B, 1, 1, T) of 0/most-negative, broadcast over heads and query positions. None when every
    position may be attended to (a pad-free batch): adding zeros changes nothing, and without a mask SDPA can use its
    fastest kernel."""
    if attention_mask is None or bool(attention_mask.all()):
        return None
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


class BertModel(nn.Module):
    embeddings_class: type[nn.Module] = BertEmbeddings  # RoBERTa's model is this one with its own embeddings

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        self.embeddings = self.embeddings_class(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    @property
    def layers(self) -> nn.ModuleList:
        return self.encoder.layer

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> EncoderOutput:
        """``output_hidden_states=False`` (the QA and NER pipelines) keeps only the last layer's output: holding all
        L+1 states (13 × B·T·H floats for bert-base) grows the heap past glibc's trim threshold, so every call gave
        the pages back and faulted them in again (≈6,000 minor page faults per 379-token QA window, none without)."""
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids)  # (B, T, H)
        mask = additive_attention_mask(attention_mask, x.dtype)
        hidden_states, attentions = [x] if output_hidden_states else [], []
        for layer in self.encoder.layer:
            x, probs = layer(x, mask, output_attentions)
            if output_hidden_states:
                hidden_states.append(x)
            if output_attentions:
                attentions.append(probs)
        pooled = self.pooler(x) if self.pooler is not None else None
        return EncoderOutput(x, tuple(hidden_states), tuple(attentions), pooled)


# ------------------------------------------------------------------------------------------------------------------
# What every model of the family has, whatever its head


class PretrainedMixin:
    """The encoder under its checkpoint prefix (``bert``, ``distilbert``, ``roberta``), the tied decoder, and what a
    tab may ask of the head (declared here for every class, so a tab never inspects a head's submodules)."""

    base_prefix = "bert"
    config: BertConfig
    needs_pooler = False  # the head reads the pooled [CLS] vector (NSP, BERT's sequence classification)
    has_next_sentence_head = False  # next_sentence_logits() exists (BertForPreTraining)

    @property
    def base(self) -> nn.Module:
        """The bare encoder inside: a BertModel, DistilBertModel or RobertaModel."""
        return getattr(self, self.base_prefix)

    def tie_weights(self) -> None:
        decoder = self.output_embeddings()
        if decoder is not None and self.config.tie_word_embeddings:
            decoder.weight = self.input_embeddings().weight

    def input_embeddings(self) -> nn.Embedding:
        return self.base.embeddings.word_embeddings

    def output_embeddings(self) -> nn.Linear | None:
        return None


class Encoder(PretrainedMixin, nn.Module):
    """A bare encoder under its checkpoint prefix, for the views that need no head (attention, the block walk).

    It reads the encoder out of any of the family's files: a bare model's (the prefix is added) or a head model's
    (whose head weights are the only keys left unused). Each family names its own: ``bert.BertOnlyEncoder``, ..."""

    base_class: type[nn.Module] = BertModel

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        setattr(self, self.base_prefix, self.base_class(config))

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> EncoderOutput:
        return self.base(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)


# ------------------------------------------------------------------------------------------------------------------
# Loading: normalise the few ways checkpoints differ, then load strictly.


def normalize_state_dict(state: dict[str, torch.Tensor], model: nn.Module) -> dict[str, torch.Tensor]:
    """Map checkpoint keys onto ``model``'s parameter names (any model of the BERT family).

    Handles: a missing or extra ``bert.``/``distilbert.``/``roberta.`` prefix (bare-model files vs head-model files),
    legacy ``LayerNorm.gamma``/``beta`` names, ``position_ids`` buffers, and the decoder weight that tied checkpoints
    leave out (or keep as a copy of the embeddings). Whatever remains must match exactly, or loading fails.
    """
    prefix = getattr(model, "base_prefix", "bert")
    expected = set(model.state_dict()) | {f"{prefix}.pooler.dense.weight", f"{prefix}.pooler.dense.bias"}
    out: dict[str, torch.Tensor] = {}
    for key, tensor in state.items():
        key = key.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        if key.endswith("position_ids"):
            continue  # a buffer (0..511) that older transformers versions saved; we compute positions on the fly
        if key not in expected and f"{prefix}.{key}" in expected:
            key = f"{prefix}.{key}"  # file saved from the bare BertModel/DistilBertModel/RobertaModel
        elif key not in expected and key.startswith(f"{prefix}.") and key[len(prefix) + 1:] in expected:
            key = key[len(prefix) + 1:]  # file from a head model, loaded into a bare model
        out[key] = tensor
    if isinstance(model, Encoder):  # a bare encoder may be read out of any head model's file
        out = {k: v for k, v in out.items() if k.startswith(f"{prefix}.")}
    base = getattr(model, prefix, None)
    if isinstance(base, BertModel):
        # The pooler is optional in files: token-level heads are often saved with one (unused) or without one.
        # Build or drop it so that every tensor in the file has a home and nothing the model needs is absent.
        has_pooler = f"{prefix}.pooler.dense.weight" in out
        if has_pooler and base.pooler is None:
            base.pooler = BertPooler(model.config)
        elif not has_pooler and base.pooler is not None and not model.needs_pooler:
            base.pooler = None
    decoder = model.output_embeddings() if isinstance(model, PretrainedMixin) else None
    if decoder is not None and model.config.tie_word_embeddings:
        decoder_key = next(k for k, p in model.named_parameters(remove_duplicate=False) if p is decoder.weight
                           and not k.startswith(prefix))
        out.pop(decoder_key, None)  # tied: the embeddings are the decoder
        if decoder.bias is None:  # old files keep a copy of the head's own bias under the decoder's name
            out.pop(decoder_key.removesuffix("weight") + "bias", None)
    return out
