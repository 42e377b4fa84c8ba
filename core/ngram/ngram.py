"""A statistical n-gram language model you can take apart (seed §2.1).

Chain rule:       P(w_1..w_m) = Π_i P(w_i | w_1..w_{i-1})
Markov (order n): P(w_i | w_1..w_{i-1}) ≈ P(w_i | w_{i-n+1}..w_{i-1})   (n = 2: a bigram model)

Three estimators of P(w | context):
- MLE:   count(context, w) / count(context, •)
- add-k: (count(context, w) + k) / (count(context, •) + k·|V|)            (k = 1: Laplace / add-one)
- interpolated Kneser-Ney (absolute discount d, continuation counts for the lower orders, uniform 1/|V| at the
  bottom), as in Chen & Goodman (1998). nltk.lm.KneserNeyInterpolated differs (default d = 0.1, no uniform floor,
  so a word never seen gets 0 there), which is why only MLE and add-k are checked against NLTK.

count(context, •) is how often the context is followed by a token, so each distribution sums to 1 over V.

Two conventions for sentence boundaries (they change the counts and |V|, so the UI names the one in use):
- boundaries off (the seed's convention): sentences are counted as they are; n-grams never cross a sentence;
  V = the distinct tokens of the corpus (12 for the toy corpus, so add-one gives (2+1)/(3+12) = 0.2).
- boundaries on (NLTK's convention, nltk.lm.preprocessing.pad_both_ends): each sentence gets n-1 <s> before and
  n-1 </s> after; V = the distinct padded tokens plus one <UNK> slot that unknown words map to, exactly like
  len(nltk.lm.Vocabulary).

Counting is integer-encoded and vectorised: each k-gram is the pair (rank of its (k-1)-gram prefix, last token),
packed into one int64, so one np.unique per order both counts the k-grams and sorts them by context. Scoring is
array lookups too: NgramModel.chain finds every position's context and (context, token) by np.searchsorted in those
sorted keys, so a batch of sentences (score_batch) or a long text costs a few numpy calls, not a loop per token.
"""
from __future__ import annotations

import copy
import re
from itertools import repeat
from typing import Callable, Literal

import numpy as np

from core.text import i18n
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from core.ngram.results import (
    BOS,
    EOS,
    UNK,
    ContextCounts,
    Generation,
    NextWord,
    SentenceScore,
    Step,
    log2_or_inf,
    log_or_minus_inf,
)
from core.text.tokenizer import char_tokens, word_tokens

# Sampling runs on torch (core/text/sampling.py), which counting and scoring never need: it loads on the first draw.
sampling = lazy_import("core.text.sampling")

MAX_ORDER = 5
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])")  # split after these; they are one-character tokens
Smoothing = Literal["mle", "add_k", "kneser_ney"]
SMOOTHINGS: tuple[Smoothing, ...] = ("mle", "add_k", "kneser_ney")
KN_DISCOUNT = 0.75  # the usual absolute discount for interpolated Kneser-Ney


# ----------------------------------------------------------------------------------------------------------------
# Text → sentences of tokens


def tokenize_sentences(text: str, unit: Literal["word", "char"] = "word", lowercase: bool = False) -> list[list[str]]:
    """One sentence per line; long lines (paragraphs) are also split after . ! ? 。 ！ ？ (each ends its sentence)."""
    split: Callable[[str], list[str]] = char_tokens if unit == "char" else word_tokens
    text = text.lower() if lowercase else text
    pieces = (piece for line in text.splitlines() for piece in _SENTENCE_END.split(line))
    return [tokens for tokens in map(split, pieces) if tokens]


def short(token: str, width: int = 24) -> str:
    """A token as the UI prints it (a 5 MB 'word' must not flood a table)."""
    return token if len(token) <= width else token[: width - 1] + "…"


# ----------------------------------------------------------------------------------------------------------------
# The model


