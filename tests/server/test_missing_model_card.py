"""Issue #31 §3: a view whose checkpoint is not on this machine shows ONE card (what it would show, the exact
`hf download <id>`), in the learner's language, and hides its model outputs instead of leaving them empty.

Run offline with the session's empty HF_HOME (tests/conftest.py): no checkpoint is cached, so every BERT view below
meets the missing-model path for real."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.loading import checkpoints, resolve
from core.text.i18n import using_language
from demo.tasks import classify, ner, qa
from demo.transformer import gpt
from demo.mlm import mlm
from demo.server.downloads import missing_model_card, needs_download, results_visible
from demo.mlm.handlers import compare, fill, fill_batch, nsp

HIDDEN = {"__type__": "update", "visible": False}
CARD_WORDS = {"en": ("What it shows", "is not on this machine"), "zh": ("它会显示", "本机还没有这个模型")}


@pytest.fixture(scope="module", autouse=True)
def offline():
    was = resolve.is_offline()
    resolve.set_offline(True)
    yield
    resolve.set_offline(was)


def assert_card(card: str, model: str, lang: str) -> None:
    assert f"hf download {model}\n" in card, card  # the exact id, alone on the command line
    for words in CARD_WORDS[lang]:
        assert words in card, (lang, card)
    if lang == "zh":  # the card's own sentences are Chinese (the reason inside it may name English ids)
        assert "What it shows" not in card and "To get it" not in card


# (name, handler call, checkpoint, index of the card in the outputs, how many hidden columns end the outputs)
CASES = [
    # English text: the char-BERT stands in (tests/mlm/test_mlm_char_demo.py); Chinese it cannot read, so the card.
    ("mlm-fill-zh", lambda request: fill("bert-base-chinese", "今天天气很[MASK]。", 5), "bert-base-chinese", 0, 1),
    ("mlm-fill-batch", lambda request: tuple(column[0] for column in fill_batch(["bert-base-chinese"], ["今天天气很[MASK]。"],
                                                                        [5], request=request)), "bert-base-chinese", 0, 1),
    ("mlm-compare-zh", lambda request: compare("bert-base-chinese", mlm.COMPARE_EXAMPLES[1][0], 8), "bert-base-chinese",
     0, 1),
    ("mlm-nsp", lambda request: nsp("bert-base-uncased", *mlm.NSP_EXAMPLES[0]), "bert-base-uncased", 0, 1),
    ("ner", lambda request: ner.tag_text(ner.EXAMPLES[0][0], ner.NER_ID, "first"), ner.NER_ID, 1, ner.RESULT_COLUMNS),
    ("ner-zh", lambda request: ner.tag_text(ner.EXAMPLES[5][0], ner.ZH_NER_ID, "simple"), ner.ZH_NER_ID, 1,
     ner.RESULT_COLUMNS),
    ("ner-batch", lambda request: tuple(column[0] for column in ner.tag_batch([ner.EXAMPLES[0][0]], [ner.NER_ID],
                                                                      ["first"], request=request)), ner.NER_ID, 1, ner.RESULT_COLUMNS),
    ("qa", lambda request: qa.answer_question(qa.QA_ID, "What makes it fall?", "Precipitation falls under gravity.", 30, 5,
                                      128, 384, False), qa.QA_ID, 1, 1),
    ("qa-preset-zh", lambda request: qa.run_example(0, qa.PRESETS[0][1], *qa.OPTION_DEFAULTS, False)[3:10], qa.PRESETS[0][1],
     1, 1),
    ("classify", lambda request: classify.classify_text(checkpoints.SST2_ID, classify.TASK_SINGLE, "A gripping film.", "", 128),
     checkpoints.SST2_ID, 0, 1),
    ("classify-pair-zh", lambda request: classify.run_example(0, checkpoints.SIMILARITY_ZH_ID, classify.TASK_PAIR, "我很喜欢你",
                                                      "我非常喜欢你", 128), checkpoints.SIMILARITY_ZH_ID, 0, 1),
    ("gpt-vs-bert-zh", lambda request: gpt.gpt_vs_bert(*gpt.VS_EXAMPLES[1]), gpt.VS_EXAMPLES[1][2], 0, 2),
]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name, call, model, card_at, columns", CASES, ids=[case[0] for case in CASES])
def test_a_missing_checkpoint_shows_one_card_and_hides_the_results(name, call, model, card_at, columns, lang):
    request = SimpleNamespace(headers={"accept-language": lang})  # a batch reads each request's language
    with using_language(lang):
        outputs = call(request)
    assert_card(outputs[card_at], model, lang)
    assert list(outputs[-columns:]) == [HIDDEN] * columns  # the columns holding the model's results are hidden
    # The card is the only card: no other output carries an `hf download` line of its own.
    assert sum("hf download" in str(value) for value in outputs) == 1, name


def test_the_notes_claim_numbers_shown_above_only_when_shown():
    """The seed-example notes of the Chinese QA and similarity presets say "shown above" only beside real numbers."""
    for lang, above in (("en", "shown above"), ("zh", "见上")):
        with using_language(lang):
            summary = qa.run_example(0, qa.PRESETS[0][1], *qa.OPTION_DEFAULTS, False)[4]
            pair = classify.run_example(0, checkpoints.SIMILARITY_ZH_ID, classify.TASK_PAIR, "我很喜欢你", "我非常喜欢你",
                                        128)[0]
        assert "0.80" in summary and "[0.02, 0.98]" in pair  # the seed's numbers are still told
        assert above not in summary and above not in pair, lang
        assert qa._expected("qa.preset_zh_expected", shown=True).count("uer/roberta-base-chinese-extractive-qa") == 1


def test_only_the_reasons_a_download_cures_get_a_card():
    from core.text.errors import ModelUnavailableError

    assert needs_download(ModelUnavailableError("registry.offline", model="x"))
    assert needs_download(ModelUnavailableError("registry.stalled_silent", model="x", what="w", seconds=1))
    assert not needs_download(ModelUnavailableError("registry.hub_not_found", model="x", code=404, what="w"))
    assert not needs_download(ModelUnavailableError("registry.no_mlm_head"))
    assert not needs_download(ValueError("x"))
    assert results_visible(True) == {"__type__": "update", "visible": True}
    with using_language("zh"):
        card = missing_model_card("bert-base-uncased", "downloads.shows_mlm_fill", "")
    assert card.endswith("hf download bert-base-uncased\n```") and "原因" not in card  # no reason: no reason line


# ----------------------------------------------------------------------------------------------------------------
# The built app: every output of these views that needs the model sits inside a column the handler hides


@pytest.fixture(scope="module")
def views():
    import app

    built = app.build_app()
    return {(view.tab, view.key): view for entry in built.preset_registry.tabs.values() for view in entry.views}


def _inside(component, containers: list) -> bool:
    parent = component.parent
    while parent is not None:
        if any(parent is container for container in containers):
            return True
        parent = parent.parent
    return False


# (tab, view, preset, index of the card output, outputs that still work offline: shown, with real content)
VIEWS = [
    # English presets offline run on the char-BERT (tests/mlm/test_mlm_char_demo.py); Chinese ones keep the card
    ("mlm", "fill", "weather-zh", 0, ()),
    ("mlm", "compare", "gpt-vs-bert-zh", 0, ()),
    ("mlm", "nsp", "nsp-isnext", 0, ()),
    ("ner", "tag", "wolfgang-berlin", 1, ("tokens",)),
    ("qa", "answer", "what-makes-it-fall", 4, ("question", "context", "layout", "layout_note", "layout_table")),
    ("classify", "checkpoint", "wo-hen-xihuan-ni", 0, ("layout", "layout_note", "layout_table")),
    ("transformer", "gpt_vs_bert", "jintian-tianqi-hen", 0, ()),  # the char-GPT cannot read Chinese: both hidden
]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("tab, key, slug, card_at, working", VIEWS, ids=[f"{v[0]}-{v[1]}-{v[2]}" for v in VIEWS])
def test_a_views_model_outputs_are_hidden_not_empty(views, tab, key, slug, card_at, working, lang):
    import gradio as gr

    view = views[(tab, key)]
    with using_language(lang):
        updates = view.run(slug)
    card = view.outputs[card_at]
    hidden = [c for c in view.outputs if isinstance(c, gr.blocks.BlockContext) and updates[c] == HIDDEN]
    assert hidden, (tab, key)
    assert "hf download " in updates[card] and CARD_WORDS[lang][0] in updates[card]
    # Everything else the view fills is either inside a hidden column or one of the outputs that work offline.
    components = [c for c in view.outputs if not isinstance(c, (gr.blocks.BlockContext, gr.State)) and c is not card
                  and c not in view.inputs]
    still_shown = [c for c in components if not _inside(c, hidden)]
    assert len(still_shown) == len(working), [type(c).__name__ for c in still_shown]
    for component in still_shown:  # what works offline shows real content
        value = updates[component]
        assert value is not None and len(value if not hasattr(value, "data") else value.data) > 0
