"""The model registry: the one way from a model id to a running model.

    load(task, id)                 the app's: resolve the id (core/loading/resolve.py: folder, package, HF cache or Hub),
                                   find its family from config.json (core/loading/families.py), build the task's class
                                   (core/nets/), load its weights strictly, and keep it (bounded, least recently used)
    from_pretrained(id, cls)       a given class, not kept (tests, benchmarks)
    from_state_dict(config, state, cls)   a model from a config dict and its tensors (checkpoints shipped in assets/)
    config(id), tokenizer(id)      only what a view needs: config.json, or the tokenizer files, never the weights
    tokenizer_or_fallback(id), load_or_fallback(task, id)   MiniLM-L6 (packaged, so always here) standing in for a
                                   checkpoint that cannot be had, for the views that need only a vocabulary or encoder

Building checks every tensor's shape, read from the file headers, against the class's skeleton on the meta device
(nothing allocated), then allocates the model without initialising it and loads the weights strictly
(``assign=True``: the model takes the file's tensors). Loaded models are kept in a BoundedCache keyed by the task and
the resolved snapshot folder, not the typed string, so ``/x``, ``/x/`` and ``/x/.`` are one entry; it is bounded by
count and memory (``--cache-models``, ``--cache-gb``). Concurrent requests for one checkpoint build it once; nothing
is locked across a download, which happens in ``resolve`` before.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from core.loading import families, resolve
from core.loading.cache import BoundedCache
from core.loading.checkpoints import CHAR_BERT_ID, MINILM_ID, model_id_or_default
from core.loading.device import get_device
from core.text.errors import LearnerError, ModelUnavailableError, UserInputError
from core.text.i18n import text
from core.loading.resolve import CheckpointFiles, Progress
from core.loading.weight_files import find_weights_file
from core.loading.weights import CheckpointMismatchError, load_state_dict, raise_if_mismatched, weight_shapes

# ------------------------------------------------------------------------------------------------------------------
# Building a model from checkpoint files


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


def load_checkpoint_into(model: nn.Module, state: dict[str, torch.Tensor],
                         normalize: Callable[[dict, nn.Module], dict]) -> None:
    """Map the keys with the family's ``normalize``, check every shape, then a strict load; mismatches raise
    CheckpointMismatchError with the key names."""
    groups = shared_parameters(model)
    state = normalize(state, model)
    tied = raise_if_mismatched(model, {k: v.shape for k, v in state.items()})
    expected = model.state_dict()
    state = {k: v.to(expected[k].dtype) for k, v in state.items() if k not in tied}  # fp16 files load as fp32
    # assign=True: the model takes the file's tensors instead of copying them (-1.2 s for bert-base on 2 cores).
    result = model.load_state_dict(state, strict=False, assign=True)
    leftover = [k for k in result.missing_keys if k not in tied]
    if leftover or result.unexpected_keys:  # cannot happen after the checks above; kept as the strictness proof
        raise CheckpointMismatchError(f"missing {leftover}, unexpected {result.unexpected_keys}")
    tie(model, groups)  # assign=True replaced the owners; the tied names follow them again


def _allocate(model_class: type[nn.Module], config, shapes: dict[str, torch.Size], family: families.Family,
              state: Callable[[], dict[str, torch.Tensor]]) -> nn.Module:
    """Check ``shapes`` against ``model_class``'s skeleton on the meta device, then allocate it and load ``state()``."""
    with torch.device("meta"):
        skeleton = model_class(config)
    placeholders = {k: torch.empty(shape, device="meta") for k, shape in shapes.items()}  # shapes, no data
    raise_if_mismatched(skeleton, {k: v.shape for k, v in family.normalize_keys(placeholders, skeleton).items()})
    # Memory for the weights only: no random initialisation, since the strict load overwrites every tensor.
    groups = shared_parameters(skeleton)
    model = skeleton.to_empty(device="cpu")
    tie(model, groups)  # to_empty gives shared parameters separate storage
    load_checkpoint_into(model, state(), family.normalize_keys)
    return model


@torch.inference_mode(False)  # loaded inside an inference-mode view, its weights could never get gradients (Why)
def build(files: CheckpointFiles, pick: Callable[[Any, set[str]], type[nn.Module]],
          device: torch.device | str | None = None) -> nn.Module:
    """Build ``pick(config, keys in the file)`` and load the checkpoint's weights strictly, on ``device`` (default:
    core/loading/device.py's choice), in eval mode."""
    family, shown = files.family, files.name
    config = family.parse_config(files.config)
    weights = find_weights_file(files.directory, shown)
    shapes = weight_shapes(weights, shown)
    model_class = pick(config, set(shapes))
    try:
        model = _allocate(model_class, config, shapes, family, lambda: load_state_dict(weights, shown))
    except CheckpointMismatchError as exc:
        raise ModelUnavailableError("registry.cannot_load_as", model=shown, cls=model_class.__name__,
                                    detail=str(exc)) from exc
    model.checkpoint = files
    return model.to(device or get_device()).eval()


