"""Sentence and sentence-pair classification with a fine-tuned BERT (seed §14.1–§14.2).

One input sequence, ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``, segment id 0 for ``[CLS] A [SEP]`` and 1 for
``B [SEP]``. The encoder turns it into final vectors h_0 … h_{T-1}; the classifier reads one sentence vector v:

    BERT        v = tanh(W_p h_[CLS] + b_p)            (the pooler, trained with next-sentence prediction)
    DistilBERT  v = ReLU(W_pre h_[CLS] + b_pre)        (no pooler; the head has its own hidden layer)
    all         logits z = W v + b,   W: C × H          P(label c) = softmax(z)_c = exp(z_c) / Σ_k exp(z_k)

Each head says which v it reads (``sentence_vector``, with its equation) and which layer is W (core/nets/).

Label names come from the checkpoint's ``config.json`` (``id2label``). A few popular checkpoints only say
``LABEL_0``/``LABEL_1`` there; for those the display names come from the dataset they were trained on (GLUE's
convention), and the result says so. Scores follow transformers' text-classification pipeline: softmax over the
labels, or a sigmoid when the checkpoint has a single output or is multi-label, so labels and scores are equal.

A pair longer than the model's window is cut with ``longest_first`` (the longer side loses tokens first), and the
cut is reported. Fine-tuning a classifier offline on MiniLM is core/tasks/finetune.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.loading import registry
from core.loading.checkpoints import COLA_ID, MRPC_ID, SIMILARITY_ZH_ID, model_id_or_default
from core.text.errors import UserInputError
from core.text.i18n import text
from core.text.limits import MAX_MODEL_TOKENS, MAX_TEXT_CHARS
from core.text.textio import normalize_text
from core.text.tokenizer import WordPieceEncoding

# Display names for checkpoints whose config.json only says LABEL_0 / LABEL_1 (from the dataset's convention), as
# keys of the translation tables: (one key per class index, the key of where the names come from).
KNOWN_LABELS = {
    MRPC_ID: (["classify.labels_mrpc_0", "classify.labels_mrpc_1"], "classify.labels_mrpc_source"),
    COLA_ID: (["classify.labels_cola_0", "classify.labels_cola_1"], "classify.labels_cola_source"),
    SIMILARITY_ZH_ID: (["classify.labels_similar_0", "classify.labels_similar_1"], "classify.labels_similar_source"),
}


@dataclass
class ClassifyResult:
    text_a: str
    text_b: str | None
    encoding: WordPieceEncoding  # tokens, segment ids, truncation
    vector_name: str  # which vector the classifier reads: its equation, "tanh(W_p h_[CLS] + b_p)"
    vector: np.ndarray  # (H,) v
    weight: np.ndarray  # (C, H) W
    bias: np.ndarray  # (C,) b
    logits: np.ndarray  # (C,) W v + b
    probs: np.ndarray  # (C,) softmax (or sigmoid) of the logits
    labels: list[str]  # display name per class index
    label_note: str  # where the names came from
    function: str  # "softmax" or "sigmoid"
    badge: str

    @property
    def ranked(self) -> list[dict]:
        """[{"label", "score"}] best first: what transformers' pipeline(..., top_k=None) returns."""
        order = np.argsort(-self.probs, kind="stable")
        return [{"label": self.labels[i], "score": float(self.probs[i])} for i in order]


def check_texts(text_a: str | None, text_b: str | None, pair: bool) -> tuple[str, str | None]:
    """Both sides as the model will read them; an empty side or an over-long text gets a clear message."""
    text_a = normalize_text(text_a or "").replace("\r", " ").strip()
    text_b = normalize_text(text_b or "").replace("\r", " ").strip() if pair else None
    if not text_a:
        raise UserInputError("classify.error_empty_a")
    if pair and not text_b:
        raise UserInputError("classify.error_empty_b")
    for key, side in (("classify.error_long_a", text_a), ("classify.error_long_b", text_b or "")):
        if len(side) > MAX_TEXT_CHARS:
            raise UserInputError(key, chars=f"{len(side):,}", limit=f"{MAX_TEXT_CHARS:,}")
    return text_a, text_b


