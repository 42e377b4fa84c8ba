"""BERT's task heads (seed §13–§14), on the encoder of core/nets/bert_encoder.py.

The masked-LM decoder tied to the word embeddings, next-sentence prediction, token and sequence classification,
and the span (start/end) head of extractive QA. Head submodule names equal the checkpoint keys
(``cls.predictions.transform.dense``, ``classifier``, ``qa_outputs``), so a checkpoint loads with
bert_encoder.normalize_state_dict and a strict ``load_state_dict``.

    masked LM        P(w | context) = softmax(W_e · LayerNorm(GELU(W_t h_i + b_t)) + b)     W_e: the word embeddings
    next sentence    P(IsNext) = softmax(W_nsp · tanh(W_p h_[CLS] + b_p))_0                    (the pooler)
    token classes    softmax(W h_i + b) over the labels, for every token i
    sentence classes softmax(W · tanh(W_p h_[CLS] + b_p) + b)
    span             start_i = S · h_i,  end_j = E · h_j
"""
from __future__ import annotations

import torch
from torch import nn

from core.nets.bert_encoder import (ACTIVATIONS, BertConfig, BertModel, Encoder, EncoderOutput, HeadOutput,
                                    PretrainedMixin, SpanOutput)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x):
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """Vocabulary logits; the decoder weight is the word-embedding matrix (tied), with its own bias."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, x):
        return self.decoder(self.transform(x)) + self.bias  # (B, T, V)


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)


class BertPreTrainingHeads(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        self.seq_relationship = nn.Linear(config.hidden_size, 2)


class BertOnlyEncoder(Encoder):
    """BERT's bare encoder (``bert.*`` keys), read from any BERT file: the attention views' model."""

    base_prefix = "bert"
    base_class = BertModel


class BertForMaskedLM(PretrainedMixin, nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        self.tie_weights()

    def output_embeddings(self):
        return self.cls.predictions.decoder

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The masked-LM head on some positions' final vectors: (..., H) → (..., V)."""
        return self.cls.predictions(hidden)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return HeadOutput(self.mlm_logits(encoded.last_hidden_state), encoded)


class BertForPreTraining(PretrainedMixin, nn.Module):
    """Masked LM + next-sentence prediction, as bert-base-uncased was trained."""

    needs_pooler = True
    has_next_sentence_head = True

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=True)
        self.cls = BertPreTrainingHeads(config)
        self.tie_weights()

    def output_embeddings(self):
        return self.cls.predictions.decoder

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The masked-LM head on some positions' final vectors: (..., H) → (..., V)."""
        return self.cls.predictions(hidden)

    def next_sentence_logits(self, encoded: EncoderOutput) -> torch.Tensor:
        """(B, 2) from the pooled [CLS] vector: index 0 = IsNext, 1 = NotNext."""
        return self.cls.seq_relationship(encoded.pooler_output)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return HeadOutput(self.mlm_logits(encoded.last_hidden_state), encoded, self.next_sentence_logits(encoded))


class BertForTokenClassification(PretrainedMixin, nn.Module):
    """A linear classifier on every token's final vector; softmax over labels gives the tag distribution."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return HeadOutput(self.classifier(encoded.last_hidden_state), encoded)  # (B, T, C)


class BertForSequenceClassification(PretrainedMixin, nn.Module):
    """softmax(W · pooled + b) over the labels: the [CLS] vector, pooled, read by one linear layer (seed §14)."""

    needs_pooler = True
    sentence_vector_equation = "tanh(W_p h_[CLS] + b_p)"  # the pooler, trained with next-sentence prediction

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=True)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def sentence_vector(self, encoded: EncoderOutput) -> torch.Tensor:
        """The vector the classifier's W reads: the pooled [CLS] vector tanh(W_p h_[CLS] + b_p)."""
        return encoded.pooler_output  # (B, H)

    @property
    def sentence_classifier(self) -> nn.Linear:
        """W v + b: the layer that turns the sentence vector into one logit per label."""
        return self.classifier

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return HeadOutput(self.classifier(self.sentence_vector(encoded)), encoded)  # (B, C)


class BertForQuestionAnswering(PretrainedMixin, nn.Module):
    """Two learned vectors S and E score every token as the answer's start and end (seed §14)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> SpanOutput:
        encoded = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        start, end = self.qa_outputs(encoded.last_hidden_state).unbind(-1)  # (B, T) each
        return SpanOutput(start, end, encoded)
