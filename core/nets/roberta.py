"""RoBERTa (Liu et al., 2019; names follow modeling_roberta.py): BERT's encoder, trained longer on more text with
dynamic masking and without next-sentence prediction. Two things differ in the network itself:

    positions   p_i = padding_idx + (number of non-pad tokens up to and including i), and p_i = padding_idx on a pad:
                the table starts after padding_idx (pad_token_id 1, so the first real token sits at row 2)
    segments    one segment embedding (type_vocab_size 1): "<s> A </s></s> B </s>" gives every token type id 0

and the heads (no pooler anywhere):

    masked LM        logits = W_e · LayerNorm(GELU(W_d h_i + b_d)) + b      (W_e: the word embeddings, tied)
    sentence classes v = tanh(W_d h_<s> + b_d), logits = W_out v + b_out    (a dense layer on <s>, not the pooler)
    token classes    softmax(W h_i + b);    span   start_i = S · h_i, end_j = E · h_j

The layers are core/nets/bert_encoder.py's; submodule names equal the checkpoint keys (``roberta.embeddings...``,
``lm_head.dense``, ``lm_head.layer_norm``, ``classifier.dense``, ``classifier.out_proj``).
"""
from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from core.nets.bert_encoder import (BertConfig, BertModel, Encoder, EncoderOutput, HeadOutput, PretrainedMixin,
                                    SpanOutput)


def config_from_dict(raw: dict) -> BertConfig:
    """BERT's config fields; positions are numbered from pad_token_id + 1, and RoBERTa never learned NSP."""
    config = BertConfig.from_dict(raw)
    return replace(config, position_offset=config.pad_token_id + 1, pretrained_with_nsp=False)


def position_ids(input_ids: torch.Tensor, padding_idx: int) -> torch.Tensor:
    """create_position_ids_from_input_ids: padding_idx + 1, + 2, ... over the real tokens; padding_idx on pads."""
    real = input_ids.ne(padding_idx).long()  # (B, T)
    return torch.cumsum(real, dim=1) * real + padding_idx  # (B, T)


class RobertaEmbeddings(nn.Module):
    """E = LayerNorm(word + token_type + position), the positions counted past the padding index."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.padding_idx = config.pad_token_id
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size,
                                                padding_idx=config.pad_token_id)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def components(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        """The three embeddings before they are summed (shown as heatmaps in the masked-LM tab)."""
        return {
            "token": self.word_embeddings(input_ids),  # (B, T, H)
            "segment": self.token_type_embeddings(token_type_ids),  # (B, T, H)
            "position": self.position_embeddings(position_ids(input_ids, self.padding_idx)),  # (B, T, H)
        }

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        parts = self.components(input_ids, token_type_ids)
        return self.LayerNorm(parts["token"] + parts["segment"] + parts["position"])  # (B, T, H)


class RobertaModel(BertModel):
    """BertModel with RoBERTa's embeddings (the encoder layers and the pooler are BERT's)."""

    embeddings_class = RobertaEmbeddings


class RobertaLMHead(nn.Module):
    """dense → GELU → LayerNorm → decoder (tied to the word embeddings) + its own bias."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, x):
        return self.decoder(self.layer_norm(F.gelu(self.dense(x)))) + self.bias  # (..., V)


class RobertaClassificationHead(nn.Module):
    """v = tanh(W_d h_<s> + b_d), then out_proj: the sentence vector is made here, not by a pooler."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)

    def sentence_vector(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))  # (B, H): <s>, the first token

    def forward(self, hidden):
        return self.out_proj(self.sentence_vector(hidden))  # (B, C)


class RobertaOnlyEncoder(Encoder):
    """RoBERTa's bare encoder (``roberta.*`` keys), read from any RoBERTa file."""

    base_prefix = "roberta"
    base_class = RobertaModel


class RobertaForMaskedLM(PretrainedMixin, nn.Module):
    base_prefix = "roberta"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.roberta = RobertaModel(config, add_pooling_layer=False)
        self.lm_head = RobertaLMHead(config)
        self.tie_weights()

    def output_embeddings(self):
        return self.lm_head.decoder

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The masked-LM head on some positions' final vectors: (..., H) → (..., V)."""
        return self.lm_head(hidden)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.roberta(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return HeadOutput(self.mlm_logits(encoded.last_hidden_state), encoded)  # (B, T, V)


class RobertaForTokenClassification(PretrainedMixin, nn.Module):
    base_prefix = "roberta"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.roberta = RobertaModel(config, add_pooling_layer=False)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.roberta(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return HeadOutput(self.classifier(encoded.last_hidden_state), encoded)  # (B, T, C)


class RobertaForSequenceClassification(PretrainedMixin, nn.Module):
    base_prefix = "roberta"
    sentence_vector_equation = "tanh(W_d h_<s> + b_d)"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.roberta = RobertaModel(config, add_pooling_layer=False)
        self.classifier = RobertaClassificationHead(config)

    def sentence_vector(self, encoded: EncoderOutput) -> torch.Tensor:
        """The vector the classifier's W reads: tanh(W_d h_<s> + b_d)."""
        return self.classifier.sentence_vector(encoded.last_hidden_state)  # (B, H)

    @property
    def sentence_classifier(self) -> nn.Linear:
        """W v + b: the layer that turns the sentence vector into one logit per label."""
        return self.classifier.out_proj

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.roberta(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return HeadOutput(self.sentence_classifier(self.sentence_vector(encoded)), encoded)  # (B, C)


class RobertaForQuestionAnswering(PretrainedMixin, nn.Module):
    base_prefix = "roberta"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.roberta = RobertaModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> SpanOutput:
        encoded = self.roberta(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        start, end = self.qa_outputs(encoded.last_hidden_state).unbind(-1)  # (B, T) each
        return SpanOutput(start, end, encoded)
