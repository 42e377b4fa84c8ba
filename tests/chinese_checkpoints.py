"""Tiny random Chinese BERT checkpoints laid out like the real Chinese ones the QA and classification tabs offer, and a
local Hub that serves them under the real ids (so they load through the registry, never from the real Hub).

The real checkpoints (checked on their Hub pages): ``uer/roberta-base-chinese-extractive-qa`` ships config.json
(model_type bert, BertForQuestionAnswering), pytorch_model.bin only, vocab.txt, tokenizer_config.json and
special_tokens_map.json; ``uer/roberta-base-finetuned-dianping-chinese`` is a BertForSequenceClassification whose
id2label is "negative (stars 1, 2 and 3)" / "positive (stars 4 and 5)"; ``IDEA-CCNL/Erlangshen-Roberta-110M-
Similarity`` is a BertForSequenceClassification with config.json, weights and vocab.txt only. The tiny ones keep
those file sets and label sets, with a small character vocabulary and random (seeded) weights written by
transformers (the test-only reference).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from core.loading import resolve

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TEXTS = ["今天的最高温度是多少", "天气预报显示今天最高温度 37 摄氏度", "我很喜欢你", "我很中意你",
         "菜很好吃，服务也很热情，下次还会再来。", "海大球星饭茶吃？！"]
DIANPING_LABELS = {0: "negative (stars 1, 2 and 3)", 1: "positive (stars 4 and 5)"}


def vocabulary() -> list[str]:
    """WordPiece entries: the specials, "37" and its digits, and every character of the seed's Chinese texts."""
    chars = sorted({ch for text in TEXTS for ch in text if not ch.isspace() and not ch.isdigit()})
    return SPECIALS + ["37", *"0123456789", *chars]


def write(folder: Path, class_name: str, *, safetensors: bool, tokenizer_config: bool, seed: int = 0,
          **overrides) -> Path:
    """A tiny ``class_name`` (transformers) in ``folder`` with a Chinese vocab.txt-only tokenizer."""
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    vocab = vocabulary()
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    if tokenizer_config:  # as uer's repos ship them
        (folder / "tokenizer_config.json").write_text(json.dumps(
            {"do_lower_case": False, "tokenize_chinese_chars": True, "model_max_length": 512}), encoding="utf-8")
        (folder / "special_tokens_map.json").write_text(json.dumps(
            {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
             "mask_token": "[MASK]"}), encoding="utf-8")
    torch.manual_seed(seed)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37, **overrides)
    model = getattr(transformers, class_name)(config).eval()
    if safetensors:
        model.save_pretrained(folder)
    else:  # only pytorch_model.bin, as uer/roberta-base-chinese-extractive-qa
        model.config.save_pretrained(folder)
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder


MLM_TEXTS = ["今天天气很[MASK]。", "今天天气很[MASK]，我们不得不取消户外运动。", "我学中文", "北京大学"]


def write_mlm(folder: Path, texts: list[str] = MLM_TEXTS) -> Path:
    """A tiny random BertForPreTraining with a Chinese-character vocabulary (as bert-base-chinese has: one entry per
    character, [unused] slots, do_lower_case false), written by transformers. vocab.txt and tokenizer_config.json
    only (no tokenizer.json), as some Chinese repos ship: the registry builds the WordPiece pipeline from the
    vocabulary, transformers' AutoTokenizer does the same."""
    import transformers

    characters = sorted(set("".join(texts).replace("[MASK]", "") + "好坏差冷热晴雨我你他的了是不很天气学中文北京大"))
    specials = ["[PAD]", *[f"[unused{i}]" for i in range(1, 10)], "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = specials + characters + ["，", "。", "a", "##a"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37)
    transformers.BertForPreTraining(config).eval().save_pretrained(folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False,
                                                              "tokenizer_class": "BertTokenizer"}))
    return folder


# ckiplab/bert-base-chinese-ner's id2label (its config.json): O, then B-, I-, E-, S- over OntoNotes' 18 types in
# alphabetical order, 73 labels. Checked against the published config before naming the checkpoint.
ONTONOTES = ["CARDINAL", "DATE", "EVENT", "FAC", "GPE", "LANGUAGE", "LAW", "LOC", "MONEY", "NORP", "ORDINAL", "ORG",
             "PERCENT", "PERSON", "PRODUCT", "QUANTITY", "TIME", "WORK_OF_ART"]
CKIP_LABELS = ["O"] + [f"{prefix}-{kind}" for prefix in "BIES" for kind in ONTONOTES]


def write_ner(folder: Path, text: str) -> Path:
    """A tiny random BertForTokenClassification with ckiplab's 73 labels and its file layout: config.json,
    pytorch_model.bin (no safetensors), vocab.txt, tokenizer_config.json and special_tokens_map.json, no
    tokenizer.json. The vocabulary is ``text``'s Chinese characters and a few more (bert-base-chinese's kind: one
    entry per character)."""
    import transformers

    characters = sorted(set(text + "愛發講今天气很好北京大学中文"))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *characters, "a", "##a"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False,
                                                              "tokenizer_class": "BertTokenizerFast"}))
    (folder / "special_tokens_map.json").write_text(json.dumps({"unk_token": "[UNK]", "sep_token": "[SEP]",
                                                                "pad_token": "[PAD]", "cls_token": "[CLS]",
                                                                "mask_token": "[MASK]"}))
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37, num_labels=len(CKIP_LABELS),
                                     id2label=dict(enumerate(CKIP_LABELS)),
                                     label2id={label: i for i, label in enumerate(CKIP_LABELS)})
    model = transformers.BertForTokenClassification(config).eval()
    model.save_pretrained(folder)  # config.json; the weights go into a .bin, as ckiplab ships them
    (folder / "model.safetensors").unlink()
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    assert (folder / "pytorch_model.bin").is_file() and not (folder / "model.safetensors").exists()
    return folder


def serve(monkeypatch, tmp_path, repos: dict[str, Path], timeout: float = 5.0):
    """A local Hub (tests/hub_server.py) serving ``repos`` {id: folder}, an empty HF cache, online, a ``timeout``
    deadline for every Hub call. Returns the server; ``stop`` closes it and restores the deadline and the cache."""
    from core.loading import hub, registry
    from tests.hub_server import HubServer

    server = HubServer()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(resolve, "_offline_flag", False)
    monkeypatch.setattr(resolve, "settings", resolve.Settings())
    hub.set_timeout(timeout)
    registry.clear_cache()
    for model_id, folder in repos.items():
        server.add_repo(model_id, folder)
    return server


def stop(server) -> None:
    from core.loading import hub, registry

    server.close()
    hub.set_timeout(None)
    registry.clear_cache()
