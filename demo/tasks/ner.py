"""NER tab (issue #8): BERT token classification, tag by tag: probabilities, BIO, IOBES, grouped entities, windows."""
from __future__ import annotations

from typing import TYPE_CHECKING

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from core.loading.checkpoints import CHECKPOINTS, MINILM_ID, model_id_or_default
from core.text.corpora import load_corpus
from core.text.errors import LearnerError, ModelUnavailableError
from core.text.limits import MAX_SHORT_TEXT_CHARS, MAX_TEXT_CHARS, NER_STRATEGIES
from core.loading.lazy import lazy_import
from core.text.seeds import SEED_WORD_TAGS
from demo.kit import lessons, presets
from demo.why import encoders as why_encoders
from demo.server.result_cache import BATCH, by_checkpoint
from demo.server.handlers import friendly_errors, gpu_handler
from demo.kit.widgets import LATEX, TABLE_BUTTONS, model_picker, sig4
from demo.server.downloads import missing_model_card, model_event, needs_download, results_visible
from demo.kit.figures import COLORWAY, HIGHLIGHT, empty_figure, heatmap
from demo.kit.i18n import label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
registry = lazy_import("core.loading.registry")
ner = lazy_import("core.tasks.ner")
if TYPE_CHECKING:  # annotations only: the module imports torch, which the app loads on first use
    from core.tasks.ner import TaggedText

TITLE = "NER"

EXAMPLES = [
    ["My name is Wolfgang and I live in Berlin."],
    ["Queequeg and Tashtego met Daggoo near Nantucket; Ishmael, Starbuck, Stubb and Flask watched the Pequod."],
    ["Angela Merkel met Emmanuel Macron at the Élysée Palace in Paris to discuss the European Union."],
    ["The weather was lovely, so we went for a long walk after lunch."],  # no entities
    ["Tim Cook 🍎 showed the new iPhone in Cupertino 🎉. 爱因斯坦在柏林发表演讲。"],  # emoji and CJK
    ["爱因斯坦在柏林发表演讲。"],  # seed §14.4, on a Chinese tagger
    ["愛因斯坦在柏林發表演講。"],  # the same in traditional characters, which ckiplab's model was trained on
]
ZH_NER_ID = "ckiplab/bert-base-chinese-ner"  # OntoNotes' 18 types in IOBES; see the README's model table
CONVERT_EXAMPLES = [
    [" ".join(f"{word}/{tag}" for word, tag in SEED_WORD_TAGS)],
    ["Wolfgang/B-PER lives/O in/O New/B-LOC York/I-LOC City/I-LOC and/O Berlin/B-LOC ./O"],
    ["Obama/B-PER Barack/B-PER visited/O the/O UN/I-ORG ./O"],  # two B- in a row; an I- with no B- before it
]
LONG_TEXT_START = 5_000  # skip Moby-Dick's front matter
HEAT_ROWS = 30  # tokens per heatmap page: readable cells at 1280×800
AGG_ROWS = 200  # multi-piece words listed in the aggregation table
RESULT_COLUMNS = 4  # the columns holding the tagger's results (entities, schemes, probabilities, aggregation)
# In English the transformers pipeline's own field names; translated for 中文 learners.
ENTITY_HEADERS = ["ner.col_entity_group", "ner.col_score", "ner.col_word", "ner.col_start", "ner.col_end"]
SCHEME_HEADERS = ["#", "ner.col_unit", "ner.col_model_tag", "IOBES"]  # keys are translated, names kept as they are
AGG_HEADERS = ["ner.col_word", "ner.col_pieces", "first", "average", "max", "ner.col_differ"]
TOKEN_HEADERS = ["#", "ner.col_piece", "ner.col_token_id", "ner.col_start", "ner.col_end", "ner.col_characters",
                 "ner.col_word_id", "ner.col_subword", "ner.col_window"]
CONVERT_HEADERS = ["ner.col_word", "BIO", "IOBES"]


def headers(names: list[str]) -> list[str]:
    """Column names in the learner's language (the entries that are keys; field and scheme names stay)."""
    return [t(name) if name.startswith("ner.") else name for name in names]


def table(rows: list[list], names: list[str]) -> dict:
    """A gr.Dataframe value with its headers in the learner's language; API clients get the same dict."""
    return {"headers": headers(names), "data": rows}


def rows_of(value) -> list[list]:
    """The rows of a table a handler returned."""
    return value["data"] if isinstance(value, dict) else value


