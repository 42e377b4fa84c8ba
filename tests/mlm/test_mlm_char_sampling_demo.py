"""Issue #36 item 1 in the BERT masked LM tab's Fill view: on the char-BERT, the sampling controls every generating
tab has (demo/kit/sampling.py) draw each character of the iterative fill; the view shows the first step's next-token
figure and what each step drew, and a preset's link carries its seed. A Hub checkpoint fills in one pass: its note
says the controls draw nothing there. Impossible settings get a clear message; the labels are Chinese in Chinese."""
from __future__ import annotations

import gradio as gr
import pytest

from core.loading.checkpoints import CHAR_BERT_ID
from core.text.i18n import using_language
from core.mlm.char import fill_as_written
from core.text.sampling import Settings
from demo.mlm import mlm, handlers as mlm_handlers
from demo.kit import presets
from demo.mlm import char_views
from demo.kit.widgets import sig4

pytestmark = pytest.mark.usefixtures("one_torch_thread")
ISHMAEL = char_views.CHAR_FILL_EXAMPLES[0]
SAMPLED = (1.2, 0, 0.9, 7)  # the sampled preset's settings
SHOWN = {"__type__": "update", "visible": True}
HIDDEN = {"__type__": "update", "visible": False}


def fill(*controls, text=ISHMAEL, top_k=5, model=CHAR_BERT_ID):
    return mlm_handlers.fill(model, text, top_k, *controls, progress=lambda *a, **k: None)


def test_the_view_shows_the_first_draws_cut_and_what_every_step_drew():
    notice, filled, candidates, table, next_char, shown = fill(*SAMPLED)
    core = fill_as_written(ISHMAEL, 5, Settings(*SAMPLED))
    assert shown == SHOWN and f"`{core.iterative}`" in filled
    rows = mlm_handlers.rows_of(table)
    assert table["headers"][3] == "drawn" and table["headers"][6:] == ["q(drawn)", "tokens kept", "mass kept",
                                                                      "most probable (P_τ)"]
    for row, step in zip(rows, core.steps):  # each step: where, what it drew, with what q, from how large a cut
        assert row[:4] == [step.step, step.blank + 1, step.offset + 1, char_views.shown(step.char)]
        assert row[6:9] == [sig4(step.draw.probability), step.draw.cut.kept_count, sig4(step.draw.cut.kept_mass)]
    assert len(rows) == 7 and len(candidates.data) == 7  # the first pass's top-k still beside it
    # The next-token figure of the first filled character: the same figure as every generating tab
    cut = core.steps[0].draw.cut
    figure = next_char["value"]
    assert next_char["visible"] is True and len(figure.data) == 3  # τ ≠ 1: the model's own distribution as diamonds
    before, after, original = figure.data
    assert list(before.y)[:len(cut.tokens)] == [char_views.shown(c) for c in cut.tokens]
    assert list(before.x)[:len(cut.tokens)] == pytest.approx(cut.tempered.tolist())
    assert [text.startswith("✓") for text in after.text][:len(cut.tokens)] == cut.kept.tolist()
    assert list(original.x) == pytest.approx(cut.original.tolist())
    title = figure.layout.title.text
    assert title.startswith(f"First filled character (blank 1 · char {core.steps[0].offset + 1})")
    assert f"keeps {cut.kept_count} of 76 characters" in title and "τ = 1.2 · no top-k · top-p 0.9 · seed 7" in title
    assert f"drew {char_views.shown(core.steps[0].char)}" in filled and f"keeps **{cut.kept_count}** of 76" in filled


def test_tau_zero_is_the_argmax_fill_as_before():
    plain = fill(text="my dog is _____ .", top_k=4)  # the controls' defaults
    greedy = fill(0.0, 0, 1.0, 0, text="my dog is _____ .", top_k=4)
    assert plain[1] == greedy[1] and plain[3] == greedy[3]
    core = fill_as_written("my dog is _____ .", 4)
    rows = mlm_handlers.rows_of(plain[3])
    assert [row[3] for row in rows] == [char_views.shown(s.char) for s in core.steps]
    assert {row[6] for row in rows} == {1.0} and {row[7] for row in rows} == {1}  # all the mass on the argmax
    assert "τ = 0 (greedy)" in plain[1] and "τ = 0 is the limit" in plain[1]
    # top-p 0 is no error: only the most probable character is kept, so it writes the argmax, and the note says why
    nucleus = fill(1.0, 0, 0.0, 3, text="my dog is _____ .", top_k=4)
    assert [row[3] for row in mlm_handlers.rows_of(nucleus[3])] == [row[3] for row in rows]
    assert "top-p 0 keeps only the most probable token" in nucleus[1]


def test_a_seed_reproduces_the_fill_and_goes_into_the_link():
    seven, again, eight = fill(*SAMPLED)[1], fill(*SAMPLED)[1], fill(1.2, 0, 0.9, 8)[1]
    assert seven == again and "(?tab=mlm&preset=char-bert-ishmael-sampled&seed=7)" in seven
    assert "(?tab=mlm&preset=char-bert-ishmael-sampled&seed=8)" in eight and eight.split("\n")[0] != seven.split("\n")[0]
    assert "?tab=" not in fill(1.3, 0, 0.9, 7)[1]  # another setting: no preset shows this result
    assert "?tab=" not in fill(*SAMPLED, text=ISHMAEL + " ")[1]  # another text (the same once cleaned): no link


