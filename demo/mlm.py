"""BERT masked LM tab (issue #7): placeholder until that issue lands."""
from demo.common import pending_tab

TITLE = "BERT masked LM"


def build() -> None:
    pending_tab(7, "BERT fill-mask")