# ----------------------------------------------------------------------------------------------------------------
# Formatting (core data → components)


def _type_colors(labels: list[str]) -> dict[str, str]:
    kinds = list(dict.fromkeys(ner.split_tag(label)[1] for label in labels if label != ner.OUTSIDE))
    return {kind: COLORWAY[i % len(COLORWAY)] for i, kind in enumerate(kinds)}


def _highlighted(text: str, entities: list[ner.Entity], labels: list[str]) -> gr.HighlightedText:
    """Entities as coloured spans labelled 'TYPE score'; all spans of a type share its colour."""
    colors, spans, color_map, cursor = _type_colors(labels), [], {}, 0
    for entity in entities:
        name = f"{entity.entity_group} {entity.score:.2f}"
        color_map[name] = colors.get(entity.entity_group, HIGHLIGHT)
        spans += [(text[cursor:entity.start], None), (text[entity.start:entity.end], name)]
        cursor = entity.end
    spans.append((text[cursor:], None))
    return gr.HighlightedText(value=[span for span in spans if span[0]], color_map=color_map)


def _entity_rows(entities: list[ner.Entity]) -> list[list]:
    return [[e.entity_group, sig4(e.score), e.word, e.start, e.end] for e in entities]


def _scheme_rows(tagged: TaggedText, strategy: str) -> list[list]:
    """One row per tagged unit (token for "simple", word otherwise): the model's BIO tag and its IOBES form."""
    units = ner.units(tagged, strategy)
    bio = [unit.label for unit in units]
    return [[i, unit.word, tag, iobes] for i, (unit, tag, iobes) in enumerate(zip(units, bio, ner.bio_to_iobes(bio)))]


def _aggregation_rows(tagged: TaggedText) -> list[list]:
    """Each word split into pieces: every piece's own tag, and the word's tag under first / average / max."""
    by_strategy = {strategy: ner.units(tagged, strategy) for strategy in ("first", "average", "max")}
    rows = []
    for i, word in enumerate(by_strategy["first"]):
        if len(word.tokens) < 2:
            continue
        pieces = " ".join(f"{tagged.tokens[t].piece}:{tagged.labels[int(tagged.probs[t].argmax())]} "
                          f"({tagged.probs[t].max():.2f})" for t in word.tokens)
        tags = [f"{by_strategy[s][i].label} ({by_strategy[s][i].score:.2f})" for s in by_strategy]
        differ = len({by_strategy[s][i].label for s in by_strategy}) > 1
        rows.append([word.word, pieces, *tags, t("ner.yes") if differ else ""])
    rows.sort(key=lambda row: not row[-1])  # disagreements first: that is where the strategy matters
    return rows[:AGG_ROWS] or [[t("ner.no_split_words"), "", "", "", "", ""]]


def _token_label(token: ner.Token) -> str:
    return f"{token.piece} ({token.word})" if token.piece != token.word else token.piece


def _heatmap(tagged: TaggedText, first: int):
    """Rows first … first+HEAT_ROWS of the per-token table; the argmax of each row is boxed."""
    first = int(np.clip(first, 0, max(len(tagged.tokens) - 1, 0)))
    rows = slice(first, first + HEAT_ROWS)
    probs = tagged.probs[rows]  # (R, C)
    names = [f"{first + i}·{_token_label(token)}" for i, token in enumerate(tagged.tokens[rows])]
    fig = heatmap(probs, tagged.labels, names, t("ner.heat_title", first=first, last=first + len(names) - 1,
                                                   total=len(tagged.tokens)),
                  zmin=0, zmax=1, x_title=t("ner.axis_tag"), y_title=t("ner.axis_token"), annotate=True,
                  value_format=".2f")
    trace = fig.data[0]
    best = probs.argmax(-1)
    fig.add_trace(go.Scatter(x=[trace.x[j] for j in best], y=list(trace.y), mode="markers", hoverinfo="skip",
                             showlegend=False, marker=dict(symbol="square-open", size=30, color=HIGHLIGHT,
                                                           line=dict(width=3, color=HIGHLIGHT))))
    return fig


def _token_rows(encoded: ner.Encoded) -> list[list]:
    in_windows = [[] for _ in encoded.tokens]
    for number, (a, b) in enumerate(encoded.windows, start=1):
        for i in range(a, b):
            in_windows[i].append(str(number))
    return [[i, token.piece, token.id, token.start, token.end, encoded.text[token.start:token.end], token.word_id,
             t("ner.yes") if token.is_subword else "", ", ".join(in_windows[i])]
            for i, token in enumerate(encoded.tokens)]


