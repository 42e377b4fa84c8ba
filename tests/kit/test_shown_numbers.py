"""What the app says about its own numbers is true (issue #31, Required 7 and 8).

- The Overview's headline, the char-GPT's two held-out figures and the README are tied to the files that hold the
  numbers (assets/ladder/heldout.json, assets/gpt/config.json), so a retrained model cannot leave a stale sentence.
- No text meant for maintainers (a script, a test, a .py file) reaches the learner's Overview.
- BERT-large (seed §13.2) is counted from its config, checked against transformers' own BertModel built on the
  meta device (no weights, no download), next to BERT-base; a one-click preset shows it.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import app
from tests import app_events
from core.text import i18n
from core.text.i18n import using_language
from core.ladder.heldout import char_gpt_scores, load_held_out
from core.loading import resolve

ROOT = Path(__file__).resolve().parents[2]
GPT_CONFIG = ROOT / "assets" / "gpt" / "config.json"


def held_out_bits() -> dict[str, float]:
    return {row.key: row.bits_per_char for row in load_held_out()[1]}


# ---------------------------------------------------------------------------------------------------------------
# The Overview's headline and the held-out ladder


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_headline_quotes_the_ladders_own_numbers(lang):
    """The intro says which model wins on held-out text and by how much, with the ladder's numbers (2 decimals)."""
    bits = held_out_bits()
    intro = i18n.text("overview.intro", lang)
    best = min(bits, key=bits.get)
    assert best == "ngram-5-kneser_ney"  # if a neural rung ever wins, the intro's claim must be rewritten
    for key in ("ngram-5-kneser_ney", "gpt", "rnn", "lstm"):
        assert f"{bits[key]:.2f}" in intro, (lang, key)
    assert all(bits[key] > bits[best] for key in ("gpt", "rnn", "lstm"))
    rows = {row.key: row for row in load_held_out()[1]}
    neural = [rows[key].parameters for key in ("rnn", "lstm", "gpt")]
    thousands = [f"{n / 1000:.0f}" if lang == "en" else f"{n / 10000:.1f}" for n in (min(neural), max(neural))]
    assert all(number in intro for number in thousands), (lang, thousands)
    assert "a little\nbetter than the one before" not in intro and "都比前一个做得好一点" not in intro


def test_the_overview_shows_no_maintainer_text():
    from demo.ladder import overview

    for lang in i18n.LANGUAGES:
        page = overview.path_html(lang, app.TABS) + i18n.text("overview.intro", lang)
        assert not re.search(r"scripts/|tests/|\.py\b", page), lang
    for key in ("overview.held_out_note", "overview.held_out_protocols", "gpt.held_out", "gpt.badge",
                "gpt.source_shipped"):
        for lang in i18n.LANGUAGES:
            assert not re.search(r"scripts/|tests/|\.py\b", i18n.text(key, lang)), (key, lang)


def test_the_char_gpts_two_held_out_figures_come_from_their_files():
    info = json.loads(GPT_CONFIG.read_text(encoding="utf-8"))["info"]["held_out"]
    stream = held_out_bits()["gpt"]
    scores = char_gpt_scores()
    assert (scores.windows, scores.length, scores.window_nats, scores.stream_bits) == (
        info["windows"], info["seq_len"], info["loss_nats"], stream)
    assert scores.window_bits == pytest.approx(info["bits_per_char"], abs=1e-4)
    assert f"{scores.window_nats:.3f}" == "1.531" and f"{scores.stream_bits:.3f}" == "2.226"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_overview_and_the_gpt_tab_show_both_protocols_side_by_side(lang):
    from demo.transformer import gpt as gpt_demo
    from demo.ladder import overview

    scores = char_gpt_scores()
    nats, bits, stream = f"{scores.window_nats:.3f}", f"{scores.window_bits:.3f}", f"{scores.stream_bits:.3f}"
    page = overview.path_html(lang, app.TABS)
    assert all(number in page for number in (nats, bits, stream)), lang
    assert f"{scores.windows}" in page and f"{scores.windows * scores.length:,}" in page
    resolve.set_offline(True)
    with using_language(lang):
        badge = gpt_demo._badge("char-gpt")
    assert all(number in badge for number in (nats, bits, stream)), badge


def test_the_readmes_quote_the_same_figures():
    scores = char_gpt_scores()
    for path in (ROOT / "README.md", ROOT / "assets" / "README.md"):
        text = path.read_text(encoding="utf-8")
        assert f"{scores.window_nats:.3f} nats" in text and f"{scores.stream_bits:.3f}" in text, path
        assert f"{scores.window_bits:.3f} bits" in text, path
        assert "1.532" not in text, path  # 1.5315 rounded twice; the loss is 1.53145


