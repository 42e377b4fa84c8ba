"""NER tab (issue #8): BERT token classification, tag by tag: probabilities, BIO, IOBES, grouped entities, windows."""
from __future__ import annotations

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from core import ner, registry
from core.registry import MINILM_ID
from core.corpora import load_corpus
from core.errors import LearnerError, ModelUnavailableError
from core.limits import MAX_TEXT_CHARS
from demo import presets
from demo.common import TABLE_BUTTONS, friendly_errors, gpu_handler, model_picker
from demo.batching import BATCH, by_checkpoint
from demo.downloads import model_event
from demo.figures import COLORWAY, HIGHLIGHT, empty_figure, heatmap

TITLE = "NER"

INTRO = r"""
### Named-entity recognition: a classifier on every token
BERT gives each WordPiece token a vector h_t; a single linear layer turns it into a distribution over tags:
$$p(y_t \mid x) = \mathrm{softmax}(W h_t + b)$$
The tags come from the checkpoint's `config.json` (CoNLL-03 for
dslim/bert-base-NER: **PER**, **ORG**, **LOC**, **MISC**, each as **B**-egin or **I**-nside, plus **O**utside).
Words the tokenizer splits into pieces (*Ishmael* → `Is ##hma ##el`) get one tag per piece; an *aggregation*
strategy decides what the whole word is: **first** piece, **average** of the pieces' distributions, or the **max**
(most confident) piece. **simple** keeps the pieces' own tags.
"""

EXAMPLES = [
    ["My name is Wolfgang and I live in Berlin."],
    ["Queequeg and Tashtego met Daggoo near Nantucket; Ishmael, Starbuck, Stubb and Flask watched the Pequod."],
    ["Angela Merkel met Emmanuel Macron at the Élysée Palace in Paris to discuss the European Union."],
    ["The weather was lovely, so we went for a long walk after lunch."],  # no entities
    ["Tim Cook 🍎 showed the new iPhone in Cupertino 🎉. 爱因斯坦在柏林发表演讲。"],  # emoji and CJK
]
CONVERT_EXAMPLES = [
    [" ".join(f"{word}/{tag}" for word, tag in ner.SEED_WORD_TAGS)],
    ["Wolfgang/B-PER lives/O in/O New/B-LOC York/I-LOC City/I-LOC and/O Berlin/B-LOC ./O"],
    ["Obama/B-PER Barack/B-PER visited/O the/O UN/I-ORG ./O"],  # two B- in a row; an I- with no B- before it
]
LONG_TEXT_START = 5_000  # skip Moby-Dick's front matter
HEAT_ROWS = 30  # tokens per heatmap page: readable cells at 1280×800
AGG_ROWS = 200  # multi-piece words listed in the aggregation table
NO_SPLIT_WORDS = "(no word here is split into pieces: try the Queequeg example)"

ENTITY_HEADERS = ["entity_group", "score", "word", "start", "end"]
SCHEME_HEADERS = ["#", "token / word", "BIO (model)", "IOBES"]
AGG_HEADERS = ["word", "pieces: argmax tag (p)", "first", "average", "max", "strategies differ"]
TOKEN_HEADERS = ["#", "token", "id", "start", "end", "characters", "word id", "##-piece (is_subword)", "window"]


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
    return [[e.entity_group, round(e.score, 4), e.word, e.start, e.end] for e in entities]


def _scheme_rows(tagged: ner.TaggedText, strategy: str) -> list[list]:
    """One row per tagged unit (token for "simple", word otherwise): the model's BIO tag and its IOBES form."""
    units = ner.units(tagged, strategy)
    bio = [unit.label for unit in units]
    return [[i, unit.word, tag, iobes] for i, (unit, tag, iobes) in enumerate(zip(units, bio, ner.bio_to_iobes(bio)))]


def _aggregation_rows(tagged: ner.TaggedText) -> list[list]:
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
        rows.append([word.word, pieces, *tags, "yes" if differ else ""])
    rows.sort(key=lambda row: not row[-1])  # disagreements first: that is where the strategy matters
    return rows[:AGG_ROWS] or [[NO_SPLIT_WORDS, "", "", "", "", ""]]


def _token_label(token: ner.Token) -> str:
    return f"{token.piece} ({token.word})" if token.piece != token.word else token.piece


