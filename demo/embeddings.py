"""Word embeddings tab (issue #4): placeholder until that issue lands."""
from demo.common import pending_tab

TITLE = "Word embeddings"


def build() -> None:
    pending_tab(4, "one-hot, GloVe and word2vec")
