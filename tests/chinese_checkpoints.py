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


def serve(monkeypatch, tmp_path, repos: dict[str, Path], timeout: float = 5.0):
    """A local Hub (tests/hub_server.py) serving ``repos`` {id: folder}, an empty HF cache, online, a ``timeout``
    deadline for every Hub call. Returns the server; ``stop`` closes it and restores the deadline and the cache."""
    from core import hub, registry
    from tests.hub_server import HubServer

    server = HubServer()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(registry, "_offline_flag", False)
    monkeypatch.setattr(registry, "settings", registry.Settings())
    hub.set_timeout(timeout)
    registry.clear_cache()
    for model_id, folder in repos.items():
        server.add_repo(model_id, folder)
    return server


def stop(server) -> None:
    from core import hub, registry

    server.close()
    hub.set_timeout(None)
    registry.clear_cache()
