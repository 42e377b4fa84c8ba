"""Model families: ``config.json``'s ``model_type`` -> how to read the config, name the checkpoint keys, pick the
class for a task, and read the tokenizer. The registry (core/registry.py) dispatches through ``FAMILIES``; adding a
family is one entry here (its nn.Module code goes in core/nets/<family>.py).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from core.errors import ModelUnavailableError, UserInputError
from core.nets import bert, distilbert, gpt
from core.tokenizer import ByteBPETokenizer, WordPieceGPTTokenizer, WordPieceTokenizer
from core.weights import CheckpointMismatchError, raise_if_mismatched


@dataclass(frozen=True)
class Family:
    parse_config: Callable[[dict], Any]
    normalize_keys: Callable[[dict, nn.Module], dict]  # checkpoint keys -> the model's parameter names
    classes: dict[str, Callable[[Any, set[str]], type[nn.Module]]]  # task -> pick(config, keys in the file)
    base: Callable[[Any], nn.Module]  # built on the meta device to count parameters before any weights are fetched
    tokenizer: Callable[[Path], Any]
    tokenizer_files: tuple[str, ...]  # fetched when the repo has them; either of the first two suffices


def _bert_mlm(config, keys):
    if config.model_type == "distilbert":
        return distilbert.DistilBertForMaskedLM
    if not any(k.endswith("predictions.transform.dense.weight") for k in keys):
        raise UserInputError("registry.no_mlm_head")
    return bert.BertForPreTraining if "cls.seq_relationship.weight" in keys else bert.BertForMaskedLM


def _bert_ner(config, keys):
    if not any(k.startswith("classifier.") for k in keys):
        raise UserInputError("registry.no_token_head")
    distil = config.model_type == "distilbert"
    return distilbert.DistilBertForTokenClassification if distil else bert.BertForTokenClassification


def _bert_qa(config, keys):
    if not any(k.startswith("qa_outputs.") for k in keys):
        raise UserInputError("registry.no_qa_head")
    distil = config.model_type == "distilbert"
    return distilbert.DistilBertForQuestionAnswering if distil else bert.BertForQuestionAnswering


def _bert_classify(config, keys):
    if not any(k.startswith("classifier.") for k in keys):
        raise UserInputError("registry.no_sequence_head")
    if any("TokenClassification" in name for name in config.architectures):
        raise UserInputError("registry.tags_tokens")
    if config.model_type == "distilbert":
        return distilbert.DistilBertForSequenceClassification
    if not any(k.endswith("pooler.dense.weight") for k in keys):
        raise UserInputError("registry.no_pooler")
    return bert.BertForSequenceClassification


_BERT = Family(
    parse_config=bert.BertConfig.from_dict, normalize_keys=bert.normalize_state_dict,
    classes={"encoder": lambda config, keys: bert.Encoder, "mlm": _bert_mlm, "ner": _bert_ner, "qa": _bert_qa,
             "classify": _bert_classify},
    base=bert.Encoder, tokenizer=WordPieceTokenizer.from_directory,
    tokenizer_files=("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"),
)


def _gpt_config(raw: dict) -> gpt.GPTConfig:
    try:
        return gpt.GPTConfig.from_dict(raw)
    except ValueError as exc:  # a GPT-2 option core/nets/gpt.py does not implement
        raise ModelUnavailableError("registry.gpt2_unsupported", detail=str(exc)) from None


def _gpt_tokenizer(directory: Path) -> ByteBPETokenizer | WordPieceGPTTokenizer:
    """tokenizer.json (byte-level BPE: gpt2, distilgpt2) or only a BERT vocab.txt (uer/gpt2-chinese-...)."""
    if (directory / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        return ByteBPETokenizer(Tokenizer.from_file(str(directory / "tokenizer.json")))
    if (directory / "vocab.txt").is_file():
        return WordPieceGPTTokenizer(WordPieceTokenizer.from_directory(directory))
    raise FileNotFoundError("neither tokenizer.json nor vocab.txt")


_GPT2 = Family(
    parse_config=_gpt_config, normalize_keys=lambda state, model: gpt.normalize_state_dict(state),
    classes={"causal-lm": lambda config, keys: gpt.GPT}, base=gpt.GPT, tokenizer=_gpt_tokenizer,
    tokenizer_files=("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"),
)
FAMILIES: dict[str, Family] = {"bert": _BERT, "distilbert": _BERT, "gpt2": _GPT2}


def family_of(config: dict, model_id: str) -> Family:
    model_type = str(config.get("model_type") or "")
    family = FAMILIES.get(model_type)
    if family is None:
        raise UserInputError("registry.unsupported_type", model=model_id, model_type=model_type[:40] or "unknown",
                             families=", ".join(sorted(FAMILIES)))
    return family


def estimated_bytes(config: dict, model_id: str) -> int:
    """fp32 bytes of the family's base model, counted on the meta device (nothing is allocated)."""
    return _counted_bytes(json.dumps(config, sort_keys=True, default=str), model_id)


