"""Issue #34 item 5: the char-BERT in the BERT masked LM tab and in GPT vs BERT, chosen as "char-bert" or standing in
offline for a Hub checkpoint: a word blank is one [MASK] per character, the top-k per character, the iterative word
beside the independent argmaxes; the char-GPT and the char-BERT on the same blank. Values are checked against
transformers' BertForMaskedLM on the shipped files."""
from __future__ import annotations

import json

import gradio as gr
import pytest
import torch
import transformers
from safetensors import safe_open

from core.loading import resolve
from core.loading.checkpoints import CHAR_BERT_ID
from core.text.i18n import using_language
from core.mlm.char import CHAR_BERT_ASSETS, FIRST_CHAR_ID, written_blanks
from demo.transformer import gpt as gpt_demo
from demo.mlm import mlm, handlers as mlm_handlers

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SHOWN = {"__type__": "update", "visible": True}
HIDDEN = {"__type__": "update", "visible": False}
TOKENS = json.loads((CHAR_BERT_ASSETS / "config.json").read_text(encoding="utf-8"))["tokens"]


@pytest.fixture(scope="module")
def reference():
    transformers.logging.set_verbosity_error()
    return transformers.BertForMaskedLM.from_pretrained(str(CHAR_BERT_ASSETS)).eval()


@pytest.fixture
def offline():
    was = resolve.is_offline()
    resolve.set_offline(True)
    yield
    resolve.set_offline(was)


def first_pass(reference, text_with_masks: str, k: int) -> list[list[tuple[str, float]]]:
    """transformers' top-k characters at every [MASK] of [CLS] text [SEP] (one id per character)."""
    pieces = text_with_masks.split("\0")
    ids = [TOKENS.index("[CLS]")]
    for i, piece in enumerate(pieces):
        ids += [TOKENS.index(ch) for ch in piece]
        if i < len(pieces) - 1:
            ids.append(TOKENS.index("[MASK]"))
    ids.append(TOKENS.index("[SEP]"))
    with torch.inference_mode():
        probs = reference(input_ids=torch.tensor([ids])).logits[0].softmax(-1)  # (T, V)
    rows = [i for i, token in enumerate(ids) if token == TOKENS.index("[MASK]")]
    out = []
    for row in rows:
        values, indices = probs[row, FIRST_CHAR_ID:].topk(k)
        out.append([(TOKENS[i + FIRST_CHAR_ID].replace(" ", "␣"), p) for p, i in zip(values.tolist(), indices.tolist())])
    return out


def test_a_blank_is_as_long_as_it_is_written():
    assert written_blanks("my dog is _____ .") == ("my dog is _____ .", [5])
    assert written_blanks("a [MASK][mask][MASK] b [MASK] c _") == ("a ___ b _ c _", [3, 1, 1])
    assert written_blanks("no blank") == ("no blank", [])
    assert written_blanks(None) == ("", [])


def test_fill_on_the_char_bert_shows_top_k_per_character_and_both_words(reference):
    notice, filled, figure, table, _, shown = mlm_handlers.fill(CHAR_BERT_ID, "my dog is _____ .", 4)
    assert shown == SHOWN and "char-BERT" in notice and "hf download" not in notice
    expected = first_pass(reference, "my dog is \0\0\0\0\0 .", 4)
    assert len(figure.data) == 5  # one bar chart per hidden character
    for trace, want in zip(figure.data, expected):
        assert list(trace.y) == [c for c, _ in want]
        assert list(trace.x) == pytest.approx([p for _, p in want], abs=1e-5)
    rows = mlm_handlers.rows_of(table)
    assert [row[0] for row in rows] == [1, 2, 3, 4, 5] and sorted(row[2] for row in rows) == [1, 2, 3, 4, 5]
    independent = "".join(want[0][0] for want in expected)
    assert {row[2]: row[5] for row in rows} == {n + 1: independent[n] for n in range(5)}  # its own argmax column
    iterative = "".join(row[3] for row in sorted(rows, key=lambda row: row[2]))
    assert f"my dog is {iterative} ." in filled and f"my dog is {independent} ." in filled
    # The first step is the most confident first-pass position, and its probability is that pass's maximum.
    best = max(range(5), key=lambda n: expected[n][0][1])
    assert rows[0][2] == best + 1 and rows[0][4] == pytest.approx(expected[best][0][1], rel=1e-3)


