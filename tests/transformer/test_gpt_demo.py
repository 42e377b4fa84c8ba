"""demo/transformer/gpt.py handlers, called directly and through a built Blocks (the GPT sub-tabs of "Transformer & GPT")."""
import gradio as gr
import numpy as np
import pytest

from core.transformer import gpt as core_gpt
from demo.transformer import gpt
from core.loading import checkpoints

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CHAR = checkpoints.CHAR_GPT_ID


def test_next_token_figure_and_table():
    note, fig, table, shown = gpt.next_token(CHAR, "The White Wha", 1.0, 0, 1.0, 0)
    assert shown["visible"] is True  # the results column (hidden only while a checkpoint is missing)
    rows = table.values.tolist()  # the table's headers are in the learner's language
    before, after = fig.data[0], fig.data[1]  # no cut: before and after are the same numbers
    probs = np.asarray(before.x, dtype=float)
    assert len(probs) == 16 and np.all(np.diff(probs[:15]) <= 0) and probs.sum() == pytest.approx(1, abs=1e-5)
    assert before.y[0] == "l" and before.y[15].startswith("all other 61 tokens")  # "Wha" → "Whale"; 76 in all
    assert list(after.x) == pytest.approx(list(probs), abs=1e-6) and all(t.startswith("✓") for t in after.text[:15])
    assert len(fig.data) == 2  # τ = 1: no diamond for the model's own distribution (it is the bar)
    assert [r[2] for r in rows] == pytest.approx(list(probs[:15]), abs=1e-4)  # P at τ = 1
    assert [r[3] for r in rows] == [r[5] for r in rows]  # P_τ and q: the same without a cut
    assert "char-gpt" in note and "LSTM 1.577" in note and "RNN 1.563" in note
    assert "keeps **76** of 76 tokens" in note and "?tab=transformer&preset=char-gpt-white-wha&seed=0" in note


def test_top_k_top_p_and_temperature_cut_and_renormalise():
    _, fig, rows, _ = gpt.next_token(CHAR, "The White Wha", 1.0, 3, 1.0, 0)
    rows = rows.values.tolist()
    kept = [r for r in rows if r[4].startswith("✓")]
    assert len(kept) == 3 and sum(r[5] for r in kept) == pytest.approx(1, abs=1e-3)
    assert all(r[5] == 0 for r in rows if r not in kept) and "keeps 3 of 76" in fig.layout.title.text
    mass = sum(r[3] for r in kept)
    assert [r[5] for r in kept] == pytest.approx([r[3] / mass for r in kept], rel=1e-3)  # q = P_τ / kept mass
    _, nucleus, rows, _ = gpt.next_token(CHAR, "The White Wha", 1.0, 0, 0.5, 0)
    rows = rows.values.tolist()
    kept = [r for r in rows if r[4].startswith("✓")]
    assert kept[-1][6] >= 0.5 and (len(kept) == 1 or kept[-2][6] < 0.5)  # the fewest tokens holding ≥ p
    _, cold, _, _ = gpt.next_token(CHAR, "The White Wha", 0.2, 0, 1.0, 0)
    assert cold.data[0].x[0] > fig.data[0].x[0] and len(cold.data) == 3  # sharper; τ = 1 shown as diamonds
    note, greedy, rows, _ = gpt.next_token(CHAR, "The White Wha", 0, 0, 1.0, 0)
    assert "keeps **1** of 76" in note and "τ = 0 is the limit" in note and rows.values[0][5] == 1


def test_generate_streams_token_by_token_and_is_seeded():
    outputs = list(gpt.generate(CHAR, "Call me Ishmael. ", 25, 0.8, 0, 1.0, 7))
    assert len(outputs) == 3  # after 10 and 20 tokens, then the final message with the figure
    text, rows, note, fig, shown = outputs[-1]
    assert shown["visible"] is True and outputs[0][3] is not None  # the figure is sent first, then only at the end
    rows = rows.values.tolist()
    assert text.startswith("Call me Ishmael. ") and len(text) == len("Call me Ishmael. ") + 25
    assert len(rows) == 25 and rows[0][0] == 25 and all(0 < r[2] <= 1 for r in rows)
    assert all(r[3] == 76 for r in rows)  # no cut: every character but <unk> could be drawn
    assert "seed 7" in note and "First generated token" in fig.layout.title.text
    assert list(gpt.generate(CHAR, "Call me Ishmael. ", 25, 0.8, 0, 1.0, 7))[-1][0] == text


