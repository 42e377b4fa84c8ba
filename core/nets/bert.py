"""BERT's task heads and checkpoint loading, on the encoder of core/nets/bert_encoder.py.

Heads (seed §13–§14): the masked-LM decoder tied to the word embeddings, next-sentence prediction, token and sequence
classification, and the span (start/end) head of extractive QA; then ``from_pretrained`` and the key normalisation
that makes loading a strict ``load_state_dict``. Head submodule names equal the checkpoint keys
(``cls.predictions.transform.dense``, ``classifier``, ``qa_outputs``). Everything in bert_encoder is re-exported here,
so ``core.nets.bert`` stays the one import for the family.
"""
from __future__ import annotations


import torch
from torch import nn

from core.nets.bert_encoder import (  # noqa: F401 - re-exported: core.nets.bert is the family's one import
    ACTIVATIONS, BertAttention, BertConfig, BertEmbeddings, BertEncoder, BertIntermediate, BertLayer, BertModel,
    BertOutput, BertPooler, BertSelfAttention, BertSelfOutput, EncoderOutput, HeadOutput, SpanOutput,
    additive_attention_mask, attention,
)


# ------------------------------------------------------------------------------------------------------------------
# BERT heads


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


class BertOnlyNSPHead(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.seq_relationship = nn.Linear(config.hidden_size, 2)


class PretrainedMixin:
    """Loading, device placement and the tied decoder shared by every model class."""

    base_prefix = "bert"
    config: BertConfig

    def tie_weights(self) -> None:
        decoder = self.output_embeddings()
        if decoder is not None and self.config.tie_word_embeddings:
            decoder.weight = self.input_embeddings().weight

    def input_embeddings(self) -> nn.Embedding:
        return getattr(self, self.base_prefix).embeddings.word_embeddings

    def output_embeddings(self) -> nn.Linear | None:
        return None

    @classmethod
    def from_pretrained(cls, model_id, device: torch.device | str | None = None):
        """Load through the registry (the one loading path): resolve, check, build ``cls``, load strictly."""
        from core import registry

        return registry.from_pretrained(model_id, cls, device)


class BertForMaskedLM(PretrainedMixin, nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        self.tie_weights()

    def output_embeddings(self):
        return self.cls.predictions.decoder

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return HeadOutput(self.cls.predictions(encoded.last_hidden_state), encoded)


class BertForPreTraining(PretrainedMixin, nn.Module):
    """Masked LM + next-sentence prediction, as bert-base-uncased was trained."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=True)
        self.cls = BertPreTrainingHeads(config)
        self.tie_weights()

    def output_embeddings(self):
        return self.cls.predictions.decoder

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        return HeadOutput(self.cls.predictions(encoded.last_hidden_state), encoded,
                          self.cls.seq_relationship(encoded.pooler_output))


class BertForNextSentencePrediction(PretrainedMixin, nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=True)
        self.cls = BertOnlyNSPHead(config)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> HeadOutput:
        encoded = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)
        nsp = self.cls.seq_relationship(encoded.pooler_output)  # (B, 2)
        return HeadOutput(nsp, encoded, nsp)


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

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=True)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def sentence_vector(self, encoded: EncoderOutput) -> torch.Tensor:
        """The vector the classifier's W reads: the pooled [CLS] vector tanh(W_p h_[CLS] + b_p)."""
        return encoded.pooler_output  # (B, H)

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


class Encoder(PretrainedMixin, nn.Module):
    """A bare encoder (BertModel or DistilBertModel) under its checkpoint prefix, for the attention views.

    Head weights in the file (cls.*, classifier.*, ...) are the only keys allowed to go unused."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        from core.nets.distilbert import DistilBertModel  # distilbert.py builds on this module

        self.base_prefix = "distilbert" if config.model_type == "distilbert" else "bert"
        base = DistilBertModel(config) if config.model_type == "distilbert" else BertModel(config)
        setattr(self, self.base_prefix, base)

    @property
    def base(self) -> nn.Module:
        return getattr(self, self.base_prefix)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=True,
                output_hidden_states=True) -> EncoderOutput:
        return self.base(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states)


# ------------------------------------------------------------------------------------------------------------------
# Loading: normalise the few ways checkpoints differ, then load strictly.

HEAD_KEY_PREFIXES = ("cls.", "classifier.", "qa_outputs.", "pre_classifier.", "vocab_transform.",
                     "vocab_layer_norm.", "vocab_projector.")


def normalize_state_dict(state: dict[str, torch.Tensor], model: nn.Module) -> dict[str, torch.Tensor]:
    """Map checkpoint keys onto ``model``'s parameter names.

    Handles: a missing or extra ``bert.``/``distilbert.`` prefix (BertModel files vs BertFor* files), legacy
    ``LayerNorm.gamma``/``beta`` names, ``position_ids`` buffers, and the decoder weight that tied checkpoints leave
    out (or keep as a copy of the embeddings). Whatever remains must match exactly, or loading fails.
    """
    prefix = getattr(model, "base_prefix", "bert")
    expected = set(model.state_dict()) | {f"{prefix}.pooler.dense.weight", f"{prefix}.pooler.dense.bias"}
    out: dict[str, torch.Tensor] = {}
    for key, tensor in state.items():
        key = key.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        if key.endswith("position_ids"):
            continue  # a buffer (0..511) that older transformers versions saved; we compute positions on the fly
        if key not in expected and f"{prefix}.{key}" in expected:
            key = f"{prefix}.{key}"  # file saved from the bare BertModel/DistilBertModel
        elif key not in expected and key.startswith(f"{prefix}.") and key[len(prefix) + 1:] in expected:
            key = key[len(prefix) + 1:]  # file from a BertFor* model, loaded into a bare model
        out[key] = tensor
    if isinstance(model, Encoder):  # a bare encoder may be read out of any head model's file
        out = {k: v for k, v in out.items() if not k.startswith(HEAD_KEY_PREFIXES)}
    base = getattr(model, prefix, None)
    if isinstance(base, BertModel):
        # The pooler is optional in files: token-level heads are often saved with one (unused) or without one.
        # Build or drop it so that every tensor in the file has a home and nothing the model needs is absent.
        has_pooler = f"{prefix}.pooler.dense.weight" in out
        if has_pooler and base.pooler is None:
            base.pooler = BertPooler(model.config)
        elif not has_pooler and base.pooler is not None and not isinstance(model, (BertForPreTraining,
                                                                               BertForNextSentencePrediction,
                                                                               BertForSequenceClassification)):
            base.pooler = None
    decoder = model.output_embeddings() if isinstance(model, PretrainedMixin) else None
    if decoder is not None and model.config.tie_word_embeddings:
        decoder_key = next(k for k, p in model.named_parameters(remove_duplicate=False) if p is decoder.weight
                           and not k.startswith(prefix))
        out.pop(decoder_key, None)  # tied: the embeddings are the decoder
        out.pop("cls.predictions.decoder.bias", None)  # old files keep a copy of cls.predictions.bias here
    return out