def from_pretrained(model_id: str | CheckpointFiles, model_class: type[nn.Module],
                    device: torch.device | str | None = None) -> nn.Module:
    """Resolve ``model_id`` (or take resolved CheckpointFiles), build ``model_class`` and load its weights strictly."""
    files = model_id if isinstance(model_id, CheckpointFiles) else resolve.resolve(model_id)
    return build(files, lambda config, keys: model_class, device)


def from_state_dict(config: dict, state: dict[str, torch.Tensor], model_class: type[nn.Module]) -> nn.Module:
    """``model_class`` built from a config.json dict and loaded strictly from ``state`` (on the CPU, in eval mode):
    for checkpoints the app ships in assets/, which are not model ids a learner types."""
    family = families.family_of(config, model_class.__name__)
    model = _allocate(model_class, family.parse_config(config), {k: v.shape for k, v in state.items()}, family,
                      lambda: state)
    return model.eval()


# ------------------------------------------------------------------------------------------------------------------
# The models each tab has loaded


class Badge(str):
    """One line for the UI: model, kind, source, device, dtype, shown in the language of whoever it is shown to.

    Results that hold a badge are cached and shared by learners of both languages (core/attention/attention.py's maps, the
    Transformer walk), so the badge cannot be a string made in the first caller's language. As a string it is the
    English line (logs, ``in`` checks); formatted (``f"{badge}"``, ``text(key, badge=badge)``) it renders in the
    language of the call being handled."""

    def __new__(cls, model: str, kind: str, source: str, device: str, dtype: str, downloaded_bytes: int = 0):
        fields = dict(model=model, kind=kind, source=source, device=device, dtype=dtype,
                      downloaded_bytes=downloaded_bytes)
        badge = super().__new__(cls, cls._render(fields, "en"))
        badge.fields = fields
        return badge

    @staticmethod
    def _render(fields: dict, lang: str | None) -> str:
        kind = text("registry.kind_encoder", lang) if fields["kind"] == "Encoder" else fields["kind"]  # a class name
        source = resolve.source_label(fields["source"], lang, fields["downloaded_bytes"])
        return text("registry.badge", lang, **dict(fields, kind=kind, source=source))

    def __getnewargs__(self):  # copy and pickle rebuild it from its fields
        return tuple(self.fields.values())

    def __format__(self, spec: str) -> str:
        return format(self._render(self.fields, None), spec)

    def __str__(self) -> str:
        return self._render(self.fields, None)


@dataclass
class LoadedModel:
    task: str
    model: nn.Module
    tokenizer: Any
    files: CheckpointFiles
    device: torch.device
    nbytes: int = 0  # parameters and buffers, for the cache's memory bound

    @property
    def config(self):
        """The parsed config: a bert_encoder.BertConfig (BERT family) or a gpt.GPTConfig."""
        return self.model.config

    @property
    def badge(self) -> Badge:
        """One line for the UI: model, class, source, device, dtype. Path-free: local folders show only their name."""
        dtype = next(self.model.parameters()).dtype
        kind = "Encoder" if self.task == "encoder" else type(self.model).__name__
        return Badge(self.files.name, kind, self.files.source, self.device.type, str(dtype).removeprefix("torch."),
                     self.files.downloaded_bytes)


TOKENIZER_CACHE = 16
_models = BoundedCache(8, weight=lambda key, loaded: loaded.nbytes)  # (task, resolved folder) -> LoadedModel
_tokenizers = BoundedCache(TOKENIZER_CACHE)  # resolved folder -> tokenizer


def model_class_for(task: str, config, keys: set[str], family: families.Family) -> type[nn.Module]:
    """The class whose parameters match this task and this file."""
    if task not in family.classes:  # e.g. a BERT checkpoint picked for a GPT view
        raise UserInputError("registry.wrong_class", model_type=getattr(config, "model_type", "?"))
    return family.classes[task](config, keys)