def test_attention_map_is_lower_triangular():
    note, fig, mean_fig, _ = gpt.attention(CHAR, "Call me Ishmael.", 2, 3)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (16, 16) and np.allclose(np.triu(z, 1), 0) and np.allclose(z.sum(1), 1, atol=1e-5)
    mean = np.asarray(mean_fig.data[0].z, dtype=float)
    assert np.allclose(np.triu(mean, 1), 0) and np.allclose(mean.sum(1), 1, atol=1e-5)
    assert "16 tokens" in note and "Layer 2, head 3" in fig.layout.title.text


def test_gpt_vs_bert_offline():
    note, gpt_fig, bert_fig, gpt_shown, bert_shown = gpt.gpt_vs_bert(core_gpt.PRESETS["en"][0], "gpt2",
                                                                     "bert-base-uncased")
    assert "The weather today is very" in note and "download gpt2" in note
    assert len(gpt_fig.data[0].x) == 10 and gpt_shown["visible"]  # the char-GPT's next characters
    # No bert-base-uncased here: the char-BERT reads both sides in its place, and the note names the download.
    assert len(bert_fig.data[0].x) == 10 and bert_shown["visible"] and "char-bert" in bert_fig.layout.title.text
    assert "`hf download bert-base-uncased`" in note


@pytest.mark.parametrize("call, message", [
    (lambda: gpt.next_token(CHAR, "", 1.0, 0, 1.0, 0), "empty"),
    (lambda: gpt.next_token(CHAR, "x" * 500, 1.0, 0, 1.0, 0), "at most 128"),
    (lambda: gpt.next_token(CHAR, "Call me", -2, 0, 1.0, 0), "temperature must be a number from 0"),
    (lambda: gpt.next_token(CHAR, "Call me", None, 0, 1.0, 0), "temperature must be a number from 0"),
    (lambda: gpt.next_token(CHAR, "我们", 1.0, 0, 1.0, 0), "knows none of these characters: '我', '们'"),
    (lambda: gpt.next_token("\x00../etc", "Hello", 1.0, 0, 1.0, 0), "not on this machine"),
    (lambda: gpt.next_token(CHAR, "Call me", 1.0, -1, 1.0, 0), "top-k must be a whole number"),
    (lambda: gpt.next_token(CHAR, "Call me", 1.0, 2.5, 1.0, 0), "top-k must be a whole number"),
    (lambda: gpt.next_token(CHAR, "Call me", 1.0, 0, -0.1, 0), "top-p must be a number from 0 to 1"),
    (lambda: gpt.next_token(CHAR, "Call me", 1.0, 0, float("nan"), 0), "top-p must be a number from 0 to 1"),
    (lambda: gpt.next_token(CHAR, "Call me", 1.0, 0, 1.0, 2**40), "seed must be a whole number"),
    (lambda: list(gpt.generate(CHAR, "Call me", 0, 0.8, 0, 1.0, 0)), "Length"),
    (lambda: list(gpt.generate(CHAR, "Call me", 10, 5.0, 0, 1.0, 0)), "temperature must be a number from 0"),
    (lambda: gpt.attention(CHAR, "Call me", 5, 1), "4 layers of 4 heads"),
    (lambda: gpt.attention(CHAR, "Call me", 1, 0), "4 layers of 4 heads"),
    (lambda: gpt.gpt_vs_bert("no blank", CHAR, "bert-base-uncased"), "exactly one blank"),
])
def test_bad_input_gets_a_clear_message(call, message):
    with pytest.raises(gr.Error, match=message):
        call()


