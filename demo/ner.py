"""NER tab (issue #8): placeholder until that issue lands."""
from demo.common import pending_tab

TITLE = "NER"


def build() -> None:
    pending_tab(8, "BERT named-entity recognition")