def _window_note(encoded: ner.Encoded) -> str:
    count = len(encoded.windows)
    if count == 1:
        return t("ner.one_window", tokens=len(encoded.tokens), length=encoded.max_length)
    return t("ner.many_windows", tokens=f"{len(encoded.tokens):,}", length=encoded.max_length, count=count,
             inner=encoded.max_length - 2, stride=encoded.stride)


def _label_set(labels: list[str]) -> str:
    """The checkpoint's label set in one line: its entity types and its scheme (BIO or IOBES)."""
    prefixes = {ner.split_tag(label)[0] for label in labels if label != ner.OUTSIDE}
    kinds = list(dict.fromkeys(ner.split_tag(label)[1] for label in labels if label != ner.OUTSIDE))
    scheme = "IOBES" if prefixes & {"E", "S"} else "BIO"
    return t("ner.label_set", count=len(labels), kinds=", ".join(kinds), scheme=scheme)


# ----------------------------------------------------------------------------------------------------------------
# Handlers


@friendly_errors
@gpu_handler
def tag_text(text: str, model_id: str, strategy: str, progress=gr.Progress()):
    """Run the tagger; if the checkpoint is unavailable, say so and still show the tokenisation."""
    progress(0, desc=t("ner.loading"))
    try:
        tagged = ner.tag(text, model_id, progress=lambda share, desc: progress(share, desc=desc))
    except ModelUnavailableError as exc:
        return _offline(text, model_id, exc)
    return _tagged_outputs(tagged, strategy)


def _tagged_outputs(tagged: TaggedText, strategy: str) -> tuple:
    note = t("ner.model_note", badge=tagged.badge, labels=_label_set(tagged.labels),
             windows=_window_note(tagged.encoded))
    if any(ner.split_tag(label)[0] in "ES" for label in tagged.labels if label != ner.OUTSIDE):
        note += "  \n" + t("ner.iobes_model_note")
    return (tagged, note, *show(tagged, strategy), _heatmap(tagged, 0),
            gr.Slider(maximum=max(len(tagged.tokens) - 1, 1), value=0),
            table(_token_rows(tagged.encoded), TOKEN_HEADERS), *[results_visible(True)] * RESULT_COLUMNS)


@gpu_handler
def tag_batch(text: list, model_id: list, strategy: list, request: gr.Request = None) -> tuple[list, ...]:
    """``tag_text`` for a batch of requests (batch=True): requests for one checkpoint share forward passes
    (core.tasks.ner.tag_many). A request's own problem is shown in its note; the others answer. The parameters keep
    tag_text's names (each a list here): they are the endpoint's parameter names for API clients."""
    def one_checkpoint(checkpoint: str, indices: list[int]) -> list:
        try:
            tagged = ner.tag_many([text[i] for i in indices], checkpoint)
        except ModelUnavailableError as exc:
            return [_offline_or_refused(text[i], model_id[i], exc) for i in indices]
        return [result if isinstance(result, Exception) else _tagged_outputs(result, strategy[i])
                for i, result in zip(indices, tagged)]

    return by_checkpoint("ner", model_id, one_checkpoint, outputs=9 + RESULT_COLUMNS, notice=1, request=request)


def _offline_or_refused(text: str, model_id: str, exc: ModelUnavailableError):
    try:
        return _offline(text, model_id, exc)
    except LearnerError as refused:  # e.g. empty text: this request alone is refused
        return refused


def _offline(text: str, model_id: str, exc: ModelUnavailableError):
    tokenizer, files, _ = registry.tokenizer_or_fallback(model_id)
    encoded = ner.encode(tokenizer, text)
    model = model_id_or_default("ner", model_id)[:100]
    source = (t("ner.tokenizer_minilm", model=files.model_id) if files.model_id == MINILM_ID
              else t("ner.tokenizer_own", model=files.model_id))
    if needs_download(exc):  # the card stands in for the tagger's results, which are hidden
        note = missing_model_card(model, "downloads.shows_ner", exc) + "\n\n" + _window_note(encoded)
    else:
        note = t("ner.offline_note", reason=str(exc), model=model, source=source, windows=_window_note(encoded))
    return (None, note, None, [], [], [], None, gr.Slider(maximum=1, value=0),
            table(_token_rows(encoded), TOKEN_HEADERS), *[results_visible(False)] * RESULT_COLUMNS)