def test_the_badge_states_the_held_out_figures_and_the_pseudo_likelihood_caveat():
    rows = {row["model"]: row for row in json.loads((CHAR_BERT_ASSETS / "heldout.json").read_text())["rows"]}
    both, left = rows["char-BERT, both sides"], rows["char-GPT, left only"]
    for lang, caveat in (("en", "not a probability of the text"), ("zh", "不是这段文本的概率")):
        with using_language(lang):
            notice = mlm_handlers.fill(CHAR_BERT_ID, "Call me _______.", 3)[0]
        assert f"{both['accuracy']:.2%}" in notice and f"{left['accuracy']:.2%}" in notice
        assert f"{both['bits_per_char']:.4g}" in notice and f"{left['bits_per_char']:.4g}" in notice
        assert caveat in notice
    assert "trained here" not in notice  # the zh notice is Chinese


def test_offline_a_hub_checkpoint_gives_way_to_the_char_bert(offline, reference):
    for call in (lambda: mlm_handlers.fill("bert-base-uncased", "the man went to ___ store.", 3),
                 lambda: tuple(column[0] for column in mlm_handlers.fill_batch(
                     ["bert-base-uncased"], ["the man went to ___ store."], [3]))):
        notice, filled, figure, table, _, shown = call()
        assert shown == SHOWN and notice.count("hf download bert-base-uncased") == 1 and "char-BERT" in notice
        assert [list(trace.y) for trace in figure.data] == [[c for c, _ in want] for want in
                                                            first_pass(reference, "the man went to \0\0\0 store.", 3)]
    # A batch mixing the char-BERT, an offline Hub id and a bad text: each request its own answer.
    notices, filled, _, tables, _, shown = mlm_handlers.fill_batch(
        [CHAR_BERT_ID, "bert-base-uncased", CHAR_BERT_ID], ["Call me ___.", "Call me ___.", "no blank here"], [2, 2, 2])
    assert filled[0] == filled[1] and "hf download" in notices[1] and "hf download" not in notices[0]
    assert shown[:2] == [SHOWN, SHOWN] and shown[2] == HIDDEN and "no blank" in notices[2].lower()


def test_chinese_text_offline_keeps_the_card_and_says_why():
    with using_language("zh"):
        notice, _, figure, table, _, shown = mlm_handlers.fill("bert-base-chinese", "今天天气很[MASK]。", 5)
    assert "hf download bert-base-chinese" in notice and "char-BERT 在这里无法代替它" in notice
    assert shown == HIDDEN and figure is None


def test_both_sides_vs_left_puts_the_char_gpt_beside_the_char_bert(reference):
    text = "The weather today is very ___, so we had to cancel the outdoor game."
    notice, summary, both_fig, gpt_fig, shown = mlm_handlers.compare(CHAR_BERT_ID, text, 5)
    assert shown == SHOWN and "char-BERT" in notice
    want = first_pass(reference, "The weather today is very \0\0\0, so we had to cancel the outdoor game.", 5)[0]
    assert list(both_fig.data[0].y) == [c for c, _ in want]
    assert list(both_fig.data[0].x) == pytest.approx([p for _, p in want], abs=1e-5)
    # The char-GPT's first character: its next-character softmax after the left side (transformers' GPT2LMHeadModel).
    from core.transformer import gpt as core_gpt
    model, vocab, _ = core_gpt.shipped_char_gpt()
    ids = vocab.encode("The weather today is very ")[0]
    with torch.inference_mode():
        probs = model(torch.tensor([ids])).logits[0, -1].float().softmax(-1)
    values, indices = probs[1:].topk(5)
    assert list(gpt_fig.data[0].y) == [vocab.tokens[i + 1].replace(" ", "␣") for i in indices.tolist()]
    assert list(gpt_fig.data[0].x) == pytest.approx(values.tolist(), abs=1e-5)
    assert summary.count("| char-BERT |") == 2 and summary.count("| char-GPT |") == 1