class NgramModel:
    """Counts of all k-grams, k = 1..n, of a tokenised corpus, and the estimators built on them."""

    def __init__(self, sentences: list[list[str]], n: int = 2, boundaries: bool = False):
        if not 1 <= n <= MAX_ORDER:
            raise UserInputError("ngram.err.order_range", max_order=MAX_ORDER, n=n)
        sentences = [s for s in sentences if s]
        if not sentences:
            raise UserInputError("ngram.err.empty_corpus")
        self.n, self.boundaries = n, boundaries
        stream: list[str] = []
        ends: list[int] = []  # where each (padded) sentence ends in the stream
        for sentence in sentences:
            stream.extend(self.pad(sentence))
            ends.append(len(stream))
        self.itos = list(dict.fromkeys(stream))  # V, in order of first appearance
        real = [t for t in self.itos if t not in (BOS, EOS)]  # the tokenisers never produce "<s>" or "</s>"
        if len(real) < 2:
            raise UserInputError("ngram.err.one_token", token=short(real[0]))
        longest = max(map(len, sentences))
        if not boundaries and longest < n:
            raise UserInputError("ngram.err.n_too_large", n=n, longest=longest)
        if boundaries:
            self.itos.append(UNK)  # unknown words map here (and it counts in |V|, as in NLTK)
        self.stoi = {token: i for i, token in enumerate(self.itos)}
        self.unknown_id = self.stoi[UNK] if boundaries else len(self.itos)  # off: a slot outside V, never counted
        self.sentences, self.n_tokens = len(sentences), sum(map(len, sentences))  # corpus tokens, without padding
        self._count(np.fromiter(map(self.stoi.__getitem__, stream), np.int64, len(stream)), np.asarray(ends))

    def _count(self, ids: np.ndarray, ends: np.ndarray) -> None:
        """keys[k-1]: sorted distinct k-grams, each packed as rank(prefix)·base + last; counts[k-1]: how often;
        continuation[k-1]: N1+(• gram), the number of distinct tokens seen right before the gram (for Kneser-Ney)."""
        self.base = len(self.itos) + 1  # token ids are < base (the extra id is the off-V unknown slot)
        T = len(ids)
        sentence_end = np.repeat(ends, np.diff(ends, prepend=0))  # (T,) end of each position's sentence
        positions = np.arange(T)
        rank = np.zeros(T, np.int64)  # rank of the (k-1)-gram starting at each position; the empty gram is 0
        self.keys, self.counts, self.continuation = [], [], []
        for k in range(1, self.n + 1):
            start = positions[positions + k <= sentence_end]  # k-grams never cross a sentence
            key = rank[start] * self.base + ids[start + k - 1]
            keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
            if k > 1:  # each distinct k-gram adds one left-extension to its suffix, the (k-1)-gram one token later
                where = np.empty(len(keys), np.int64)
                where[inverse] = start  # one position of each distinct k-gram
                suffix = rank[where + 1]
                self.continuation.append(np.bincount(suffix, minlength=len(self.keys[-1])))
            rank = np.full(T, -1, np.int64)
            rank[start] = inverse
            self.keys.append(keys)
            self.counts.append(counts)
        self.continuation.append(np.zeros(0, np.int64))  # the top order has no continuation counts

    def lower_order(self, n: int) -> "NgramModel":
        """This model as an order-n one (n ≤ self.n), sharing its arrays. Without boundary padding the k-gram counts
        do not depend on the order they were counted for, so one count pass serves every n (the ladder's rungs)."""
        if self.boundaries or not 1 <= n <= self.n:
            raise ValueError(f"lower_order needs boundaries off and 1 ≤ n ≤ {self.n} (got n = {n})")
        lower = copy.copy(self)
        lower.n, lower.keys, lower.counts, lower.continuation = n, self.keys[:n], self.counts[:n], self.continuation[:n]
        return lower

    # -- vocabulary -----------------------------------------------------------------------------------------------
    def pad(self, tokens: list[str]) -> list[str]:
        """NLTK's pad_both_ends when boundaries are on: n-1 <s> before and n-1 </s> after."""
        if not self.boundaries:
            return list(tokens)
        return [BOS] * (self.n - 1) + list(tokens) + [EOS] * (self.n - 1)

    @property
    def vocab_size(self) -> int:
        """|V| in the add-k formula."""
        return len(self.itos)

    def known(self, token: str) -> bool:
        return token in self.stoi and token != UNK

    def _ids(self, tokens) -> list[int]:
        return [self.stoi.get(t, self.unknown_id) for t in tokens]

    def _context(self, context) -> tuple[str, ...]:
        """The last n-1 tokens. A shorter context uses the counts of its own, lower order (as nltk.lm does)."""
        return tuple(context)[-(self.n - 1):] if self.n > 1 else ()

    # -- counts ---------------------------------------------------------------------------------------------------
    def _rank(self, ids: list[int]) -> int | None:
        """Rank of a gram among the distinct grams of its order, or None if it never occurred."""
        rank = int(self._gram_ranks(np.array(ids, np.int64).reshape(1, -1))[0])
        return None if rank < 0 else rank

    def _followers(self, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Tokens seen right after the context and their counts."""
        rank, keys = self._rank(ids), self.keys[len(ids)]
        if rank is None:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        lo, hi = np.searchsorted(keys, [rank * self.base, (rank + 1) * self.base])
        return keys[lo:hi] % self.base, self.counts[len(ids)][lo:hi]

    def count(self, gram) -> int:
        """How often a gram (a tuple of up to n tokens) occurs in the (padded) corpus."""
        rank = self._rank(self._ids(gram))
        return 0 if rank is None or not gram else int(self.counts[len(gram) - 1][rank])

    # -- probabilities --------------------------------------------------------------------------------------------
    def distribution(self, context, smoothing: Smoothing = "mle", k: float = 1.0) -> np.ndarray:
        """P(w | context) for every w in V, plus one last entry: the probability of a token outside V
        (or, with boundaries on, of <UNK>).  # (|V| + 1,)"""
        ids = np.array(self._ids(self._context(context)), np.int64)
        return self._estimate_many(np.tile(ids, (self.base, 1)), np.arange(self.base), smoothing, k)[0]

    def prob(self, word: str, context=(), smoothing: Smoothing = "mle", k: float = 1.0) -> float:
        ids = np.array(self._ids(self._context(context)), np.int64).reshape(1, -1)  # (1, context length)
        return float(self._estimate_many(ids, np.array(self._ids([word])), smoothing, k)[0][0])

    # -- many positions at once (scoring) -----------------------------------------------------------------------
    def chain(self, ids: np.ndarray, positions: np.ndarray, starts: np.ndarray, smoothing: Smoothing = "mle",
              k: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """P(ids[i] | the up to n-1 ids before i, none before starts[i]) for every i in positions, with
        count(context, ids[i]) and count(context, •): the chain rule as array lookups, no per-token Python.
        Positions are grouped by context length (shorter only at the start of a text); each group costs a few
        np.searchsorted calls into the sorted k-gram keys.  # each (P,)"""
        lengths = np.minimum(self.n - 1, positions - starts)
        targets = ids[positions]
        p, counts, totals = np.empty(len(positions)), np.empty(len(positions), np.int64), np.empty_like(positions)
        for length in np.unique(lengths):
            rows = np.flatnonzero(lengths == length)
            context = ids[positions[rows, None] + np.arange(-length, 0)]  # (R, length)
            p[rows], counts[rows], totals[rows] = self._estimate_many(context, targets[rows], smoothing, k)
        return p, counts, totals

    def _gram_ranks(self, grams: np.ndarray) -> np.ndarray:
        """Rank of each row's gram among the distinct grams of its order; -1 where it never occurred.  # (R,)"""
        rank = np.zeros(len(grams), np.int64)  # the empty gram has rank 0
        for k in range(grams.shape[1]):
            i, found = _find(self.keys[k], rank * self.base + grams[:, k])
            rank = np.where((rank >= 0) & found, i, -1)
        return rank

    def _context_sums(self, order: int, continuation: bool) -> tuple[np.ndarray, np.ndarray]:
        """Per distinct context of length order: Σ_w c(context w) and N1+(context •) (w with c > 0), c being raw or
        continuation counts. Computed once per (order, kind) from the sorted keys."""
        cache = self.__dict__.setdefault("_sums", {})
        if (order, continuation) not in cache:
            counts = (self.continuation if continuation else self.counts)[order]
            context = self.keys[order] // self.base  # rank of each gram's prefix (0 for unigrams: the empty context)
            size = len(self.keys[order - 1]) if order else 1
            cache[order, continuation] = (np.bincount(context, counts, size).astype(np.int64),
                                          np.bincount(context, counts > 0, size).astype(np.int64))
        return cache[order, continuation]

    def _follow(self, rank: np.ndarray, targets: np.ndarray, order: int, continuation: bool = False):
        """c(context target), Σ_w c(context w), N1+(context •) for contexts of length order given by rank."""
        i, found = _find(self.keys[order], rank * self.base + targets)
        counts = (self.continuation if continuation else self.counts)[order]
        count = np.where((rank >= 0) & found, counts[i], 0)
        sums, distinct = self._context_sums(order, continuation)
        seen = np.maximum(rank, 0)
        return count, np.where(rank >= 0, sums[seen], 0), np.where(rank >= 0, distinct[seen], 0)

    def _estimate_many(self, context: np.ndarray, targets: np.ndarray, smoothing: Smoothing, k: float):
        """P(target | context) for many (context, target) rows of one context length, under one smoothing.

        Interpolated Kneser-Ney, from the bottom up:
        P(w | c) = max(c(c w) - d, 0) / Σ_w c(c w) + d · N1+(c •) / Σ_w c(c w) · P(w | c minus its first token),
        with raw counts c at the model's order n, continuation counts N1+(• c w) below it, and 1/|V| at the bottom.
        A context never seen is skipped (its whole mass goes to the shorter context)."""
        length = context.shape[1]
        count, total, _ = self._follow(self._gram_ranks(context), targets, length)
        if smoothing == "mle":  # an unseen context has no MLE (0/0); like NLTK, every word gets 0
            p = np.divide(count, total, out=np.zeros(len(targets)), where=total > 0)
        elif smoothing == "add_k":
            if k <= 0:
                raise UserInputError("ngram.err.k_positive", k=k)
            p = (count + k) / (total + k * self.vocab_size)
        elif smoothing == "kneser_ney":
            d, p = KN_DISCOUNT, np.full(len(targets), 1.0 / self.vocab_size)
            for j in range(length + 1):  # the context's suffixes, shortest first
                c, t, n1 = self._follow(self._gram_ranks(context[:, length - j:]), targets, j, j + 1 < self.n)
                safe = np.maximum(t, 1)
                p = np.where(t > 0, np.maximum(c - d, 0) / safe + d * n1 / safe * p, p)
        else:
            raise UserInputError("ngram.err.unknown_smoothing", smoothing=repr(smoothing),
                                 choices=", ".join(SMOOTHINGS))
        return p, count, total

    # -- what the tab shows ---------------------------------------------------------------------------------------
    def context_counts(self, context, smoothing: Smoothing = "mle", k: float = 1.0, top: int = 10) -> ContextCounts:
        context = self._context(context)
        words, counts = self._followers(self._ids(context))
        total = int(counts.sum())
        p = self.distribution(context, smoothing, k)
        order = np.argsort(-counts, kind="stable")
        followers = [NextWord(self.itos[w], int(c), float(c / total), float(p[w]))
                     for w, c in zip(words[order], counts[order])]
        candidates = p[: self.vocab_size]
        best = np.argsort(-candidates, kind="stable")[:top]
        best = best[candidates[best] > 0]
        return ContextCounts(context, total, followers, [(self.itos[i], float(p[i])) for i in best],
                             p_unseen=float(p[-1]), n_unseen=self.vocab_size - len(words))

    def score(self, tokens: list[str], smoothing: Smoothing = "mle", k: float = 1.0) -> SentenceScore:
        """Chain rule over the (padded) sentence: one factor per token; with boundaries on, also for the </s>."""
        return self.score_batch([tokens], smoothing, k)[0]

    def score_batch(self, sentences: list[list[str]], smoothing: Smoothing = "mle",
                    k: float = 1.0) -> list[SentenceScore]:
        """score() for many sentences in one array pass: a held-out set's perplexity costs a few numpy calls, and
        Python touches each token only to look up its id."""
        sentences = [list(tokens) for tokens in sentences]
        padded = [self.pad(tokens) for tokens in sentences]
        lengths = np.fromiter(map(len, padded), np.int64, len(padded))
        flat = [token for sentence in padded for token in sentence]
        ids = np.fromiter(map(self.stoi.get, flat, repeat(self.unknown_id)), np.int64, len(flat))
        bounds = np.cumsum(lengths) - lengths  # where each sentence starts in the flat stream
        starts = np.repeat(bounds, lengths)  # (T,)
        first = self.n - 1 if self.boundaries else 0  # the <s> padding is context, never scored
        positions = np.flatnonzero(np.arange(len(ids)) - starts >= first)
        unknown = ids == self.unknown_id
        if not all(sentences) or unknown.any():  # the slow path, only for sentences with unknown tokens
            for tokens in sentences:
                self._check_sentence(tokens)  # the learner's message for an empty or all-unknown sentence
        p, counts, totals = self.chain(ids, positions, starts[positions], smoothing, k)
        log2_p = log2_or_inf(p)
        cuts = np.cumsum(lengths - first)
        log2_sums = np.add.reduceat(log2_p, np.concatenate([[0], cuts[:-1]])).tolist()
        known = ~unknown[positions]
        with_unknown = set(np.searchsorted(cuts, np.flatnonzero(unknown[positions]), side="right").tolist())
        short_ones = self.n if not self.boundaries else self.n - 1  # sentences shorter than this get a note
        scores, lo = [], 0
        for i, (tokens, sentence, hi) in enumerate(zip(sentences, padded, cuts.tolist())):
            missing = list(dict.fromkeys(t for t in tokens if not self.known(t))) if i in with_unknown else []
            notes = self._notes(len(tokens)) if len(tokens) < short_ones else []
            scores.append(SentenceScore(tokens, missing, sentence, first, self.n, p[lo:hi], log2_p[lo:hi],
                                        log2_sums[i], counts[lo:hi], totals[lo:hi], known[lo:hi], notes))
            lo = hi
        return scores

    def _check_sentence(self, tokens: list[str]) -> None:
        """A clear message for a sentence that cannot be scored."""
        if not tokens:
            raise UserInputError("ngram.err.empty_sentence")
        unknown = list(dict.fromkeys(t for t in tokens if not self.known(t)))
        if len(unknown) == len(set(tokens)):
            raise UserInputError("ngram.err.all_unknown", tokens=", ".join(map(short, unknown[:8])))

    def _notes(self, length: int) -> list[str]:
        if length < self.n - 1 or (not self.boundaries and length < self.n):
            return [i18n.text("ngram.note.short_padded" if self.boundaries else "ngram.note.short_sentence",
                              length=length, n=self.n)]
        return []

    def generate(self, prompt: list[str], steps: int = 20, smoothing: Smoothing = "mle", k: float = 1.0,
                 settings: "sampling.Settings | None" = None) -> Generation:
        """Sample one token at a time from P(w | last n-1 tokens), through core/text/sampling.py: the scores are
        log P, so temperature τ draws from P^(1/τ) renormalised, and top-k / top-p cut as for the neural models.
        <s> and <UNK> are never drawn; drawing </s> ends the sentence."""
        sampler = sampling.Sampler(settings or sampling.Settings())
        tokens, result = [BOS] * (self.n - 1) * self.boundaries + list(prompt), Generation(list(prompt), [])
        unknown = [t for t in prompt if not self.known(t)]
        if unknown:
            result.notes.append(i18n.text("ngram.note.prompt_unknown", tokens=", ".join(map(short, unknown))))
        drawable = np.ones(self.base, bool)
        drawable[[self.stoi.get(BOS, -1), self.stoi.get(UNK, -1), -1]] = False  # the off-V slot is never drawn
        label = lambda i: self.itos[i]  # noqa: E731
        for _ in range(steps):
            context = self._context(tokens)
            p = np.where(drawable, self.distribution(context, smoothing, k), 0.0)
            if p.sum() == 0:
                result.notes.append(i18n.text("ngram.note.stopped", context=" ".join(map(short, context))))
                break
            draw = sampler.draw(log_or_minus_inf(p), label)
            chosen = self.itos[draw.token]
            result.steps.append(Step(context, draw.cut.kept_tokens(), chosen, draw.probability, draw.cut))
            if chosen == EOS:
                break
            tokens.append(chosen)
        return result


def _find(keys: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where each key is or would be in the sorted keys, whether it is there). A few queries into a big table are
    searched in sorted order, so each binary search starts where the last one ended, in memory it just read (200
    sentences' trigrams: 5.0 -> 4.3 ms); many queries are not worth the sort (59k characters: 2x slower sorted)."""
    if len(key) * 8 < len(keys):
        order = np.argsort(key)
        i = np.empty(len(key), np.int64)
        i[order] = np.searchsorted(keys, key[order])
    else:
        i = np.searchsorted(keys, key)
    i = np.minimum(i, len(keys) - 1)
    return i, keys[i] == key