def load(task: str, model_id: str | None = None, progress: Progress | None = None) -> LoadedModel:
    """The model for ``task`` (default checkpoint if ``model_id`` is None), loaded once and kept.

    ``progress(fraction, message)`` hears download progress. Raises ModelUnavailableError (offline / not
    downloaded / Hub trouble) or UserInputError (wrong kind of checkpoint, too large)."""
    tasks = sorted({t for family in families.FAMILIES.values() for t in family.classes})
    if task not in tasks:
        raise ValueError(f"unknown task {task!r}; one of {tasks}")
    files = resolve.resolve(model_id_or_default(task, model_id), "model", progress, task)  # may download: no lock

    def make() -> LoadedModel:  # CPU work only; other checkpoints build in parallel
        model = build(files, lambda config, keys: model_class_for(task, config, keys, files.family))
        nbytes = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
        return LoadedModel(task, model, _tokenizer_for(files), files, next(model.parameters()).device, nbytes)

    # the bounds are the app's flags (resolve.configure), read at every load
    _models.max_entries, _models.max_weight = resolve.settings.cache_models, resolve.settings.cache_bytes
    loaded = _models.get_or_compute((task, str(files.directory)), make)
    # one model per folder, shown as this caller typed it and found it ("/x" and "/x/", cache or just downloaded)
    return loaded if loaded.files == files else replace(loaded, files=files)


def config(model_id: str, progress: Progress | None = None):
    """Only the parsed config.json (fetches nothing else): for the model card."""
    files = resolve.resolve(model_id, "config", progress)
    return files.family.parse_config(files.config)


def tokenizer(model_id: str, progress: Progress | None = None) -> tuple[Any, CheckpointFiles]:
    """Only the tokenizer (and the resolved files), without weights: for the views that need no model."""
    files = resolve.resolve(model_id, "tokenizer", progress)  # may download: no lock held
    return _tokenizer_for(files), files


def _tokenizer_for(files: CheckpointFiles):
    def make():
        try:
            return files.family.tokenizer(files.directory)  # local file reads only
        except FileNotFoundError:
            raise ModelUnavailableError("registry.no_tokenizer", model=files.name) from None

    return _tokenizers.get_or_compute(str(files.directory), make)


# ------------------------------------------------------------------------------------------------------------------
# MiniLM-L6 for the views that need only a vocabulary or an encoder (the one fallback of the app)


def _no_wordpiece(model_id: str | None) -> UserInputError | None:
    """Why the char-BERT cannot serve a WordPiece view (it reads characters, with no segment pairs or next-sentence
    head): those views show MiniLM-L6 in its place and say so."""
    if str(model_id or "").strip().lower() == CHAR_BERT_ID:
        return UserInputError("registry.char_bert_wordpiece_only")
    return None


def tokenizer_or_fallback(model_id: str) -> tuple[Any, CheckpointFiles, LearnerError | None]:
    """The checkpoint's tokenizer, or MiniLM-L6's (bert-base-uncased's WordPiece vocabulary) when the checkpoint
    cannot be had. Returns the tokenizer, the files it came from, and why the checkpoint's own was not used."""
    try:
        if (reads_characters := _no_wordpiece(model_id)) is not None:
            raise reads_characters
        found, files = tokenizer(model_id)
        return found, files, None
    except (ModelUnavailableError, UserInputError) as exc:
        found, files = tokenizer(MINILM_ID)
        return found, files, exc


def tokens_line(model_id: str | None, missing: LearnerError | None) -> str:
    """Which tokenizer a layout view used, for its note: the checkpoint's, or MiniLM-L6's in its place."""
    if missing is None:
        return text("registry.tokens_from", model=model_id)
    if not str(model_id or "").strip():  # an API call's null or a cleared picker: no name to say is missing
        return text("registry.tokens_unnamed", fallback=MINILM_ID)
    return text("registry.tokens_fallback", model=model_id, fallback=MINILM_ID)


def load_or_fallback(task: str, model_id: str | None, progress: Progress | None = None
                     ) -> tuple[LoadedModel, LearnerError | None]:
    """``task``'s checkpoint if it can be had, else MiniLM-L6's encoder and the reason: tokenisation, embeddings and
    contextual vectors need only an encoder, so these views keep working offline."""
    if (reads_characters := _no_wordpiece(model_id)) is not None:
        return load("encoder", MINILM_ID), reads_characters
    try:
        return load(task, model_id, progress), None
    except ModelUnavailableError as exc:
        return load("encoder", MINILM_ID), exc


def loaded_models() -> list[str]:
    """Badges of every model kept, most recent last (for the status panel; path-free)."""
    return [entry.badge for entry in _models.values()]


def clear_cache() -> None:
    """Forget loaded models, tokenizers, recent download failures and the network probe (as a restart would)."""
    _models.clear()
    _tokenizers.clear()
    resolve.forget_network()