@pytest.fixture(scope="module")
def mlm_tab():
    with gr.Blocks() as blocks:
        collector = presets.Registry()
        with gr.Tabs() as tabs:
            with gr.Tab("mlm", id="mlm") as tab, collector.tab("mlm", tab):
                mlm.build()
        collector.wire(blocks, tabs)
    return blocks, collector


def test_the_sampled_preset_is_one_click_and_its_link_reruns_it_with_another_seed(mlm_tab):
    blocks, collector = mlm_tab
    links = [item.get("link") for c in blocks.blocks.values()
             if isinstance(c, gr.HTML) and "preset-bar" in (c.elem_classes or []) for item in c.props["items"]]
    assert "?tab=mlm&preset=char-bert-ishmael-sampled&seed=7" in links
    assert "?tab=mlm&preset=char-bert-ishmael&seed=0" in links
    view = collector.find("mlm", "char-bert-ishmael-sampled")
    updates = collector.deep_link({"tab": "mlm", "preset": "char-bert-ishmael-sampled", "seed": "8"}, "mlm")
    assert updates[view.inputs[view.seed_index]] == 8 and "sampling.seed" in str(view.inputs[view.seed_index].label)
    assert updates[view.outputs[1]] == fill(1.2, 0, 0.9, 8)[1]
    assert "preset=char-bert-ishmael-sampled&seed=8" in updates[view.outputs[1]]
    accordion = view.inputs[3].parent  # the four controls sit in an accordion labelled for the char-BERT's fill
    while not isinstance(accordion, (gr.Accordion, gr.Tab)):
        accordion = accordion.parent
    assert isinstance(accordion, gr.Accordion) and accordion.open
    assert "mlm.char_bert.sampling_accordion" in str(accordion.label)


def test_a_hub_checkpoint_says_the_controls_draw_nothing_there(tiny_checkpoint):
    folder = str(tiny_checkpoint("BertForPreTraining"))
    notice, filled, _, _, next_char, shown = fill(*SAMPLED, text="my dog is [MASK] .", model=folder)
    assert shown == SHOWN and next_char == {"__type__": "update", "value": None, "visible": False}
    assert "draw the char-BERT's characters only" in filled and "τ = 1.2 · no top-k · top-p 0.9 · seed 7" in filled
    # τ = 0: the one-shot fill's argmax is what τ = 0 means, so nothing is left out and nothing is said
    assert "characters only" not in fill(text="my dog is [MASK] .", model=folder)[1]
    with using_language("zh"):
        assert "只用于 char-BERT 抽取字符" in fill(*SAMPLED, text="my dog is [MASK] .", model=folder)[1]
    # batched: the same answers, request by request
    columns = mlm_handlers.fill_batch([folder, CHAR_BERT_ID], ["my dog is [MASK] .", ISHMAEL], [5, 5], [1.2, 1.2],
                                      [0, 0], [0.9, 0.9], [7, 7])
    assert "draw the char-BERT's characters only" in columns[1][0] and columns[1][1] == fill(*SAMPLED)[1]


@pytest.mark.parametrize("controls, message", [
    ((-0.5, 0, 1.0, 0), "temperature must be a number from 0"), ((1.0, 0, 1.5, 0), "top-p must be a number from 0"),
    ((1.0, -3, 1.0, 0), "top-k must be a whole number"), ((1.0, 0, 1.0, -1), "seed must be a whole number"),
    ((float("nan"), 0, 1.0, 0), "temperature"), ((1.0, 0, 1.0, 2.5), "seed"),
])
def test_impossible_settings_get_a_clear_message(controls, message):
    with pytest.raises(gr.Error, match=message):
        fill(*controls)
    # batched, beside a good request: that request's notice says it, the other is answered
    columns = mlm_handlers.fill_batch([CHAR_BERT_ID] * 2, [ISHMAEL] * 2, [5, 5],
                                      *([value, good] for value, good in zip(controls, SAMPLED)))
    assert message in columns[0][0] and columns[-1] == [HIDDEN, SHOWN] and columns[1][1] == fill(*SAMPLED)[1]


def test_the_labels_are_chinese_in_chinese():
    with using_language("zh"):
        _, filled, _, table, next_char, _ = fill(*SAMPLED)
    assert table["headers"][:7] == ["步", "空格", "字符序号", "抽到的词元", "τ = 1 时的 P", "各自最大概率", "q（抽到的词元）"]
    assert "每个字符怎样写下" in filled and "第一个填写的字符" in filled and "种子 7" in filled
    assert next_char["value"].layout.title.text.startswith("第一个填写的字符（第 1 个空")
    assert "How each" not in filled and "First filled" not in next_char["value"].layout.title.text
