"""GPT (Radford et al., 2018/2019) as a decoder-only Transformer, in the shape of nanoGPT's model.py.

One block, pre-LayerNorm as in GPT-2 (§12):

    a = x + W_O · concat_h( softmax(Q_h K_hᵀ / √d_h + M) V_h ),   Q, K, V = LN_1(x) W_QKV      (causal mask M)
    y = a + W_2 · GELU(LN_2(a) W_1 + b_1) + b_2

    logits = LN_f(h_L) W_teᵀ       (the output layer is tied to the token embedding table)

M is 0 on and below the diagonal and -∞ above it, so position t reads positions ≤ t only: the left context.

Submodule names equal GPT-2's checkpoint keys (transformer.wte, transformer.h.N.attn.c_attn, lm_head, ...), so a
GPT-2 checkpoint loads with a strict load_state_dict after ``normalize_state_dict``. GPT-2 stores its projections
as Conv1D, whose weight is (in, out), the transpose of nn.Linear's (out, in); that function transposes them, drops
the causal-mask buffers old checkpoints carry (attn.bias, attn.masked_bias), and adds the ``transformer.`` prefix
the original files leave out. Our own char-GPT is saved in the same GPT-2 layout, so one loader reads both.

``forward`` returns what the tab shows: logits, every hidden state (as transformers' output_hidden_states: the
embeddings, the input of each later block, then LN_f of the last block's output) and every attention map, plus
the keys and values of this call (``past``) so generation can feed one token at a time (a KV cache).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
import torch.nn.functional as F

CONV1D_WEIGHTS = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
MASK_BUFFERS = (".attn.bias", ".attn.masked_bias")  # not ".attn.c_attn.bias": the leading dot matters

KVCache = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values, each (B, nh, T_past, hs)


@dataclass
class GPTConfig:
    """GPT-2's config.json fields (their names), the sizes this module needs."""

    vocab_size: int = 50257
    n_positions: int = 1024  # the context: the longest text the position table covers
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None  # FFN width; None means 4 · n_embd
    layer_norm_epsilon: float = 1e-5
    activation_function: str = "gelu_new"  # GPT-2's GELU, tanh approximation

    @classmethod
    def from_dict(cls, config: dict) -> "GPTConfig":
        """From a config.json: unknown keys are ignored; features this module does not implement are refused."""
        for flag in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"):
            if config.get(flag):
                raise ValueError(f"GPT-2 option {flag}=True is not supported")
        if config.get("scale_attn_weights") is False:
            raise ValueError("GPT-2 option scale_attn_weights=False is not supported")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in config.items() if k in known})

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def ffn_size(self) -> int:
        return self.n_inner or 4 * self.n_embd


def gelu(x: torch.Tensor, kind: str) -> torch.Tensor:
    if kind in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return F.gelu(x, approximate="tanh")  # 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³)))
    if kind == "gelu":
        return F.gelu(x)  # x·Φ(x)
    if kind == "relu":
        return F.relu(x)
    raise ValueError(f"activation {kind!r} is not supported")


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(QKᵀ/√d_h + M) V with the causal mask M; returns (output, probabilities).

    q holds the last T_q positions of a sequence whose first T_k - T_q positions are already in k and v (the cache),
    so query i sits at absolute position T_k - T_q + i and may read keys 0 … T_k - T_q + i."""
    T_q, T_k = q.size(-2), k.size(-2)
    scores = (q / math.sqrt(k.size(-1))) @ k.transpose(-2, -1)  # (B, nh, T_q, T_k); scaling q is the cheaper side
    if T_q > 1:  # one new query (cached generation) is the last position: nothing lies in its future
        future = torch.ones(T_q, T_k, dtype=torch.bool, device=q.device).triu(T_k - T_q + 1)  # (T_q, T_k)
        scores = scores.masked_fill(future, float("-inf"))  # (B, nh, T_q, T_k)
    probs = scores.softmax(dim=-1)  # (B, nh, T_q, T_k), each row sums to 1
    return probs @ v, probs  # (B, nh, T_q, hs), (B, nh, T_q, T_k)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0, "n_embd must split evenly into heads"
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)  # W_Q, W_K, W_V for all heads, stacked
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)  # W_O

    def forward(self, x: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None = None):
        B, T, C = x.shape  # batch, new positions, n_embd
        q, k, v = self.c_attn(x).split(C, dim=2)  # each (B, T, C)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)  # (B, nh, T_past + T, hs)
            v = torch.cat([past[1], v], dim=2)  # (B, nh, T_past + T, hs)
        if self.training:  # training needs no maps: torch's fused kernel computes the same softmax, faster
            y, probs = F.scaled_dot_product_attention(q, k, v, is_causal=past is None), None  # (B, nh, T, hs)
        else:
            y, probs = causal_attention(q, k, v)  # (B, nh, T, hs), (B, nh, T, T_past + T)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C): the heads concatenated
        return self.c_proj(y), probs, (k, v)  # (B, T, C)


class MLP(nn.Module):
    """FFN(x) = GELU(x W_1 + b_1) W_2 + b_2, position by position."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.activation = config.activation_function
        self.c_fc = nn.Linear(config.n_embd, config.ffn_size)  # W_1, b_1
        self.c_proj = nn.Linear(config.ffn_size, config.n_embd)  # W_2, b_2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(gelu(self.c_fc(x), self.activation))  # (B, T, C)