def _heatmap(tagged: ner.TaggedText, first: int):
    """Rows first … first+HEAT_ROWS of the per-token table; the argmax of each row is boxed."""
    first = int(np.clip(first, 0, max(len(tagged.tokens) - 1, 0)))
    rows = slice(first, first + HEAT_ROWS)
    probs = tagged.probs[rows]  # (R, C)
    names = [f"{first + i}·{_token_label(token)}" for i, token in enumerate(tagged.tokens[rows])]
    fig = heatmap(probs, tagged.labels, names, f"p(tag | token), tokens {first}–{first + len(names) - 1} of "
                  f"{len(tagged.tokens)} (□ = argmax)", zmin=0, zmax=1, x_title="tag", y_title="token",
                  annotate=True, value_format=".2f")
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
             "yes" if token.is_subword else "", ", ".join(in_windows[i])] for i, token in enumerate(encoded.tokens)]


def _window_note(encoded: ner.Encoded) -> str:
    count = len(encoded.windows)
    if count == 1:
        return f"{len(encoded.tokens)} tokens: one window of at most {encoded.max_length} (with [CLS] and [SEP])."
    return (f"{len(encoded.tokens):,} tokens: more than the {encoded.max_length} positions BERT has, so the text was "
            f"read in **{count} overlapping windows** of {encoded.max_length - 2} tokens (+ [CLS], [SEP]), each "
            f"repeating the last {encoded.stride} tokens of the one before. Offsets point into the full text; "
            "entities found twice in an overlap keep the longer (then more confident) one, and the per-token table "
            "takes each token from the window where it has the most context on both sides.")


# ----------------------------------------------------------------------------------------------------------------
# Handlers


@friendly_errors
@gpu_handler
def tag_text(text: str, model_id: str, strategy: str, progress=gr.Progress()):
    """Run the tagger; if the checkpoint is unavailable, say so and still show the tokenisation."""
    progress(0, desc="loading the model (first time only)")
    try:
        tagged = ner.tag(text, model_id, progress=lambda share, desc: progress(share, desc=desc))
    except ModelUnavailableError as exc:
        return _offline(text, model_id, exc)
    return _tagged_outputs(tagged, strategy)


def _tagged_outputs(tagged: ner.TaggedText, strategy: str) -> tuple:
    note = f"**Model:** {tagged.badge}  \n{_window_note(tagged.encoded)}"
    return (tagged, note, *show(tagged, strategy), _heatmap(tagged, 0),
            gr.Slider(maximum=max(len(tagged.tokens) - 1, 1), value=0), _token_rows(tagged.encoded))


def tag_batch(text: list, model_id: list, strategy: list, request: gr.Request = None) -> tuple[list, ...]:
    """``tag_text`` for a batch of requests (batch=True): requests for one checkpoint share forward passes
    (core.ner.tag_many). A request's own problem is shown in its note; the others answer. The parameters keep
    tag_text's names (each a list here): they are the endpoint's parameter names for API clients."""
    def one_checkpoint(checkpoint: str, indices: list[int]) -> list:
        try:
            tagged = ner.tag_many([text[i] for i in indices], checkpoint)
        except ModelUnavailableError as exc:
            return [_offline_or_refused(text[i], model_id[i], exc) for i in indices]
        return [result if isinstance(result, Exception) else _tagged_outputs(result, strategy[i])
                for i, result in zip(indices, tagged)]

    return by_checkpoint("ner", model_id, one_checkpoint, outputs=9, notice=1, request=request)


def _offline_or_refused(text: str, model_id: str, exc: ModelUnavailableError):
    try:
        return _offline(text, model_id, exc)
    except LearnerError as refused:  # e.g. empty text: this request alone is refused
        return refused


def _offline(text: str, model_id: str, exc: ModelUnavailableError):
    try:
        tokenizer, files = registry.tokenizer(model_id)
    except ModelUnavailableError:
        tokenizer, files = registry.tokenizer(MINILM_ID)
    encoded = ner.encode(tokenizer, text)
    note = (f"⚠️ **No tagger:** {exc}  \nThe tokenisation below still works: it uses the tokenizer of "
            f"`{files.model_id}`" + (" (MiniLM-L6, bert-base-uncased's vocabulary)." if files.model_id == MINILM_ID
                                     else ".") + f"  \n{_window_note(encoded)}")
    waiting = empty_figure("Probabilities need the tagger (see the message above).")
    return (None, note, None, [], [], [], waiting, gr.Slider(maximum=1, value=0), _token_rows(encoded))


