"""Issue #31 in a real browser (1440×900): opening a trainer's sub-tab, with no other click, shows the untrained
model (random initialisation, labelled so): every plot has data and every table has rows, in English and 中文.

Run: python -m pytest tests/e2e/test_trainers_first_open.py -m e2e -n0
"""
from __future__ import annotations

import pytest

from tests.e2e.conftest import fresh_page
from tests.e2e.first_open import FULL_JS, content, open_view

pytestmark = pytest.mark.e2e

TRAINERS = {
    "en": [("Word embeddings", "Train word2vec"), ("RNN & LSTM", "Train"),
           ("Classification & fine-tuning", "Fine-tune MiniLM yourself")],
    "zh": [("词向量", "训练 word2vec"), ("RNN 与 LSTM", "训练"), ("分类与微调", "自己微调 MiniLM")],
}
LABEL = {"en": "random initialisation", "zh": "训练前（随机初始化）"}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("lang, locale", [("en", "en-US"), ("zh", "zh-CN")])
def test_each_trainer_shows_its_untrained_model_when_first_opened(browser, served_app, lang, locale):
    page = fresh_page(browser, served_app.url, locale)
    try:
        for tab, sub in TRAINERS[lang]:
            open_view(page, tab, sub)  # only tab buttons: no preset, no Train
            page.wait_for_function(FULL_JS)
            shown = content(page)
            assert shown["plots"] >= 1 and shown["tables"] >= 1, (tab, sub, shown)
            label = page.locator(".tabitem").filter(visible=True).get_by_text(LABEL[lang]).filter(visible=True)
            label.first.wait_for()
    finally:
        page.close()
