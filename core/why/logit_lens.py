"""The logit lens (nostalgebraist, 2020): read every layer's hidden state through the model's own output head, as if
the network stopped there, and watch the answer form layer by layer.

    GPT (pre-LayerNorm)    p_l = softmax(W_te · LN_f(h_l))     h_l: the residual stream entering block l (l < L);
                                                               the last row is the model's own output, LN_f(h_L)
    BERT masked LM         p_l = softmax(E · LN(GELU(W_t h_l + b_t)) + b)    h_0: the embeddings, h_l: layer l's output

Row l is read at one position: the last one for a GPT (the next token), the [MASK] for a BERT. The hidden states are
the ones transformers returns with ``output_hidden_states=True`` (L + 1 of them; a GPT's last is already LN_f'd, so it
is not normed twice), and the head is the model's own, so the last row equals the model's prediction.
For each layer: the top k tokens, and the rank (1 = top) and probability of the final answer.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.transformer import gpt
from core.mlm import char as mlm_char

DEFAULT_TOP_K = 5


@dataclass
class LogitLens:
    model_id: str
    layers: list[str]  # "embeddings", "1", … "L" (BERT) or "0", … "L" (GPT: the input of block l, then the output)
    top_tokens: list[list[str]]  # (L + 1) × k
    top_probabilities: list[list[float]]  # (L + 1) × k
    answer: str  # the final layer's top token
    answer_ranks: list[int]  # (L + 1,) the answer's rank at each layer, 1 = top
    answer_probabilities: list[float]  # (L + 1,)
    tracked_probabilities: list[list[float]]  # (L + 1) × k: each layer's probability of the last layer's top k


def lens(probabilities: torch.Tensor, piece, model_id: str, layers: list[str], top_k: int,
         allowed: torch.Tensor | None = None) -> LogitLens:
    """From (L + 1, V) probabilities: the top k per layer and the final answer's rank and probability. ``allowed``
    (V,) bool restricts what may be shown and ranked (the char-BERT proposes characters only)."""
    probabilities = probabilities.float().cpu()
    ranked = probabilities if allowed is None else probabilities.masked_fill(~allowed.cpu(), -1.0)
    top = ranked.topk(min(top_k, ranked.shape[-1]), dim=-1)
    answer = int(top.indices[-1, 0])
    ranks = (ranked > ranked[:, answer:answer + 1]).sum(dim=-1) + 1  # (L + 1,)
    return LogitLens(model_id, layers, [[piece(int(i)) for i in row] for row in top.indices],
                     top.values.tolist(), piece(answer), ranks.tolist(), probabilities[:, answer].tolist(),
                     probabilities[:, top.indices[-1]].tolist())


@torch.no_grad()
def gpt_layer_logits(model, ids: torch.Tensor) -> torch.Tensor:
    """(L + 1, V) logits at the last position of ids (T,): LN_f and the tied head on each block's input, then the
    model's own final logits."""
    out = model(ids[None])
    states = torch.stack([h[0, -1] for h in out.hidden_states[:-1]])  # (L, C) the residual stream
    early = model.lm_head(model.transformer.ln_f(states))  # (L, V)
    return torch.cat([early, out.logits[0, -1:]])  # (L + 1, V)


def gpt_lens(text: str, model_id: str | None = None, top_k: int = DEFAULT_TOP_K) -> LogitLens:
    """The char-GPT's (or a GPT-2's) next-token prediction after the text, layer by layer."""
    loaded = gpt.load(model_id)
    encoded = gpt.encode_text(loaded, text)
    ids = torch.tensor(encoded.ids, device=loaded.model.lm_head.weight.device)
    logits = torch.stack([gpt.banned_scores(loaded, row) for row in gpt_layer_logits(loaded.model, ids)])
    layers = [str(layer) for layer in range(loaded.model.config.n_layer + 1)]
    return lens(logits.softmax(dim=-1), loaded.tokenizer.piece, loaded.model_id, layers, top_k)


@torch.no_grad()
def mlm_layer_logits(model, ids: torch.Tensor, position: int, segments: torch.Tensor | None = None) -> torch.Tensor:
    """(L + 1, V) logits at ``position`` of ids (T,) (segment ids (1, T), default all 0): the MLM head's transform
    and decoder on every hidden state (BERT, DistilBERT, the char-BERT: any model with ``base`` and ``mlm_logits``)."""
    encoded = model.base(ids[None], None, segments, output_attentions=False, output_hidden_states=True)
    return model.mlm_logits(torch.stack([h[0, position] for h in encoded.hidden_states]))  # (L + 1, V)


def char_bert_lens(text: str, top_k: int = DEFAULT_TOP_K) -> LogitLens:
    """The char-BERT's guess for the first [MASK] of the first blank, layer by layer (characters only)."""
    loaded = mlm_char.shipped_char_bert()
    prepared = mlm_char.prepare(loaded, text, 1)
    ids = torch.tensor(prepared.ids, device=loaded.device)
    logits = mlm_layer_logits(loaded.model, ids, prepared.starts[0])
    allowed = torch.arange(logits.shape[-1]) >= mlm_char.FIRST_CHAR_ID
    layers = ["embeddings"] + [str(layer) for layer in range(1, loaded.model.config.num_hidden_layers + 1)]
    return lens(logits.softmax(dim=-1), lambda i: loaded.tokenizer.tokens[i], mlm_char.CHAR_BERT_ID, layers, top_k,
                allowed)