@friendly_errors
def show(tagged: ner.TaggedText | None, strategy: str):
    """Entities, tagging schemes and the aggregation table under the chosen strategy (no model run)."""
    if tagged is None:
        return None, [], [], []
    found = ner.entities(tagged, strategy)
    return (_highlighted(tagged.text, found, tagged.labels), _entity_rows(found), _scheme_rows(tagged, strategy),
            _aggregation_rows(tagged))


@friendly_errors
def page_heatmap(tagged: ner.TaggedText | None, first: float):
    if tagged is None:
        return empty_figure("Press “Tag entities” first.")
    return _heatmap(tagged, int(first))


@friendly_errors
def convert_tags(line: str):
    """The seed's BIO → IOBES conversion on words the learner tags by hand (no model needed)."""
    pairs = ner.parse_word_tags(line)
    iobes = ner.bio_to_iobes([tag for _, tag in pairs])
    rows = [[word, tag, new] for (word, tag), new in zip(pairs, iobes)]
    return rows, "**IOBES:** " + " ".join(f"{word} `{tag}`" for (word, _), tag in zip(pairs, iobes))


@friendly_errors
def long_text():
    """20,000 characters of Moby-Dick: several 512-token windows."""
    return load_corpus("moby_dick")[LONG_TEXT_START:LONG_TEXT_START + MAX_TEXT_CHARS]


# ----------------------------------------------------------------------------------------------------------------
# Layout


NER_ID = registry.CHECKPOINTS["ner"][0]
P = presets.Preset
TAG_PRESETS = [P("wolfgang-berlin", "Wolfgang in Berlin", (EXAMPLES[0][0], NER_ID, "first"), "§14.4"),
               P("pequod", "Moby-Dick names (split words)", (EXAMPLES[1][0], NER_ID, "average"), "§14.4"),
               P("merkel-macron", "Merkel, Macron, Paris", (EXAMPLES[2][0], NER_ID, "first"), "§14.4"),
               P("no-entities", "No entities", (EXAMPLES[3][0], NER_ID, "first"), "§14.4"),
               P("emoji-cjk", "Emoji and Chinese", (EXAMPLES[4][0], NER_ID, "max"), "§14.4"),
               # Slot: the seed's Chinese example needs a Chinese NER checkpoint (its own issue).
               P("einstein-berlin-zh", "爱因斯坦在柏林发表演讲", None, "§14.4", note="a Chinese NER model")]
CONVERT_PRESETS = [P("einstein-iobes", "Seed: 爱因斯坦在柏林发表演讲", (CONVERT_EXAMPLES[0][0],), "§14.4"),
                   P("new-york", "New York City (B I I → B I E)", (CONVERT_EXAMPLES[1][0],), "§14.4"),
                   P("broken-bio", "B B, and I without B", (CONVERT_EXAMPLES[2][0],), "§14.4")]
# (seed §, question, answer, view key, preset)
LESSON = [
    ("§14.4", "The seed tags 爱因斯坦在柏林发表演讲 as 爱 B-PER, 因 I-PER, 斯坦 I-PER … in BIO. What are the IOBES "
     "tags?", "爱 B-PER, 因 I-PER, 斯坦 E-PER, 在 O, 柏林 S-LOC, 发表 O, 演讲 O: the last unit of a multi-unit "
     "entity becomes E, and a one-unit entity S.", "convert", "einstein-iobes"),
    ("§14.4", "A tagger puts a classifier with a softmax over labels on every token. Which tokens does it read in "
     "“My name is Wolfgang and I live in Berlin.”?", "The WordPiece tokens between [CLS] and [SEP] (see "
     "“Tokenisation & windows”); each gets its own label distribution. With dslim/bert-base-NER, Wolfgang comes "
     "out as a person and Berlin as a location; offline, the tokenisation still shows.", "tag", "wolfgang-berlin"),
    ("§14.4", "What does IOBES make of two B- tags in a row, or an I- tag with no B- before it?",
     "Two B- tags are two entities: Obama S-PER, Barack S-PER. An I- without a B- starts a new entity, as the "
     "transformers pipeline reads it: UN becomes S-ORG.", "convert", "broken-bio"),
]