def test_gpt_vs_bert_offline_reads_the_blank_with_the_two_models_trained_here(offline, reference):
    note, gpt_fig, bert_fig, gpt_shown, bert_shown = gpt_demo.gpt_vs_bert(*gpt_demo.VS_EXAMPLES[0])
    assert gpt_shown == bert_shown == SHOWN
    assert "hf download bert-base-uncased" in note and "char-BERT" in note and "char-GPT" in note
    want = first_pass(reference, "The weather today is very \0\0\0, so we had to cancel the outdoor game.", 10)[0]
    assert list(bert_fig.data[0].y) == [c for c, _ in want]
    chosen = gpt_demo.gpt_vs_bert(*gpt_demo.VS_EXAMPLES[3])  # picked: char-gpt vs char-bert, no download named
    assert "hf download" not in chosen[0] and list(chosen[2].data[0].y) == [c for c, _ in want]


def test_the_other_views_say_what_the_char_bert_cannot_do_and_count_its_parameters():
    with pytest.raises(gr.Error, match="no NSP head"):
        mlm_handlers.nsp(CHAR_BERT_ID, *mlm.NSP_EXAMPLES[0])
    note = mlm_handlers.inputs(CHAR_BERT_ID, "my dog is cute", "he likes playing")[0]
    assert "MiniLM" in note and "reads characters one by one" in note
    rows, text = mlm_handlers.card(CHAR_BERT_ID)
    with safe_open(str(CHAR_BERT_ASSETS / "model.safetensors"), "pt") as weights:  # every parameter once
        total = sum(weights.get_tensor(key).numel() for key in weights.keys())
    assert mlm_handlers.rows_of(rows)[-1] == ["total", f"{total:,}"] and f"**{total:,}**" in text


def test_the_seed_examples_are_one_click_char_bert_presets():
    ids = {p.slug: p for p in mlm.FILL_PRESETS + mlm.COMPARE_PRESETS}
    for name in ("char-bert-hairy", "char-bert-ishmael", "char-bert-gallon", "char-bert-weather",
                 "char-gpt-vs-char-bert", "char-sides-opened"):
        assert ids[name].resolved()[0] == CHAR_BERT_ID
    assert ids["char-gpt-vs-char-bert"].resolved()[1:] == (mlm.COMPARE_EXAMPLES[0][0], 8)
    assert gpt_demo.VS_PRESETS[-2].slug == "char-gpt-vs-char-bert"  # the same slug in the GPT tab
    assert gpt_demo.VS_PRESETS[-1].resolved()[1:] == ("char-gpt", CHAR_BERT_ID)
    notice, filled, figure, table, _, shown = mlm_handlers.fill(*ids["char-bert-gallon"].resolved())
    assert len(figure.data) == 5 and shown == SHOWN  # "___" and "__": the, of


def test_the_overview_keeps_the_masked_lm_apart_from_the_ladder():
    """Issue #34 item 4: where the ladder's bits/char and the char-BERT's bits per masked character both appear, the
    Overview says that a pseudo-log-likelihood is not a probability of the text (en + zh)."""
    import app
    from demo.ladder import overview

    rows = {row["model"]: row for row in json.loads((CHAR_BERT_ASSETS / "heldout.json").read_text())["rows"]}
    both, left = rows["char-BERT, both sides"], rows["char-GPT, left only"]
    for lang, words in (("en", ("not a probability of the text", "pseudo-log-likelihood", "bits/char")),
                        ("zh", ("不是这段文本的概率", "伪对数似然", "每字符"))):
        page = overview.path_html(lang, app.TABS)
        assert f"{both['bits_per_char']:.4g}" in page and f"{left['bits_per_char']:.4g}" in page, lang
        assert f"{both['accuracy']:.2%}" in page and "8,913" in page
        assert all(word in page for word in words), lang
