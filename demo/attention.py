"""Attention tab (issue #6): placeholder until that issue lands."""
from demo.common import pending_tab

TITLE = "Attention"


def build() -> None:
    pending_tab(6, "attention heatmaps")