def build() -> None:
    gr.Markdown(INTRO)
    lesson_slot = gr.Column()
    tagged = gr.State(None)
    with gr.Row():
        model_id = model_picker("ner")
        strategy = gr.Radio(list(ner.STRATEGIES), value="first", label="Subword aggregation",
                            info="How a word split into pieces gets one tag.")
    text = gr.Textbox(label=f"Text (up to {MAX_TEXT_CHARS:,} characters; long text is read in windows)", lines=3,
                      value=EXAMPLES[0][0])
    with gr.Row():
        run_button = gr.Button("Tag entities", variant="primary", scale=3)
        long_button = gr.Button(f"Load {MAX_TEXT_CHARS:,} characters of Moby-Dick", scale=1)
    tag_bar = gr.Column()
    note = gr.Markdown()
    highlighted = gr.HighlightedText(label="Entities (type and score)", show_legend=False, combine_adjacent=False)

    with gr.Tab("BIO · IOBES · entities"):
        gr.Markdown("Left: the tag of every unit (a token for **simple**, a whole word otherwise) and the same tags "
                    "in IOBES, where a one-unit entity is **S** and a longer one runs **B** … **I** … **E**. "
                    "Right: "
                    "neighbouring units of one type merged into entities (a **B-** always starts a new one).")
        with gr.Row():
            schemes = gr.Dataframe(headers=SCHEME_HEADERS, interactive=False, max_height=520, label="Tags",
                buttons=TABLE_BUTTONS)
            entity_table = gr.Dataframe(headers=ENTITY_HEADERS, interactive=False, max_height=520,
                                        label="Grouped entities (as transformers' pipeline reports them)",
                                            buttons=TABLE_BUTTONS)
    with gr.Tab("Per-token probabilities"):
        heat_first = gr.Slider(0, 1, value=0, step=1, label=f"First token shown ({HEAT_ROWS} rows per page)")
        heat = gr.Plot(empty_figure("Press “Tag entities” to see p(tag | token) for every WordPiece token."),
            show_label=False)
    with gr.Tab("Aggregation on split words"):
        gr.Markdown("Every word the tokenizer cut into pieces, with each piece's own argmax tag and the word's tag "
                    "under each strategy. Rows where the strategies disagree come first.")
        aggregation = gr.Dataframe(headers=AGG_HEADERS, interactive=False, max_height=520, wrap=True,
            buttons=TABLE_BUTTONS)
    with gr.Tab("Tokenisation & windows"):
        gr.Markdown("WordPiece tokens with their character offsets and word ids. A token is a **##-piece** when it "
                    "continues the previous token's word; only those are merged by first/average/max.")
        tokens = gr.Dataframe(headers=TOKEN_HEADERS, interactive=False, max_height=520, buttons=TABLE_BUTTONS)
    with gr.Tab("BIO → IOBES (seed §14)", id="iobes") as iobes_tab:
        gr.Markdown("Tag words by hand as `word/TAG` and convert. The seed's example: 爱 B-PER, 因 I-PER, 斯坦 "
                    "E-PER, 在 O, 柏林 S-LOC, 发表 O, 演讲 O.")
        tag_line = gr.Textbox(label="Words with BIO tags", value=CONVERT_EXAMPLES[0][0])
        convert_button = gr.Button("Convert to IOBES", variant="primary")
        convert_bar = gr.Column()
        converted_note = gr.Markdown()
        converted = gr.Dataframe(headers=["word", "BIO", "IOBES"], interactive=False, buttons=TABLE_BUTTONS)

    tag_inputs = [text, model_id, strategy]
    tag_outputs = [tagged, note, highlighted, entity_table, schemes, aggregation, heat, heat_first, tokens]
    model_event(run_button.click, {"ner": model_id}, tag_batch, tag_inputs, tag_outputs, api_name="ner_tag", **BATCH)
    strategy.change(show, [tagged, strategy], [highlighted, entity_table, schemes, aggregation],
                    api_name="ner_show")
    heat_first.release(page_heatmap, [tagged, heat_first], [heat], api_name="ner_heatmap")
    long_button.click(long_text, None, [text], api_name="ner_long_text")
    convert_button.click(convert_tags, [tag_line], [converted, converted_note], api_name="ner_convert")
    tag_view = presets.View("ner", "tag", [text, model_id, strategy],
                            [tagged, note, highlighted, entity_table, schemes, aggregation, heat, heat_first, tokens],
                            tag_text, TAG_PRESETS)
    convert_view = presets.View("ner", "convert", [tag_line], [converted, converted_note], convert_tags,
                                CONVERT_PRESETS, where=iobes_tab)
    with tag_bar:
        tag_view.buttons()
    with convert_bar:
        convert_view.buttons()
    views = {"tag": tag_view, "convert": convert_view}
    with lesson_slot:
        presets.lesson_table(LESSON, views)