def label_names(model_id: str, config) -> tuple[list[str], str]:
    """One name per class index, and a note saying where the names came from."""
    count = max(int(config.num_labels), 1)
    names = [config.id2label.get(i, f"LABEL_{i}") for i in range(count)]
    generic = all(name == f"LABEL_{i}" for i, name in enumerate(names))
    if generic and model_id in KNOWN_LABELS and len(KNOWN_LABELS[model_id][0]) == count:
        known, source = KNOWN_LABELS[model_id]
        return [text(key) for key in known], text("classify.labels_known", last=count - 1, source=text(source))
    return names, text("classify.labels_from_config")


def _encode(tokenizer, text_a: str, text_b: str | None, max_length: int | None) -> WordPieceEncoding:
    limit = min(tokenizer.model_max_length, MAX_MODEL_TOKENS)
    max_length = int(max_length or limit)
    if not 8 <= max_length <= limit:
        raise UserInputError("classify.error_length_range", limit=limit, length=max_length)
    encoding = tokenizer.encode(text_a, text_b, max_length=max_length)
    content = [t for t, special in zip(encoding.tokens, encoding.special_tokens_mask) if not special]
    if not content:
        raise UserInputError("classify.error_no_tokens")
    return encoding


def input_layout(text_a: str | None, text_b: str | None = None, model_id: str | None = None,
                 max_length: int | None = None, pair: bool | None = None) -> tuple[WordPieceEncoding, str]:
    """``[CLS] A [SEP] B [SEP]`` with segment ids, without running a model; works offline (MiniLM's tokenizer
    stands in when the checkpoint is not here). Returns the encoding and a line naming the tokenizer."""
    pair = bool(text_b) if pair is None else pair
    text_a, text_b = check_texts(text_a, text_b, pair)
    model_id = model_id_or_default("classify", model_id)
    tokenizer, _, missing = registry.tokenizer_or_fallback(model_id)
    return _encode(tokenizer, text_a, text_b, max_length), registry.tokens_line(model_id, missing)


def classify(text_a: str | None, text_b: str | None = None, model_id: str | None = None,
             max_length: int | None = None, pair: bool | None = None) -> ClassifyResult:
    """Run a *ForSequenceClassification checkpoint on one sentence or a pair; everything the tab shows."""
    pair = bool(text_b) if pair is None else pair
    text_a, text_b = check_texts(text_a, text_b, pair)
    loaded = registry.load("classify", model_id)
    encoding = _encode(loaded.tokenizer, text_a, text_b, max_length)
    model = loaded.model
    with torch.inference_mode():
        ids = torch.tensor([encoding.ids], device=loaded.device)  # (1, T)
        segments = torch.tensor([encoding.segment_ids], device=loaded.device)  # (1, T)
        encoded = model.base(ids, None, segments, False)
        vector = model.sentence_vector(encoded)  # (1, H)
        logits = model.sentence_classifier(vector)[0].float()  # (C,)
    config = loaded.config
    multi = config.problem_type == "multi_label_classification"
    function = "sigmoid" if logits.numel() == 1 or multi else "softmax"
    probs = logits.sigmoid() if function == "sigmoid" else logits.softmax(-1)
    labels, note = label_names(loaded.files.model_id, config)
    layer = model.sentence_classifier
    return ClassifyResult(
        text_a=text_a, text_b=text_b, encoding=encoding, vector_name=model.sentence_vector_equation,
        vector=vector[0].float().cpu().numpy(), weight=layer.weight.detach().float().cpu().numpy(),
        bias=layer.bias.detach().float().cpu().numpy(), logits=logits.cpu().numpy(),
        probs=probs.cpu().numpy(), labels=labels, label_note=note, function=function, badge=loaded.badge)
