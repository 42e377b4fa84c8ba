"""Model families: ``config.json``'s ``model_type`` -> how to read the config, map the checkpoint keys, pick the
class for a task, and read the tokenizer.

core/loading/resolve.py asks ``family_of`` before it fetches any weights (an unsupported type is refused from config.json
alone) and ``estimated_bytes`` for the size cap; core/loading/registry.py builds the class ``classes[task]`` picks. A
family's nn.Module code is one file in core/nets/, imported here on first use (core/loading/lazy.py), so reading this table
does not import torch. Adding a family is one file in core/nets/, one ``Family`` below and its tokenizer rule:

    model_type   nets file                  tasks                                     tokenizer
    bert         core/nets/bert.py          encoder, mlm (+ NSP), ner, qa, classify   WordPiece
    distilbert   core/nets/distilbert.py    encoder, mlm, ner, qa, classify           WordPiece
    roberta      core/nets/roberta.py       encoder, mlm, ner, qa, classify           byte-level BPE
    gpt2         core/nets/gpt.py           causal-lm                                 byte-level BPE, or vocab.txt
    t5           core/nets/t5.py            seq2seq                                   SentencePiece (tokenizer.json)

A class is picked from the keys the file holds: bert-base-uncased's file carries the NSP head, so its masked LM
loads as BertForPreTraining; a file without the task's head is refused with a message that says so.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from core.text.errors import ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import
from core.text.tokenizer import ByteBPETokenizer, SentencePieceTokenizer, WordPieceGPTTokenizer, WordPieceTokenizer

# the network code, imported when a model is built or counted (core/loading/lazy.py): this table is read at start-up
bert_encoder = lazy_import("core.nets.bert_encoder")
bert = lazy_import("core.nets.bert")
distilbert = lazy_import("core.nets.distilbert")
roberta = lazy_import("core.nets.roberta")
gpt = lazy_import("core.nets.gpt")
t5 = lazy_import("core.nets.t5")

Pick = Callable[[Any, set[str]], type]  # (parsed config, keys in the file) -> the nn.Module class to build


@dataclass(frozen=True)
class Family:
    parse_config: Callable[[dict], Any]
    normalize_keys: Callable[[dict, Any], dict]  # (checkpoint state, model) -> state under the model's names
    classes: dict[str, Pick]  # task -> pick
    base: Callable[[Any], Any]  # built on the meta device to count parameters before any weights are fetched
    tokenizer: Callable[[Path], Any]
    tokenizer_files: tuple[str, ...]  # fetched when the repo has them; either of the first two suffices


def head(class_name: Callable[[], type], marker: str, missing: str) -> Pick:
    """A pick that returns ``class_name()`` when some key of the file contains ``marker`` (the head's weights), and
    refuses the file with the message key ``missing`` otherwise."""
    def pick(config, keys: set[str]) -> type:
        if not any(marker in key for key in keys):
            raise UserInputError(missing)
        return class_name()
    return pick


def sequence_head(class_name: Callable[[], type], pooled: bool = False) -> Pick:
    """Sequence classification: a ``classifier`` (and, when the head reads it, a pooler) not trained on tokens."""
    def pick(config, keys: set[str]) -> type:
        if not any(key.startswith("classifier.") for key in keys):
            raise UserInputError("registry.no_sequence_head")
        if any("TokenClassification" in name for name in config.architectures):
            raise UserInputError("registry.tags_tokens")
        if pooled and not any(key.endswith("pooler.dense.weight") for key in keys):
            raise UserInputError("registry.no_pooler")
        return class_name()
    return pick


BERT_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json")


def _bert_mlm(config, keys: set[str]) -> type:
    if not any(key.endswith("predictions.transform.dense.weight") for key in keys):
        raise UserInputError("registry.no_mlm_head")
    return bert.BertForPreTraining if "cls.seq_relationship.weight" in keys else bert.BertForMaskedLM


BERT = Family(
    parse_config=lambda raw: bert_encoder.BertConfig.from_dict(raw),
    normalize_keys=lambda state, model: bert_encoder.normalize_state_dict(state, model),
    classes={"encoder": lambda config, keys: bert.BertOnlyEncoder, "mlm": _bert_mlm,
             "ner": head(lambda: bert.BertForTokenClassification, "classifier.", "registry.no_token_head"),
             "qa": head(lambda: bert.BertForQuestionAnswering, "qa_outputs.", "registry.no_qa_head"),
             "classify": sequence_head(lambda: bert.BertForSequenceClassification, pooled=True)},
    base=lambda config: bert.BertOnlyEncoder(config), tokenizer=WordPieceTokenizer.from_directory,
    tokenizer_files=BERT_TOKENIZER_FILES,
)

DISTILBERT = Family(
    parse_config=BERT.parse_config, normalize_keys=BERT.normalize_keys,
    classes={"encoder": lambda config, keys: distilbert.DistilBertOnlyEncoder,
             "mlm": head(lambda: distilbert.DistilBertForMaskedLM, "vocab_projector.", "registry.no_mlm_head"),
             "ner": head(lambda: distilbert.DistilBertForTokenClassification, "classifier.",
                         "registry.no_token_head"),
             "qa": head(lambda: distilbert.DistilBertForQuestionAnswering, "qa_outputs.", "registry.no_qa_head"),
             "classify": sequence_head(lambda: distilbert.DistilBertForSequenceClassification)},
    base=lambda config: distilbert.DistilBertOnlyEncoder(config), tokenizer=WordPieceTokenizer.from_directory,
    tokenizer_files=BERT_TOKENIZER_FILES,
)


def _roberta_tokenizer(directory: Path) -> WordPieceTokenizer:
    """RoBERTa's byte-level BPE with its specials ("<s> A </s></s> B </s>", <mask>, <pad>): from tokenizer.json, or
    built from vocab.json + merges.txt as RobertaTokenizerFast builds it."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    if (directory / "tokenizer.json").is_file():
        backend = Tokenizer.from_file(str(directory / "tokenizer.json"))
    elif (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
        backend = Tokenizer(models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt")))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        backend.post_processor = processors.RobertaProcessing(("</s>", backend.token_to_id("</s>")),
                                                              ("<s>", backend.token_to_id("<s>")))
        backend.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>", AddedToken("<mask>", lstrip=True)])
    else:
        raise FileNotFoundError("neither tokenizer.json nor vocab.json + merges.txt")
    config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8")) \
        if (directory / "tokenizer_config.json").is_file() else {}
    longest = int(config.get("model_max_length") or 0)  # HF writes 1e30 for "unset"
    return WordPieceTokenizer(backend, cls_token="<s>", sep_token="</s>", pad_token="<pad>", mask_token="<mask>",
                              unk_token="<unk>", do_lower_case=False,
                              **({"model_max_length": longest} if 0 < longest <= 100_000 else {}))


ROBERTA = Family(
    parse_config=lambda raw: roberta.config_from_dict(raw), normalize_keys=BERT.normalize_keys,
    classes={"encoder": lambda config, keys: roberta.RobertaOnlyEncoder,
             "mlm": head(lambda: roberta.RobertaForMaskedLM, "lm_head.dense.", "registry.no_mlm_head"),
             "ner": head(lambda: roberta.RobertaForTokenClassification, "classifier.", "registry.no_token_head"),
             "qa": head(lambda: roberta.RobertaForQuestionAnswering, "qa_outputs.", "registry.no_qa_head"),
             "classify": sequence_head(lambda: roberta.RobertaForSequenceClassification)},
    base=lambda config: roberta.RobertaOnlyEncoder(config), tokenizer=_roberta_tokenizer,
    tokenizer_files=("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"),
)


def _gpt_config(raw: dict):
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


GPT2 = Family(
    parse_config=_gpt_config, normalize_keys=lambda state, model: gpt.normalize_state_dict(state),
    classes={"causal-lm": lambda config, keys: gpt.GPT}, base=lambda config: gpt.GPT(config),
    tokenizer=_gpt_tokenizer, tokenizer_files=BERT_TOKENIZER_FILES,
)

def _t5_config(raw: dict):
    try:
        return t5.T5Config.from_dict(raw)
    except ValueError as exc:  # a T5 variant core/nets/t5.py does not implement
        raise ModelUnavailableError("registry.config_unbuildable", model=str(raw.get("_name_or_path") or "t5"),
                                    error=str(exc)) from None


def _t5_tokenizer(directory: Path) -> SentencePieceTokenizer:
    """T5's SentencePiece (Unigram) vocabulary, from tokenizer.json (every T5 repo on the Hub ships one)."""
    if not (directory / "tokenizer.json").is_file():
        raise FileNotFoundError("no tokenizer.json")
    from tokenizers import Tokenizer

    return SentencePieceTokenizer(Tokenizer.from_file(str(directory / "tokenizer.json")))


T5 = Family(
    parse_config=_t5_config, normalize_keys=lambda state, model: t5.normalize_state_dict(state, model),
    classes={"seq2seq": lambda config, keys: t5.T5ForConditionalGeneration},
    base=lambda config: t5.T5ForConditionalGeneration(config), tokenizer=_t5_tokenizer,
    tokenizer_files=("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"),
)

FAMILIES: dict[str, Family] = {"bert": BERT, "distilbert": DISTILBERT, "roberta": ROBERTA, "gpt2": GPT2, "t5": T5}


def family_of(config: dict, model_id: str) -> Family:
    model_type = str(config.get("model_type") or "")
    family = FAMILIES.get(model_type)
    if family is None:
        raise UserInputError("registry.unsupported_type", model=model_id, model_type=model_type[:40] or "unknown",
                             families=", ".join(sorted(FAMILIES)))
    return family


# ------------------------------------------------------------------------------------------------------------------
# What a checkpoint is for, read from config.json alone (before any tokenizer or weights are fetched)

# An architecture name's ending -> the task whose tab runs it. Checked in this order ("LMHeadModel" before "Model").
ARCHITECTURE_TASKS = (("ForConditionalGeneration", "seq2seq"), ("LMHeadModel", "causal-lm"), ("ForCausalLM", "causal-lm"), ("ForMaskedLM", "mlm"),
                      ("ForPreTraining", "mlm"), ("ForTokenClassification", "ner"), ("ForQuestionAnswering", "qa"),
                      ("ForSequenceClassification", "classify"), ("Model", "encoder"))
TAG_PREFIXES = ("B-", "I-", "E-", "S-", "L-", "U-")  # BIO / IOBES / BILOU tags: a label map that tags tokens


def kind_of(config: dict) -> tuple[str, str] | None:
    """(the task a checkpoint was trained for, the evidence: an architecture name, a model type or a label), from
    config.json's ``architectures``, ``model_type`` and label map; None when the config does not say."""
    architectures = config.get("architectures")
    for name in architectures if isinstance(architectures, list) else ():
        for ending, task in ARCHITECTURE_TASKS:
            if isinstance(name, str) and name.endswith(ending):
                return task, name[:60]
    if config.get("model_type") == "gpt2":
        return "causal-lm", "model_type gpt2"
    labels = config.get("id2label")
    labels = [str(label) for label in labels.values()] if isinstance(labels, dict) else []
    tags = [label for label in labels if label.startswith(TAG_PREFIXES)]
    if len(labels) >= 3 and tags and all(label == "O" or label.startswith(TAG_PREFIXES) for label in labels):
        return "ner", tags[0][:30]
    return None


def check_task(config: dict, task: str, model_id: str) -> Family:
    """The family, if a checkpoint of this config can run ``task``; else UserInputError("registry.wrong_kind_<its
    task>") naming what the checkpoint is and the tab that runs it. A config that does not say lets the weights
    decide (the family's head picks, after the download)."""
    family = family_of(config, model_id)
    kind = kind_of(config)
    if task == "encoder" and task in family.classes:
        return family  # every encoder checkpoint, whatever its head, has the encoder the views read
    if task in family.classes and (kind is None or kind[0] == task):
        return family
    runs, evidence = kind if kind is not None else (next(iter(family.classes)), f"model_type {config.get('model_type')}")
    raise UserInputError(WRONG_KIND[runs], model=model_id, evidence=evidence,
                         model_type=str(config.get("model_type") or "?")[:40])


WRONG_KIND = {"causal-lm": "registry.wrong_kind_causal_lm", "mlm": "registry.wrong_kind_mlm",
              "ner": "registry.wrong_kind_ner", "qa": "registry.wrong_kind_qa", "classify": "registry.wrong_kind_classify",
              "encoder": "registry.wrong_kind_encoder",
              "seq2seq": "registry.wrong_class"}  # (T5's own message, naming its tab, comes with the tab)  # what a checkpoint is -> the message naming its tab


def estimated_bytes(config: dict, model_id: str) -> int:
    """fp32 bytes of the family's base model, counted on the meta device (nothing is allocated)."""
    return _counted_bytes(json.dumps(config, sort_keys=True, default=str), model_id)


@functools.lru_cache(maxsize=64)
def _counted_bytes(config_json: str, model_id: str) -> int:
    """estimated_bytes, once per distinct config: every request for a cached model checks its size again, and
    building the skeleton took ~12% of the server's CPU under the 64-user classroom load (py-spy)."""
    import torch  # here, not at the top: resolving ids and starting the app need no torch

    config = json.loads(config_json)
    family = family_of(config, model_id)
    try:
        with torch.device("meta"):
            skeleton = family.base(family.parse_config(config))
    except Exception as exc:  # noqa: BLE001 - a config our classes cannot build is the checkpoint's fault
        raise ModelUnavailableError("registry.config_unbuildable", model=model_id, error=type(exc).__name__) from exc
    return 4 * sum(p.numel() for p in skeleton.parameters())
