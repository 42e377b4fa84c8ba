"""N-gram tab (issue #3): placeholder until that issue lands."""
from demo.common import pending_tab

TITLE = "N-gram"


def build() -> None:
    pending_tab(3, "an n-gram language model")