def test_built_sub_tabs_are_named_and_fill_on_open():
    with gr.Blocks() as blocks:
        with gr.Tab("Transformer & GPT"), gr.Tabs():
            gpt.build()
    names = {dep.api_name for dep in blocks.fns.values()}
    assert {"transformer_gpt_next", "transformer_gpt_generate", "transformer_gpt_attention",
            "transformer_gpt_vs_bert", "transformer_gpt_next_open",
            "transformer_gpt_generate_open", "transformer_gpt_attention_open", "transformer_gpt_vs_bert_open"} <= names
    assert all(name.startswith("transformer_") for name in names if name)
    opened = next(dep for dep in blocks.fns.values() if dep.api_name == "transformer_gpt_next_open")
    updates = opened.fn(False)  # the sub-tab opened for the first time: its default preset (demo/kit/presets.py)
    values = list(updates.values())
    inputs = next(dep for dep in blocks.fns.values() if dep.api_name == "transformer_gpt_next").inputs
    assert {CHAR, gpt.NEXT_EXAMPLES[0][1]} <= {c.value for c in inputs}  # built with the default: not sent again
    assert not set(map(id, inputs)) & set(map(id, updates))
    rows = next(v for v in values if hasattr(v, "iloc")).values.tolist()
    want = core_gpt.next_token(CHAR, gpt.NEXT_EXAMPLES[0][1]).cut
    assert [r[1] for r in rows] == [t.replace(" ", "␣") for t in want.tokens]
    assert [r[5] for r in rows] == pytest.approx(list(want.renormalised), abs=1e-4)


def test_results_and_errors_come_in_the_learners_language():
    from core.text.i18n import using_language

    with using_language("zh"):
        note, fig, table, _ = gpt.next_token(CHAR, "The White Wha", 1.0, 0, 1.0, 0)
        assert note.startswith("**模型：** char-gpt · 4 层 × 4 个头") and list(table.columns)[1] == "词元"
        assert "截断保留 76 个中的 76 个" in fig.layout.title.text and fig.data[0].name.startswith("截断前")
        assert "其余 61 个词元" in fig.data[0].y[-1]
        with pytest.raises(gr.Error, match="不认识这些字符中的任何一个：'今', '天', '气'.*中文 GPT-2"):
            gpt.next_token(CHAR, "今天天气", 1.0, 0, 1.0, 0)
        with pytest.raises(gr.Error, match="top-p 必须是 0 到 1 之间的数"):
            gpt.next_token(CHAR, "Call me", 1.0, 0, 7, 0)
    with pytest.raises(gr.Error, match="knows none of these characters: '今', '天', '气'"):
        gpt.next_token(CHAR, "今天天气", 1.0, 0, 1.0, 0)


def test_the_chinese_weather_preset_says_what_to_fetch_and_that_numbers_differ():
    """今天天气很 on uer/gpt2-chinese-cluecorpussmall: offline (no cached checkpoint) the preset still shows a result
    view: the message names the checkpoint and `hf download`; GPT vs BERT on the seed's sentence says the seed's
    numbers are illustrations."""
    preset = {p.slug: p for p in gpt.NEXT_PRESETS}["chinese-gpt2-weather"]
    assert preset.resolved()[:2] == (checkpoints.CHINESE_GPT2_ID, "今天天气很")
    view_fn = gpt._or_message(gpt.next_token, 1, table="next", results=1)
    note, fig, table, shown = view_fn(*preset.resolved())
    assert "hf download uer/gpt2-chinese-cluecorpussmall\n" in note  # the card (issue #31): one command
    assert fig is None and table is None and shown["visible"] is False  # its empty results are hidden
    vs = {p.slug: p for p in gpt.VS_PRESETS}["jintian-tianqi-hen"]
    note, gpt_fig, bert_fig, gpt_shown, bert_shown = gpt.gpt_vs_bert(*vs.resolved())
    assert "hf download uer/gpt2-chinese-cluecorpussmall" in note and "illustrations" in note
    assert "hf download bert-base-chinese\n" in note and not bert_shown["visible"]
    assert gpt_fig is None and not gpt_shown["visible"]  # the char-GPT fallback cannot read 今天天气很: the note says so


@pytest.mark.parametrize("call", [
    lambda: gpt.next_token("gpt2", "Hello", 1.0, 0, 1.0, 0),
    lambda: list(gpt.generate("gpt2", "Hello", 10, 1.0, 0, 1.0, 0))[-1],
    lambda: gpt.attention("gpt2", "i have a dream", 1, 1),
])
def test_a_gpt2_view_offline_shows_the_card_and_hides_its_empty_results(call):
    """Issue #31 §3: with no cached GPT-2, the view's note is the card naming `hf download gpt2`, and its figures and
    tables are hidden, not drawn empty."""
    outputs = call()
    cards = [o for o in outputs if isinstance(o, str) and "hf download gpt2\n" in o]
    assert len(cards) == 1 and "char-GPT" in cards[0]
    assert outputs[-1] == {"__type__": "update", "visible": False}
    assert all(o is None for o in outputs[:-1] if o is not cards[0])
