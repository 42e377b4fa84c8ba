"""RNN & LSTM tab (issue #5): placeholder until that issue lands."""
from demo.common import pending_tab

TITLE = "RNN & LSTM"


def build() -> None:
    pending_tab(5, "RNN and LSTM language models")
