"""A short char-BERT run in the BERT masked LM tab (issue #34 item 6): the shipped recipe (core/mlm/char_train.py) at
a smaller scale, on a bundled corpus or the learner's text, within the training slot's time budget (core/loading/jobs.py).

    split       core.recurrent.lstm.split_text: the last 5% held out, as for every character model in the app
    vocabulary  the training split's characters seen at least MIN_COUNT times (at most MAX_CHARACTERS, the most
                frequent), then [PAD] [UNK] [CLS] [SEP] [MASK]; another character reads as [UNK]
    model       the shipped char-BERT's shape (4 layers, 4 heads, H = 96), started from BERT's initialisation
    recipe      masked LM with core/mlm/masking.py's 15% / 80-10-10; windows of 8, then 16, then 32 characters
                (the shipped run's first phases), RUN_CHARS_PER_STEP characters a step, warm-up then linear decay
    held out    core/mlm_char_heldout.recipe_scores on the held-out split's first HELD_OUT_CHARS characters, in
                windows of the last training window (the first 16,000 of Moby-Dick's 59,418 score in about a second)

The run is seeded: the same text, steps and seed give the same losses on one machine and thread count.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterator

import torch

from core.text.errors import UserInputError
from core.text.limits import MAX_CHAR_BERT_STEPS
from core.recurrent.lstm import split_text
from core.mlm.char import CharBertTokenizer, LoadedCharBert, char_bert_config
from core.mlm.char_heldout import recipe_scores
from core.mlm.char_train import Recipe, init_like_bert, train_steps
from core.nets.bert import BertConfig, BertForMaskedLM

MIN_COUNT = 3
MAX_CHARACTERS = 3000  # a Chinese corpus has thousands of characters; the rarest read as [UNK]
MIN_TRAIN_CHARS = 2000
RUN_CHARS_PER_STEP = 1024
RUN_PHASES = ((0.3, 8), (0.3, 16), (0.4, 32))
RUN_SEED = 0
HELD_OUT_CHARS = 16_000


@dataclass
class ShortRun:
    loaded: LoadedCharBert  # the model being trained, its vocabulary
    train: torch.Tensor  # (N,) the training split's ids
    held: list[int]  # the held-out split's ids
    recipe: Recipe

    @property
    def uniform_nats(self) -> float:
        """ln of the characters the model can name: what a uniform guess scores."""
        return math.log(len(self.loaded.tokenizer.characters))


def prepare_run(text: str, steps: int, seed: int = RUN_SEED) -> ShortRun:
    """The split, the vocabulary, a freshly initialised char-BERT and the recipe for ``steps`` steps."""
    if not isinstance(steps, int) or not 1 <= steps <= MAX_CHAR_BERT_STEPS:
        raise UserInputError("mlm.train.steps_range", limit=MAX_CHAR_BERT_STEPS)
    train_text, held_text = split_text(text or "")
    if len(train_text) < MIN_TRAIN_CHARS:
        raise UserInputError("mlm.train.too_short", chars=f"{len(train_text):,}", limit=f"{MIN_TRAIN_CHARS:,}")
    counts = Counter(train_text)
    characters = sorted(ch for ch, n in counts.most_common(MAX_CHARACTERS) if n >= MIN_COUNT)
    tokenizer = CharBertTokenizer.from_characters(characters)
    torch.manual_seed(seed)
    model = BertForMaskedLM(BertConfig.from_dict(char_bert_config(len(tokenizer))))
    init_like_bert(model)
    config = char_bert_config(len(tokenizer))
    loaded = LoadedCharBert(model, tokenizer, config, {"corpus_chars": len(train_text)})
    recipe = Recipe(steps=steps, chars_per_step=RUN_CHARS_PER_STEP, phases=RUN_PHASES, lr=4e-3,
                    warmup=max(1, steps // 10), seed=seed)
    return ShortRun(loaded, torch.tensor(tokenizer.encode(train_text)[0]), tokenizer.encode(held_text)[0], recipe)


def run(short: ShortRun) -> Iterator[tuple[int, float, int]]:
    """(step, training loss in nats, window) after every step; the caller stops early at its budget."""
    yield from train_steps(short.loaded.model, short.train, len(short.loaded.tokenizer), short.recipe)


def held_out(short: ShortRun, window: int) -> dict:
    """The held-out masked-LM loss and accuracy under the training corruption, in windows of ``window``."""
    short.loaded.model.eval()
    if len(short.held) < window:
        raise UserInputError("mlm.train.too_short", chars=f"{len(short.held):,}", limit=f"{window:,}")
    return recipe_scores(short.loaded, short.held[:HELD_OUT_CHARS], window=window)