class Block(nn.Module):
    """x + Attention(LN_1(x)), then + FFN(LN_2(·)): pre-LayerNorm residual sub-layers (GPT-2)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None = None):
        attended, probs, present = self.attn(self.ln_1(x), past)  # (B, T, C)
        x = x + attended  # (B, T, C)
        x = x + self.mlp(self.ln_2(x))  # (B, T, C)
        return x, probs, present


@dataclass
class GPTOutput:
    logits: torch.Tensor  # (B, T, V)
    hidden_states: list[torch.Tensor]  # n_layer + 1 × (B, T, C)
    attentions: list[torch.Tensor]  # n_layer × (B, nh, T, T_past + T)
    past: KVCache  # n_layer × (keys, values), each (B, nh, T_past + T, hs): feed back to continue


class GPT(nn.Module):
    """GPT2LMHeadModel's modules under GPT2LMHeadModel's names; lm_head shares its weight with transformer.wte."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),  # token embeddings
            wpe=nn.Embedding(config.n_positions, config.n_embd),  # learned position embeddings
            h=nn.ModuleList(Block(config) for _ in range(config.n_layer)),
            ln_f=nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # weight tying (Press & Wolf, 2017)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: residual projections scaled by 1/√(2·n_layer)
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # the tied lm_head is counted once

    def forward(self, idx: torch.Tensor, past: KVCache | None = None) -> GPTOutput:
        B, T = idx.shape
        start = past[0][0].size(2) if past else 0  # positions already in the cache
        if start + T > self.config.n_positions:
            raise ValueError(f"{start + T} positions exceed the context of {self.config.n_positions}")
        pos = torch.arange(start, start + T, device=idx.device)  # (T,)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)  # (B, T, C)
        hidden, attentions, present = [], [], []
        for i, block in enumerate(self.transformer.h):
            hidden.append(x)
            x, probs, kv = block(x, past[i] if past else None)  # (B, T, C)
            attentions.append(probs)
            present.append(kv)
        x = self.transformer.ln_f(x)  # (B, T, C)
        hidden.append(x)
        return GPTOutput(self.lm_head(x), hidden, attentions, present)  # logits (B, T, V)

    @torch.inference_mode()
    def generate(self, idx: torch.Tensor, new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 generator: torch.Generator | None = None, use_cache: bool = True,
                 banned: list[int] | None = None) -> torch.Tensor:
        """Append new_tokens to idx (B, T): sampled from softmax(logits / T) over the top_k, or greedy when
        temperature is 0. With use_cache each step feeds only the newest token and the cached keys and values;
        without it each step re-reads the whole (last n_positions) sequence: the same numbers, slower."""
        past = None
        for _ in range(new_tokens):
            if use_cache and past is not None and past[0][0].size(2) < self.config.n_positions:
                out = self(idx[:, -1:], past)
            else:  # first step, no cache, or the cache is full: read the last n_positions tokens afresh
                out = self(idx[:, -self.config.n_positions:])
            past = out.past if use_cache else None
            logits = out.logits[:, -1, :]  # (B, V)
            if banned:
                logits[:, banned] = float("-inf")
            nxt = sample(logits, temperature, top_k, generator)  # (B, 1)
            idx = torch.cat([idx, nxt], dim=1)  # (B, T + 1)
        return idx


def sample(logits: torch.Tensor, temperature: float, top_k: int | None = None,
           generator: torch.Generator | None = None) -> torch.Tensor:
    """One token per row from softmax(logits / temperature), restricted to the top_k; argmax when temperature is 0."""
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)  # (B, 1)
    logits = logits / temperature  # (B, V)
    if top_k:
        kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))  # (B, V)
    return torch.multinomial(logits.softmax(dim=-1), 1, generator=generator)  # (B, 1)


# ----------------------------------------------------------------------------------------------------------------
# Checkpoint keys


def normalize_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A GPT-2 checkpoint's tensors (either key style) → this module's state dict, in nn.Linear layout.

    GPT-2 checkpoints always hold Conv1D weights, (in, out); nn.Linear wants (out, in), so those four are
    transposed. The tied lm_head is filled in from wte when the file leaves it out (save_pretrained does)."""
    out = {}
    for key, tensor in state.items():
        if key.endswith(MASK_BUFFERS):  # the causal mask, a constant; recomputed here
            continue
        if not key.startswith(("transformer.", "lm_head.")):
            key = "transformer." + key  # the original gpt2 files: h.0.attn..., wte.weight
        if key.endswith(CONV1D_WEIGHTS):
            tensor = tensor.t()
        out[key] = tensor.contiguous()
    out.setdefault("lm_head.weight", out.get("transformer.wte.weight"))
    return out


def to_gpt2_state_dict(model: GPT) -> dict[str, torch.Tensor]:
    """The inverse of normalize_state_dict: GPT-2's layout (Conv1D weights, no lm_head), as save_pretrained writes."""
    return {key: (t.t() if key.endswith(CONV1D_WEIGHTS) else t).detach().cpu().contiguous()
            for key, t in model.state_dict().items() if key != "lm_head.weight"}


def from_state_dict(config: GPTConfig, state: dict[str, torch.Tensor]) -> GPT:
    """Build a GPT and load a GPT-2-layout state dict strictly (every key used, none missing)."""
    model = GPT(config)
    model.load_state_dict(normalize_state_dict(state), strict=True)
    return model.eval()