@friendly_errors
def show(tagged: TaggedText | None, strategy: str):
    """Entities, tagging schemes and the aggregation table under the chosen strategy (no model run)."""
    if tagged is None:
        return None, [], [], []
    found = ner.entities(tagged, strategy)
    return (_highlighted(tagged.text, found, tagged.labels), table(_entity_rows(found), ENTITY_HEADERS),
            table(_scheme_rows(tagged, strategy), SCHEME_HEADERS), table(_aggregation_rows(tagged), AGG_HEADERS))


@friendly_errors
def page_heatmap(tagged: TaggedText | None, first: float):
    if tagged is None:
        return empty_figure(t("ner.press_tag_first"))
    return _heatmap(tagged, int(first))


@friendly_errors
def convert_tags(line: str):
    """The seed's BIO → IOBES conversion on words the learner tags by hand (no model needed)."""
    pairs = ner.parse_word_tags(line)
    iobes = ner.bio_to_iobes([tag for _, tag in pairs])
    rows = [[word, tag, new] for (word, tag), new in zip(pairs, iobes)]
    return table(rows, CONVERT_HEADERS), "**IOBES:** " + " ".join(f"{word} `{tag}`"
                                                                for (word, _), tag in zip(pairs, iobes))


@friendly_errors
def long_text():
    """20,000 characters of Moby-Dick: several 512-token windows."""
    return load_corpus("moby_dick")[LONG_TEXT_START:LONG_TEXT_START + MAX_TEXT_CHARS]


# ----------------------------------------------------------------------------------------------------------------
# Layout


NER_ID = CHECKPOINTS["ner"][0]
P = presets.Preset
TAG_PRESETS = [P("wolfgang-berlin", label("ner.preset_wolfgang"), (EXAMPLES[0][0], NER_ID, "first"), "§14.4",
                 shows="probabilities"),  # lesson 2: a softmax over labels on every token
               P("pequod", label("ner.preset_pequod"), (EXAMPLES[1][0], NER_ID, "average"), "§14.4",
                 shows="aggregation"),
               P("merkel-macron", label("ner.preset_merkel"), (EXAMPLES[2][0], NER_ID, "first"), "§14.4"),
               P("no-entities", label("ner.preset_no_entities"), (EXAMPLES[3][0], NER_ID, "first"), "§14.4"),
               P("emoji-cjk", label("ner.preset_emoji_cjk"), (EXAMPLES[4][0], NER_ID, "max"), "§14.4"),
               P("einstein-berlin-zh", label("ner.preset_einstein_zh"), (EXAMPLES[5][0], ZH_NER_ID, "simple"),
                 "§14.4"),
               P("einstein-berlin-zh-hant", label("ner.preset_einstein_zh_hant"),
                 (EXAMPLES[6][0], ZH_NER_ID, "simple"), "§14.4")]
CONVERT_PRESETS = [P("einstein-iobes", label("ner.preset_einstein_iobes"), (CONVERT_EXAMPLES[0][0],), "§14.4"),
                   P("new-york", label("ner.preset_new_york"), (CONVERT_EXAMPLES[1][0],), "§14.4"),
                   P("broken-bio", label("ner.preset_broken_bio"), (CONVERT_EXAMPLES[2][0],), "§14.4")]
# (seed §, question, answer, view key, preset)
LESSON = [
    ("§14.4", label("ner.lesson_1_q"), label("ner.lesson_1_a"), "convert", "einstein-iobes"),
    ("§14.4", label("ner.lesson_2_q"), label("ner.lesson_2_a"), "tag", "wolfgang-berlin"),
    ("§14.4", label("ner.lesson_3_q"), label("ner.lesson_3_a"), "convert", "broken-bio"),
    ("§14.4", label("ner.lesson_4_q"), label("ner.lesson_4_a"), "tag", "einstein-berlin-zh"),
]


