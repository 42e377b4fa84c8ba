"""DistilBERT (names follow modeling_distilbert.py): 6 layers, no segment embeddings, no pooler.

Same equations as BERT (core/nets/bert_encoder.py, whose shared parts it uses), different checkpoint names: ``q_lin``/``k_lin``/``v_lin``/``out_lin``,
``sa_layer_norm``, ``ffn.lin1``/``lin2``, ``output_layer_norm``. Positions may be the fixed sinusoids of
"Attention Is All You Need" (§11) when the config says ``sinusoidal_pos_embds``.
"""
from __future__ import annotations

import torch
from torch import nn

from core.nets.bert_encoder import (ACTIVATIONS, BertConfig, BlockParts, Encoder, EncoderOutput, HeadOutput,
                                    PretrainedMixin, SpanOutput, additive_attention_mask, attention)

def sinusoidal_table(num_positions: int, dim: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))  (seed §11)."""
    position = torch.arange(num_positions, dtype=torch.float64)[:, None]  # (P, 1)
    div = torch.pow(10000.0, torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # (d/2,)
    table = torch.zeros(num_positions, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position / div)
    table[:, 1::2] = torch.cos(position / div[: dim // 2])
    return table.float()


class DistilBertEmbeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        if config.sinusoidal_pos_embds:
            self.position_embeddings.weight.data.copy_(sinusoidal_table(config.max_position_embeddings,
                                                                        config.hidden_size))
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=1e-12)

    def components(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        return {"token": self.word_embeddings(input_ids), "position": self.position_embeddings(positions)[None]}

    def forward(self, input_ids, token_type_ids=None):
        parts = self.components(input_ids)
        return self.LayerNorm(parts["token"] + parts["position"])  # (B, T, H)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads, self.head_size = config.num_attention_heads, config.head_size
        self.q_lin = nn.Linear(config.hidden_size, config.hidden_size)
        self.k_lin = nn.Linear(config.hidden_size, config.hidden_size)
        self.v_lin = nn.Linear(config.hidden_size, config.hidden_size)
        self.out_lin = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x, additive_mask, need_probs):
        B, T, H = x.shape

        def heads(t):
            return t.view(B, T, self.num_heads, self.head_size).transpose(1, 2)  # (B, A, T, hs)

        context, probs = attention(heads(self.q_lin(x)), heads(self.k_lin(x)), heads(self.v_lin(x)),
                                   additive_mask, need_probs)
        return self.out_lin(context.transpose(1, 2).reshape(B, T, H)), probs


class FFN(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.lin1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.lin2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, x):
        return self.lin2(self.act(self.lin1(x)))


class TransformerBlock(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = MultiHeadSelfAttention(config)
        self.sa_layer_norm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.ffn = FFN(config)
        self.output_layer_norm = nn.LayerNorm(config.hidden_size, eps=1e-12)

    def forward(self, x, additive_mask, need_probs):
        attended, probs = self.attention(x, additive_mask, need_probs)
        x = self.sa_layer_norm(attended + x)
        return self.output_layer_norm(self.ffn(x) + x), probs

    def block_parts(self) -> BlockParts:
        a, f = self.attention, self.ffn
        return BlockParts(a.q_lin, a.k_lin, a.v_lin, a.out_lin, self.sa_layer_norm, f.lin1, f.act, f.lin2,
                          self.output_layer_norm)


class Transformer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList([TransformerBlock(config) for _ in range(config.num_hidden_layers)])


class DistilBertModel(nn.Module):
    pooler = None  # no pooler: DistilBERT was trained without next-sentence prediction

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = DistilBertEmbeddings(config)
        self.transformer = Transformer(config)

    @property
    def layers(self) -> nn.ModuleList:
        return self.transformer.layer

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> EncoderOutput:
        x = self.embeddings(input_ids)  # token_type_ids are ignored: DistilBERT has no segment embeddings
        mask = additive_attention_mask(attention_mask, x.dtype)
        hidden_states, attentions = [x] if output_hidden_states else [], []
        for layer in self.transformer.layer:
            x, probs = layer(x, mask, output_attentions)
            if output_hidden_states:  # kept only when asked: see BertModel.forward (core/nets/bert_encoder.py)
                hidden_states.append(x)
            if output_attentions:
                attentions.append(probs)
        return EncoderOutput(x, tuple(hidden_states), tuple(attentions), None)


class DistilBertOnlyEncoder(Encoder):
    """DistilBERT's bare encoder (``distilbert.*`` keys), read from any DistilBERT file."""

    base_prefix = "distilbert"
    base_class = DistilBertModel


class DistilBertForMaskedLM(PretrainedMixin, nn.Module):
    base_prefix = "distilbert"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.distilbert = DistilBertModel(config)
        self.vocab_transform = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.vocab_layer_norm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.vocab_projector = nn.Linear(config.hidden_size, config.vocab_size)
        self.tie_weights()

    def output_embeddings(self):
        return self.vocab_projector

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The masked-LM head on some positions' final vectors: (..., H) → (..., V)."""
        return self.vocab_projector(self.vocab_layer_norm(self.act(self.vocab_transform(hidden))))

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.distilbert(input_ids, attention_mask, None, output_attentions, output_hidden_states)
        return HeadOutput(self.mlm_logits(encoded.last_hidden_state), encoded)  # (B, T, V)


class DistilBertForTokenClassification(PretrainedMixin, nn.Module):
    base_prefix = "distilbert"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.distilbert = DistilBertModel(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.distilbert(input_ids, attention_mask, None, output_attentions, output_hidden_states)
        return HeadOutput(self.classifier(encoded.last_hidden_state), encoded)


class DistilBertForSequenceClassification(PretrainedMixin, nn.Module):
    """h_[CLS] → ReLU(pre_classifier) → classifier: DistilBERT has no pooler, so its head adds one hidden layer."""

    base_prefix = "distilbert"
    sentence_vector_equation = "ReLU(W_pre h_[CLS] + b_pre)"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.distilbert = DistilBertModel(config)
        self.pre_classifier = nn.Linear(config.hidden_size, config.hidden_size)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def sentence_vector(self, encoded: EncoderOutput) -> torch.Tensor:
        """The vector the classifier's W reads: ReLU(W_pre h_[CLS] + b_pre)."""
        return torch.relu(self.pre_classifier(encoded.last_hidden_state[:, 0]))  # (B, H)

    @property
    def sentence_classifier(self) -> nn.Linear:
        """W v + b: the layer that turns the sentence vector into one logit per label."""
        return self.classifier

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.distilbert(input_ids, attention_mask, None, output_attentions, output_hidden_states)
        return HeadOutput(self.classifier(self.sentence_vector(encoded)), encoded)  # (B, C)


class DistilBertForQuestionAnswering(PretrainedMixin, nn.Module):
    base_prefix = "distilbert"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.distilbert = DistilBertModel(config)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> SpanOutput:
        encoded = self.distilbert(input_ids, attention_mask, None, output_attentions, output_hidden_states)
        start, end = self.qa_outputs(encoded.last_hidden_state).unbind(-1)
        return SpanOutput(start, end, encoded)
