"""QA tab (issue #9): placeholder until that issue lands."""
from demo.common import pending_tab

TITLE = "QA"


def build() -> None:
    pending_tab(9, "BERT question answering")