def build() -> None:
    gr.Markdown(label("ner.intro"), latex_delimiters=LATEX)
    lesson_slot = gr.Column()
    tagged = gr.State(None)
    with gr.Row():
        model_id = model_picker("ner")
        strategy = gr.Radio([(label(f"ner.strategy_{name}"), name) for name in NER_STRATEGIES], value="first",
                            label=label("ner.strategy"),
                            info=label("ner.strategy_info"))
    gr.Markdown(label("ner.checkpoints"))
    text = gr.Textbox(label=label("ner.text_label"), lines=3, value=EXAMPLES[0][0], max_length=MAX_TEXT_CHARS)
    with gr.Row():
        run_button = gr.Button(label("ner.tag_button"), variant="primary", scale=3)
        long_button = gr.Button(label("ner.long_button"), scale=1)
    tag_bar = gr.Column()
    note = gr.Markdown()
    # The tagger's results sit in columns that are hidden while its checkpoint is missing (the note shows the card).
    with gr.Column() as entities_results:
        highlighted = gr.HighlightedText(label=label("ner.entities_label"), show_legend=False, combine_adjacent=False)

    with gr.Tabs(overflow_behavior="wrap"):
        with gr.Tab(label("ner.tab_schemes"), id="schemes") as schemes_tab:
            gr.Markdown(label("ner.schemes_intro"))
            with gr.Row() as schemes_results:
                schemes = gr.Dataframe(headers=headers(SCHEME_HEADERS), interactive=False, max_height=520,
                                       label=label("ner.tags"), buttons=TABLE_BUTTONS)
                entity_table = gr.Dataframe(headers=[""] * len(ENTITY_HEADERS), interactive=False, max_height=520,
                                            label=label("ner.grouped_entities"),
                                                buttons=TABLE_BUTTONS)
        with gr.Tab(label("ner.tab_probabilities"), id="probabilities"):
            with gr.Column() as heat_results:
                heat_first = gr.Slider(0, 1, value=0, step=1, label=label("ner.heat_first"))
                heat = gr.Plot(empty_figure(t("ner.heat_placeholder")), show_label=False)
        with gr.Tab(label("ner.tab_aggregation"), id="aggregation"):
            gr.Markdown(label("ner.aggregation_intro"))
            with gr.Column() as aggregation_results:
                aggregation = gr.Dataframe(headers=headers(AGG_HEADERS), interactive=False, max_height=520, wrap=True,
                                           buttons=TABLE_BUTTONS)
        with gr.Tab(label("ner.tab_tokens"), id="tokens"):
            gr.Markdown(label("ner.tokens_intro"))
            tokens = gr.Dataframe(headers=headers(TOKEN_HEADERS), interactive=False, max_height=520, buttons=TABLE_BUTTONS)
        with gr.Tab(label("ner.tab_convert"), id="iobes") as iobes_tab:
            gr.Markdown(label("ner.convert_intro"))
            tag_line = gr.Textbox(label=label("ner.tag_line"), value=CONVERT_EXAMPLES[0][0],
                                  max_length=MAX_SHORT_TEXT_CHARS)
            convert_button = gr.Button(label("ner.convert_button"), variant="primary")
            convert_bar = gr.Column()
            converted_note = gr.Markdown()
            converted = gr.Dataframe(headers=headers(CONVERT_HEADERS), interactive=False, buttons=TABLE_BUTTONS)
        why_encoders.build_ner()  # why one token gets its tag: attributions and rollout (issue #35)

    tag_inputs = [text, model_id, strategy]
    tag_outputs = [tagged, note, highlighted, entity_table, schemes, aggregation, heat, heat_first, tokens,
                   entities_results, schemes_results, heat_results, aggregation_results]
    model_event(run_button.click, {"ner": model_id}, tag_batch, tag_inputs, tag_outputs, api_name="ner_tag", **BATCH,
                cache_results=True)
    strategy.change(show, [tagged, strategy], [highlighted, entity_table, schemes, aggregation],
                    api_name="ner_show")
    heat_first.release(page_heatmap, [tagged, heat_first], [heat], api_name="ner_heatmap")
    long_button.click(long_text, None, [text], api_name="ner_long_text")
    convert_button.click(convert_tags, [tag_line], [converted, converted_note], api_name="ner_convert")
    tag_view = presets.View("ner", "tag", [text, model_id, strategy], tag_outputs, tag_text, TAG_PRESETS,
                            where=schemes_tab)  # the first sub-tab; its presets fill the next three too
    convert_view = presets.View("ner", "convert", [tag_line], [converted, converted_note], convert_tags,
                                CONVERT_PRESETS, where=iobes_tab)
    with tag_bar:
        tag_view.buttons()
    with convert_bar:
        convert_view.buttons()
    views = {"tag": tag_view, "convert": convert_view}
    with lesson_slot:
        lessons.lesson_table(LESSON, views)
