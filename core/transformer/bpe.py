"""Byte-pair encoding, learned step by step: the Transformer & GPT tab's tokenizer lab runs this short trainer, so
that what a learner reads here is what made the merges on screen.

A BPE vocabulary is learned from word counts:

    1. cut the text into words, and each word into symbols: here GPT-2's byte-level words (its pre-tokenizer,
       ``pre_tokenize``): a word is its UTF-8 bytes, each written as one printable character ("Ġ" for a space,
       which belongs to the word after it), so that every text can be encoded and nothing is ever unknown;
    2. the vocabulary starts as the 256 byte symbols; every word is kept once, with how often it occurs;
    3. count every pair of neighbouring symbols, each word's pairs weighted by that word's count;
    4. merge the most frequent pair everywhere into one new symbol, and write the merge down;
    5. repeat 3–4 until the vocabulary has vocab_size symbols (or no pair is frequent enough).

Encoding new text replays the merges, first learned first. This file follows the conventions of the ``tokenizers``
library's BpeTrainer (tokenizers/src/models/bpe/trainer.rs and word.rs), so that on the same words and settings the
merges and their order are equal (tests/transformer/test_tokenizer_lab.py):
- symbol ids: the special tokens, then the initial alphabet sorted by code point, then each merge's new symbol in
  the order it was made (a merge whose symbol already exists adds no id);
- ties: of two pairs with the same count, the one with the smaller ids wins (the first symbol's, then the second's);
- a pair is merged left to right within a word: "a a a a" with (a, a) becomes "aa aa";
- min_frequency: merging stops when the best pair occurs fewer times than this;
- step 3 is done once; after each merge only the words that held the merged pair are updated (their old pairs
  lose, their new pairs gain), and a heap keeps the pairs by count, each rechecked when it reaches the top.
"""
from __future__ import annotations

import heapq
import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from tokenizers import pre_tokenizers

# GPT-2's pre-tokenizer: its regex split into words, then bytes → printable characters. ``tokenizers`` does this
# step for both trainers, so both count exactly the same words.
BYTE_LEVEL = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
BYTE_ALPHABET = sorted(pre_tokenizers.ByteLevel.alphabet())  # the 256 byte symbols


def pre_tokenize(text: str) -> list[str]:
    """GPT-2's words of one line: "Call me Ishmael." → ["Call", "Ġme", "ĠIshmael", "."]."""
    return [word for word, _ in BYTE_LEVEL.pre_tokenize_str(text)]


def count_words(lines: Iterable[str]) -> Counter:
    """How often each word occurs, each line cut on its own (as tokenizers' train_from_iterator reads its lines)."""
    counts = Counter()
    for line in lines:
        counts.update(pre_tokenize(line))
    return counts


@dataclass
class Merge:
    left: str
    right: str
    count: int  # how often the pair occurred, over the whole corpus, when it was chosen
    token: str  # left + right, the new symbol
    rivals: list[tuple[str, str, int]] = field(default_factory=list)  # the most frequent pairs then, this one first


@dataclass
class BPE:
    vocab: list[str]  # id → symbol
    merges: list[Merge] = field(default_factory=list)
    words: int = 0  # distinct words trained on
    alphabet: int = 0  # symbols before the first merge (special tokens included)


def train(word_counts: dict[str, int], vocab_size: int, min_frequency: int = 0, special_tokens: Iterable[str] = (),
          initial_alphabet: Iterable[str] = BYTE_ALPHABET, watch: int = 0) -> BPE:
    """Learn merges until the vocabulary has vocab_size symbols (steps 2–5 of the module docstring). For the first
    ``watch`` merges, also note the most frequent pairs at that moment (Merge.rivals), for the step-by-step view."""
    vocab: list[str] = []
    index: dict[str, int] = {}

    def add(symbol: str) -> int:
        if symbol not in index:
            index[symbol] = len(vocab)
            vocab.append(symbol)
        return index[symbol]

    for token in special_tokens:
        add(token)
    for symbol in sorted(set(initial_alphabet).union(*word_counts)):  # every character of every word
        add(symbol)
    alphabet = len(vocab)
    words = [[index[ch] for ch in word] for word in word_counts]  # each distinct word as symbol ids
    counts = list(word_counts.values())

    pair_counts: Counter = Counter()  # (left id, right id) → occurrences in the corpus
    where: dict[tuple[int, int], set[int]] = defaultdict(set)  # pair → the words that hold it
    for i, word in enumerate(words):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += counts[i]
            where[pair].add(i)
    order = itertools.count()  # a heap entry's age: ties in count and pair never compare the word sets
    heap = [(-pair_counts[pair], pair, next(order), held) for pair, held in where.items()]
    heapq.heapify(heap)  # the largest count first; equal counts: the smaller pair (ids) first

    bpe = BPE(vocab, words=len(words), alphabet=alphabet)
    merged: set[tuple[int, int]] = set()
    while len(vocab) < vocab_size and heap:
        count, pair, _, held = heapq.heappop(heap)
        if -count != pair_counts[pair]:  # merges since this entry was pushed changed the count: requeue it
            heapq.heappush(heap, (-pair_counts[pair], pair, next(order), held))
            continue
        if -count < 1 or -count < min_frequency:
            break
        left, right = pair
        rivals = _most_frequent(pair_counts, merged, vocab) if len(bpe.merges) < watch else []
        merged.add(pair)  # its count stays as it was (as in tokenizers): it is never a candidate again
        new = add(vocab[left] + vocab[right])
        bpe.merges.append(Merge(vocab[left], vocab[right], -count, vocab[new], rivals))
        gained: dict[tuple[int, int], set[int]] = defaultdict(set)
        for i in held:
            for changed, delta in merge_word(words[i], left, right, new):
                pair_counts[changed] += delta * counts[i]
                if delta > 0:
                    gained[changed].add(i)
        for changed, words_with_it in gained.items():
            if pair_counts[changed] > 0:
                heapq.heappush(heap, (-pair_counts[changed], changed, next(order), words_with_it))
    return bpe


def _most_frequent(pair_counts: Counter, merged: set, vocab: list[str], top: int = 8) -> list[tuple[str, str, int]]:
    """The pairs that compete for the next merge, in the trainer's order (count, then the smaller ids)."""
    best = heapq.nsmallest(top, ((-n, pair) for pair, n in pair_counts.items() if n > 0 and pair not in merged))
    return [(vocab[a], vocab[b], -n) for n, (a, b) in best]


def merge_word(word: list[int], left: int, right: int, new: int) -> list[tuple[tuple[int, int], int]]:
    """Merge every (left, right) in the word, left to right, in place; return how each neighbouring pair's count
    changes (−1: a pair that is gone, +1: a pair that the new symbol makes)."""
    changes = []
    i = 0
    while i < len(word) - 1:
        if word[i] == left and word[i + 1] == right:
            if i > 0:
                changes += [((word[i - 1], left), -1), ((word[i - 1], new), +1)]
            word[i:i + 2] = [new]
            if i < len(word) - 1:
                changes += [((right, word[i + 1]), -1), ((new, word[i + 1]), +1)]
        i += 1
    return changes


def encode_word(word: str, ranks: dict[tuple[str, str], int]) -> list[str]:
    """A word's symbols after the merges (``ranks``: pair → its merge's position): the earliest-learned pair that
    occurs is merged first, again and again, as a trained BPE tokenizes."""
    symbols = list(word)
    while len(symbols) > 1:
        rank, i = min((ranks.get(pair, len(ranks)), i) for i, pair in enumerate(zip(symbols, symbols[1:])))
        if rank == len(ranks):
            break
        symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
    return symbols