def test_the_held_out_loss_in_the_config_is_recomputed(one_torch_thread):
    """The 64-window loss the badge quotes, recomputed from the shipped weights (about a second on one thread)."""
    from core.text.corpora import load_corpus
    from core.transformer.gpt import GPT_ASSETS, evaluate, load_char_gpt
    from core.recurrent.lstm import corpus_ids, split_text

    model, vocab, info = load_char_gpt(GPT_ASSETS)
    held = corpus_ids(split_text(load_corpus("moby_dick"))[1], vocab)
    loss = evaluate(model, held, info["held_out"]["seq_len"], info["held_out"]["windows"])
    assert loss == pytest.approx(info["held_out"]["loss_nats"], abs=2e-6)
    assert f"{loss:.3f}" == f"{info['held_out']['loss_nats']:.3f}"


# ---------------------------------------------------------------------------------------------------------------
# NER lesson 1: the seed tags the sentence in IOBES


def test_ner_lesson_one_says_what_the_seed_does():
    from core.tasks.ner import bio_to_iobes  # the conversion the lesson runs
    from core.text.seeds import SEED_WORD_TAGS

    seed_iobes = ["B-PER", "I-PER", "E-PER", "O", "S-LOC", "O", "O"]  # /work/shared/seed-examples.md §7
    assert bio_to_iobes([tag for _, tag in SEED_WORD_TAGS]) == seed_iobes
    for lang in i18n.LANGUAGES:
        question, answer = i18n.text("ner.lesson_1_q", lang), i18n.text("ner.lesson_1_a", lang)
        assert "IOBES" in question.split("BIO")[0], (lang, question)  # the seed's scheme is named first, as IOBES
        assert "斯坦 E-PER" in answer and "柏林 S-LOC" in answer and "斯坦 I-PER" in question


# ---------------------------------------------------------------------------------------------------------------
# BERT-large beside BERT-base (seed §13.2)


def meta_bert_count(**overrides) -> int:
    """transformers' BertModel (with its pooler) built on the meta device: shapes only, no memory, no download."""
    import torch
    import transformers

    with torch.device("meta"):
        model = transformers.BertModel(transformers.BertConfig(**overrides))
    return sum(p.numel() for p in model.parameters())


LARGE = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)


def test_bert_large_is_counted_from_its_config():
    from core.mlm.pretraining import model_card

    resolve.set_offline(True)
    card = model_card("bert-large-uncased")
    assert card.breakdown["total"] == meta_bert_count(**LARGE) == 335_141_888
    c = card.config
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size, c.vocab_size,
            c.max_position_embeddings, c.type_vocab_size) == (24, 1024, 16, 4096, 30522, 512, 2)
    # the seed's hand formula, written out here for L = 24, H = 1024, A = 16
    H, L, A = 1024, 24, 16
    hand = (30522 + 512 + 2) * H + H * 2 + L * (H * H // A * 3 * A + H * H + H * 4 * H * 2 + H * 2 * 2)
    assert card.seed_formula == hand == 333_871_104
    assert card.breakdown["total"] - card.seed_formula == card.omitted_biases + card.pooler == 221_184 + 1_049_600
    assert round(card.breakdown["total"], -7) == 340_000_000  # the seed's "about 340M", to two significant figures


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_card_shows_large_beside_base_in_the_learners_language(lang):
    from demo.mlm import handlers as mlm_handlers

    resolve.set_offline(True)
    with using_language(lang):
        table, text = mlm_handlers.card("bert-large-uncased")
        base_text = mlm_handlers.card("bert-base-uncased")[1]
    base, large = meta_bert_count(), meta_bert_count(**LARGE)
    for shown in (text, base_text):  # either size's card puts the two side by side
        assert f"{base:,}" in shown and f"{large:,}" in shown and f"{large / base:.2f}" in shown
    assert "333,871,104" in text and "1,270,784" in text
    parts = [row[0] for row in table["data"]]
    assert all(part in i18n.table(lang).values() for part in parts), parts  # every row from the tables
    if lang == "zh":
        assert not any(re.search(r"[a-z]{3,}", re.sub(r"（[^）]*）|BertModel|LayerNorm", "", part)) for part in parts)


def test_the_bert_large_preset_is_one_click_and_deep_linked():
    from demo.kit import preset_records

    resolve.set_offline(True)
    blocks = app.build_app()
    reg = blocks.preset_registry
    view = reg.find("mlm", "bert-large-parameters")
    assert view is not None and view.key == "card" and "bert-base-parameters" in view.presets
    preset_records.OPENED.clear()
    link = app_events.deep_links(blocks)["mlm"].fn
    updates = link("?tab=mlm&preset=bert-large-parameters")
    assert {"mlm", "card"} <= {getattr(v, "selected", None) for v in updates.values()
                               if type(v).__name__ == "Tabs"}
    assert any(isinstance(v, str) and "335,141,888" in v and "333,871,104" in v for v in updates.values())
    assert "bert-large-uncased" in updates.values()  # the picker shows the checkpoint the preset counts
    assert math.isclose(335_141_888 / 109_482_240, 3.061, abs_tol=1e-3)