@functools.lru_cache(maxsize=64)
def _counted_bytes(config_json: str, model_id: str) -> int:
    """estimated_bytes, once per distinct config: every request for a cached model checks its size again, and
    building the skeleton took ~12% of the server's CPU under the 64-user classroom load (py-spy)."""
    config = json.loads(config_json)
    family = family_of(config, model_id)
    try:
        with torch.device("meta"):
            skeleton = family.base(family.parse_config(config))
    except Exception as exc:  # noqa: BLE001 - a config our classes cannot build is the checkpoint's fault
        raise ModelUnavailableError("registry.config_unbuildable", model=model_id, error=type(exc).__name__) from exc
    return 4 * sum(p.numel() for p in skeleton.parameters())


def shared_parameters(model: nn.Module) -> list[list[str]]:
    """Groups of names that share one parameter (tied weights), the name that owns it first."""
    groups: dict[int, list[str]] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(name)
    return [names for names in groups.values() if len(names) > 1]


def tie(model: nn.Module, groups: list[list[str]]) -> None:
    """Make every name of a group point at its first name's parameter again (after to_empty or an assign load)."""
    for first, *others in groups:
        param = model.get_parameter(first)
        for name in others:
            owner, _, attr = name.rpartition(".")
            setattr(model.get_submodule(owner), attr, param)


def _normalizer(model: nn.Module) -> Callable[[dict, nn.Module], dict]:
    config = getattr(model, "config", None)
    family = _GPT2 if isinstance(model, gpt.GPT) else FAMILIES.get(getattr(config, "model_type", "bert"))
    return family.normalize_keys if family else bert.normalize_state_dict


def load_checkpoint_into(model: nn.Module, state: dict[str, torch.Tensor],
                         normalize: Callable[[dict, nn.Module], dict] | None = None) -> None:
    """Normalise keys (``normalize``: the family's; default from the model's config), check every shape, then a
    strict load; mismatches raise with the key names."""
    groups = shared_parameters(model)
    state = (normalize or _normalizer(model))(state, model)
    tied = raise_if_mismatched(model, {k: v.shape for k, v in state.items()})
    expected = model.state_dict()
    state = {k: v.to(expected[k].dtype) for k, v in state.items() if k not in tied}  # fp16 files load as fp32
    # assign=True: the model takes the file's tensors instead of copying them (-1.2 s for bert-base on 2 cores).
    result = model.load_state_dict(state, strict=False, assign=True)
    leftover = [k for k in result.missing_keys if k not in tied]
    if leftover or result.unexpected_keys:  # cannot happen after the checks above; kept as the strictness proof
        raise CheckpointMismatchError(f"missing {leftover}, unexpected {result.unexpected_keys}")
    tie(model, groups)  # assign=True replaced the owners; the tied names follow them again
