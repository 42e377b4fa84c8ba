"""BERT masked LM tab (issue #7): fill in blanks, both sides vs left only, what goes in, masking, NSP, the card."""
from __future__ import annotations

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from core import mlm as fm
from core import registry
from core.registry import MINILM_ID
from core.errors import ModelUnavailableError, UserInputError
from demo import presets
from demo.common import TABLE_BUTTONS, friendly_errors, gpu_handler, log, model_picker, whole_number
from demo.downloads import byte_progress, model_event
from demo.i18n import t
from demo.figures import COLORWAY, DIVERGING_SCALE, HIGHLIGHT, bar, empty_figure, heatmap, styled, subplot_grid

TITLE = "BERT masked LM"

INTRO = r"""
### BERT: predict the hidden word from both sides
BERT is pre-trained to fill in blanks. Hide a word as **[MASK]** (or `_`): the encoder reads the whole sentence at
once, and a softmax over the WordPiece vocabulary (30,522 entries) at the blank gives the prediction. The output
matrix W is the token-embedding table itself. The encoder's input is the sum of three embeddings, one row per token:

$$P(w \mid \text{context}) = \mathrm{softmax}(W\,h_{\text{[MASK]}} + b)$$
$$E = \text{token} + \text{segment} + \text{position}$$
"""

FILL_EXAMPLES = [
    ["my dog is [MASK] ."],
    ["The capital of France is [MASK]."],
    ["The man went to the _ and bought a gallon of [mask]."],
    ["今天天气很[MASK]，我们不得不取消户外运动。"],
]
COMPARE_EXAMPLES = [
    ["The weather today is very [MASK], so we had to cancel the outdoor game."],
    ["今天天气很[MASK]，我们不得不取消户外运动。"],
    ["She opened the [MASK] and let the cat out of the house."],
]
INPUT_EXAMPLES = [
    ["my dog is cute", "he likes playing"],
    ["strawberries are flightless", "unaffable penguins"],
    ["my dog is hairy", ""],
]
MASKING_EXAMPLES = [
    ["my dog is hairy", 0, 10_000],
    ["The man went to the store and bought a gallon of milk because the fridge was empty.", 1, 10_000],
]
NSP_EXAMPLES = [
    ["the man went to [MASK] store", "he bought a gallon [MASK] milk"],  # seed §6: IsNext
    ["the man [MASK] to the store", "penguin [MASK] are flightless birds"],  # seed §6: NotNext
    ["my dog is cute", "he likes playing"],
]
BANK_EXAMPLES = [
    ["bank", "I deposited my pay cheque at the bank.", "We had a picnic on the river bank.",
     "The bank raised its interest rates."],
    ["bat", "The bat flew out of the cave at dusk.", "He swung the bat and hit the ball.",
     "A bat hung upside down in the barn."],
]
EMBEDDING_DIMS_SHOWN = 48  # columns per heatmap: enough to see the patterns, few enough to read at 1280 px
PIECE_NOTE = ("The real bert-base-uncased vocabulary keeps *playing* whole; the paper's \"play ##ing\" is an "
              "illustration. Rarer words split into pieces: *strawberries* → straw ##berries, "
              "*flightless* → flight ##less.")


# ----------------------------------------------------------------------------------------------------------------
# Loading, with the reason shown when the checkpoint cannot be had


def load_mlm(model_id: str, progress: gr.Progress) -> registry.LoadedModel:
    return registry.load("mlm", model_id, progress=byte_progress(progress))


def unavailable(exc: ModelUnavailableError) -> str:
    return (f"**Predictions need a masked-LM checkpoint.** {exc}\n\nThe *Input representation*, *Masking procedure* "
            "and *Contextual vs static* views still work on MiniLM-L6 (packaged, offline; bert-base-uncased's "
            "vocabulary), and the *Model card* works from the published configs.")


def badge(loaded: registry.LoadedModel, fallback_reason: str | None = None) -> str:
    line = f"<span class='badge'>{loaded.badge}</span>"
    if fallback_reason:
        line += (f"\n\nThe picked checkpoint is not available ({fallback_reason}) This view uses **MiniLM-L6** "
                 "instead (bert-base-uncased's vocabulary, 6 layers, H = 384).")
    return line


# ----------------------------------------------------------------------------------------------------------------
# Fill in the blank


def blank_figure(blanks: list[fm.Blank], title: str) -> go.Figure:
    """One horizontal bar chart of the top-k per blank (side by side, three per row)."""
    if len(blanks) == 1:
        candidates = blanks[0].candidates
        return bar([c.token for c in candidates], [c.probability for c in candidates], title,
                   highlight=[i == 0 for i in range(len(candidates))])
    cols = min(3, len(blanks))
    rows = -(-len(blanks) // cols)
    layout, axes = subplot_grid([f"blank {i + 1}" for i in range(len(blanks))], cols, horizontal_spacing=0.12,
                                vertical_spacing=0.25 if rows > 1 else 0.12,  # room for the ticks above a title
                                yaxis=dict(autorange="reversed", type="category"))
    traces = [go.Bar(x=[x.probability for x in blank.candidates], y=[x.token for x in blank.candidates],
                     xaxis=x_axis, yaxis=y_axis, orientation="h", showlegend=False,
                     marker_color=[HIGHLIGHT] + [COLORWAY[0]] * (len(blank.candidates) - 1),
                     text=[f"{x.probability:.3f}" for x in blank.candidates], textposition="auto",
                     hovertemplate="%{y}: %{x:.4f}<extra></extra>")
              for blank, (x_axis, y_axis) in zip(blanks, axes)]
    return styled(go.Figure(traces, layout=dict(layout, title_text=title,
                                                height=max(360, rows * (120 + 30 * len(blanks[0].candidates))))))


def candidate_rows(blanks: list[fm.Blank]) -> list[list]:
    return [[number, rank, c.token, round(c.probability, 4)]
            for number, blank in enumerate(blanks, 1) for rank, c in enumerate(blank.candidates, 1)]


@friendly_errors
@gpu_handler
def fill(model_id: str, text: str, top_k: float, progress=gr.Progress()):
    """→ notice, filled sentence, figure, table."""
    fm.clean_text(text)  # empty text: say so before any loading
    try:
        loaded = load_mlm(model_id, progress)
    except ModelUnavailableError as exc:
        return unavailable(exc), "", empty_figure("No masked-LM checkpoint loaded"), []
    result = fm.fill_mask(loaded, text, int(top_k))
    return _fill_outputs(loaded, result, int(top_k))


def _fill_outputs(loaded: registry.LoadedModel, result: fm.FillMaskResult, top_k: int):
    filled = (f"**Filled in:** {result.filled}" + ("\n\nEach blank is predicted on its own from the same pass, "
                                                   "not jointly." if len(result.blanks) > 1 else "")
              + (f"\n\nNot in the vocabulary, read as [UNK]: {', '.join(result.unknown)}" if result.unknown else ""))
    title = f"Top {top_k} for each blank · {loaded.files.model_id}"
    return badge(loaded), filled, blank_figure(result.blanks, title), candidate_rows(result.blanks)


FILL_REFUSED = "**This sentence cannot be filled in.** {message}"


def fill_batch(model_id: list, text: list, top_k: list) -> tuple[list, list, list, list]:
    """``fill`` for a batch of requests (wired with batch=True: Gradio gathers concurrent requests into one call,
    and the model reads them in one padded forward pass). Each request's own problem (no blank, too long, model not
    available) is shown in its notice instead of failing the other requests of the batch. The parameters keep
    ``fill``'s names (each a list here), since they are the endpoint's parameter names for API clients."""
    model_ids, texts, top_ks = model_id, text, top_k
    outputs: list[tuple] = [None] * len(texts)  # type: ignore[list-item]
    groups: dict[str, list[int]] = {}
    for index, model_id in enumerate(model_ids):
        groups.setdefault(registry.model_id_or_default("mlm", model_id), []).append(index)
    for model_id, indices in groups.items():
        try:
            loaded = registry.load("mlm", model_id)
            results = fm.fill_mask_batch(loaded, [(texts[i], top_ks[i]) for i in indices])
        except ModelUnavailableError as exc:
            results, loaded = [exc] * len(indices), None
        except Exception as exc:  # noqa: BLE001 - shown per request, never as a traceback
            results, loaded = [exc] * len(indices), None
        for i, result in zip(indices, results):
            if isinstance(result, ModelUnavailableError):
                outputs[i] = (unavailable(result), "", empty_figure("No masked-LM checkpoint loaded"), [])
            elif isinstance(result, Exception):
                if not isinstance(result, UserInputError):
                    log.error("fill-mask batch failed", exc_info=result)
                message = str(result) if isinstance(result, UserInputError) else t("errors.internal", 
                    name=type(result).__name__)
                outputs[i] = (FILL_REFUSED.format(message=message), "", empty_figure(message), [])
            else:
                outputs[i] = _fill_outputs(loaded, result, int(top_ks[i]))
    return tuple(list(column) for column in zip(*outputs))


def word_list(text: str) -> list[tuple[str, int]]:
    """(label, index) for each word of the text; the word boundaries are BERT's, whatever the vocabulary."""
    if not (text or "").strip():
        return []
    tokenizer, _ = registry.tokenizer(MINILM_ID)
    return [(f"{w.text}  (word {i + 1})", i) for i, w in enumerate(fm.words_of(tokenizer, text))]


@friendly_errors
def word_choices(text: str):
    """The words of the text, for 'Mask this word'."""
    return gr.Dropdown(choices=word_list(text), value=None)


@friendly_errors
def mask_chosen_word(text: str, index):
    if index is None:
        raise UserInputError("Pick a word from the list first.")
    tokenizer, _ = registry.tokenizer(MINILM_ID)
    return fm.mask_word(tokenizer, text, int(index))


# ----------------------------------------------------------------------------------------------------------------
# Both sides vs left only


@friendly_errors
@gpu_handler
def compare(model_id: str, text: str, top_k: float, progress=gr.Progress()):
    """→ notice, explanation, bidirectional figure, left-only figure."""
    fm.clean_text(text)
    try:
        loaded = load_mlm(model_id, progress)
    except ModelUnavailableError as exc:
        blank = empty_figure("No masked-LM checkpoint loaded")
        return unavailable(exc), "", blank, blank
    result = fm.compare_contexts(loaded, text, int(top_k))
    best_full, best_left = result.full.candidates[0], result.left.candidates[0]
    summary = (f"**Both sides** read `{result.full_text}` → **{best_full.token}** ({best_full.probability:.2f}).  \n"
               f"**Left only** read `{result.left_text}` → **{best_left.token}** ({best_left.probability:.2f}).  \n"
               "Only the words after the blank differ between the two; a left-to-right model such as GPT never "
               "sees them when it predicts the word.")
    return (badge(loaded), summary,
            blank_figure([result.full], "Both sides (BERT)"), blank_figure([result.left], "Left context only"))


# ----------------------------------------------------------------------------------------------------------------
# Input representation


@friendly_errors
@gpu_handler
def inputs(model_id: str, text: str, pair: str, progress=gr.Progress()):
    """→ notice, highlighted tokens, token table, 4 heatmaps."""
    fm.clean_text(text)
    loaded, reason = fm.model_for_views(model_id, byte_progress(progress))
    rep = fm.input_representation(loaded, text, pair or None)
    segment_names = {0: "segment A (0)", 1: "segment B (1)"}
    highlighted = [(token + " ", segment_names[s]) for token, s in zip(rep.tokens, rep.segment_ids)]
    table = [[i, token, loaded.tokenizer.token_to_id(token), s] for i, (token, s)
             in enumerate(zip(rep.tokens, rep.segment_ids))]
    dims = min(EMBEDDING_DIMS_SHOWN, rep.token.shape[1])
    scale = float(np.abs(np.stack([rep.token, rep.segment, rep.position])[..., :dims]).max()) or 1.0
    labels = [str(d) for d in range(dims)]

    def draw(values: np.ndarray, title: str, zmax: float) -> go.Figure:
        return heatmap(values[:, :dims], labels, rep.tokens, title, colorscale=DIVERGING_SCALE, zmid=0,
                       zmin=-zmax, zmax=zmax, x_title=f"dimension (first {dims} of {rep.token.shape[1]})",
                       y_title="token", annotate=False, height=360)

    figures = [draw(rep.token, "Token embedding", scale), draw(rep.segment, "+ Segment embedding", scale),
               draw(rep.position, "+ Position embedding", scale),
               draw(rep.total, "= Sum (LayerNorm'd before layer 1)", float(np.abs(rep.total[:, :dims]).max()))]
    note = badge(loaded, reason) + "\n\n" + PIECE_NOTE
    if loaded.config.model_type == "distilbert":
        note += "\n\nDistilBERT has no segment embeddings: its segment panel is zero."
    return note, highlighted, table, *figures


# ----------------------------------------------------------------------------------------------------------------
# Masking procedure


@friendly_errors
def masking(model_id: str, text: str, seed: float, draws: float):
    """→ highlighted draw, table, counts figure, per-position figure, summary."""
    fm.clean_text(text)
    note = ""
    try:
        tokenizer, _ = registry.tokenizer(model_id)
    except ModelUnavailableError:
        tokenizer, _ = registry.tokenizer(MINILM_ID)  # same WordPiece vocabulary as bert-base-uncased
        note = f"\n\n*{model_id} is not on this machine; tokenised with MiniLM-L6's (bert-base-uncased's) vocabulary.*"
    result = fm.bert_masking(tokenizer, text, whole_number(seed, "the seed"), whole_number(draws, "the number of draws", 1))
    names = fm.ACTION_NAMES
    highlighted = [(token + " ", None if action == fm.KEEP else names[action])
                   for token, action in zip(result.corrupted, result.actions)]
    table = [[i, before, after, names[action]] for i, (before, after, action)
             in enumerate(zip(result.tokens, result.corrupted, result.actions)) if action != fm.KEEP]
    chosen_total = sum(result.counts.values())
    shares = {name: count / chosen_total for name, count in result.counts.items()}
    counts_fig = bar(list(shares), list(shares.values()),
                     f"What happened to the {chosen_total:,} chosen tokens (goal 0.8 / 0.1 / 0.1)",
                     value_title="share of chosen tokens", highlight=[True, False, False], height=300)
    positions_fig = bar([f"{i}:{t}" for i, t in enumerate(result.tokens)],
                        [c / result.draws for c in result.chosen_by_position],
                        f"How often each token was chosen over {result.draws:,} draws", horizontal=False,
                        value_title="share of draws")
    summary = (f"{result.candidates} tokens may be chosen ([CLS] and [SEP] may not); each draw chooses "
               f"max(1, round(0.15 × {result.candidates})) = **{result.chosen_per_draw}** "
               f"({result.chosen_per_draw / result.candidates:.0%} of this sentence; 15% on long text). "
               "The model must predict the original token at every chosen position, including those left "
               "unchanged, so it cannot assume that any visible token is correct." + note)
    return highlighted, table, counts_fig, positions_fig, summary


# ----------------------------------------------------------------------------------------------------------------
# Next-sentence prediction


@friendly_errors
@gpu_handler
def nsp(model_id: str, first: str, second: str, progress=gr.Progress()):
    """→ notice, figure, filled pair."""
    fm.clean_text(first, "the first sentence")
    fm.clean_text(second, "the second sentence")
    try:
        loaded = load_mlm(model_id, progress)
    except ModelUnavailableError as exc:
        return unavailable(exc), empty_figure("No checkpoint with an NSP head loaded"), ""
    is_next = fm.next_sentence(loaded, first, second)
    fig = bar(["IsNext", "NotNext"], [is_next, 1 - is_next], "P(sentence B follows sentence A)",
              highlight=[is_next >= 0.5, is_next < 0.5], height=260)
    filled = ""
    if fm.BLANK.search(first) or fm.BLANK.search(second):  # pre-training did both tasks on the same input
        result = fm.fill_mask(loaded, first, 1, pair=second)
        filled = "**The masked LM on the same pair:** " + result.filled
    return badge(loaded), fig, filled


# ----------------------------------------------------------------------------------------------------------------
# Model card


@friendly_errors
def card(model_id: str):
    """→ table, explanation."""
    c = fm.model_card(model_id)
    cfg = c.config
    encoder = "BertModel with pooler" if c.pooler else "DistilBertModel"
    rows = [[f"total: {encoder}" if part == "total" else part, f"{count:,}"] for part, count in c.breakdown.items()]
    rows += [[part, f"{count:,}"] for part, count in c.heads.items()]
    rows.append(["total with the pre-training heads", f"{c.breakdown['total'] + sum(c.heads.values()):,}"])
    kind = "DistilBERT (no segment embeddings, no pooler)" if cfg.model_type == "distilbert" else "BERT"
    gap = c.breakdown["total"] - c.seed_formula
    rest = gap - c.omitted_biases - c.pooler
    text = (f"**{c.model_id}** · {kind} · numbers from {c.source}: L = {cfg.num_hidden_layers}, "
            f"H = {cfg.hidden_size}, A = {cfg.num_attention_heads}, FFN = {cfg.intermediate_size}, "
            f"V = {cfg.vocab_size:,}, positions = {cfg.max_position_embeddings}.\n\n"
            "**The seed's hand formula** (V + P + S)·H + 2H + L·(3H² + H² + 2·H·4H + 4H) = "
            f"**{c.seed_formula:,}**; counting every module gives **{c.breakdown['total']:,}**. "
            f"The gap, {gap:,}, is the {c.omitted_biases:,} linear-layer biases the formula leaves out "
            f"(L·(4H + 4H + H))" + (f" plus the {c.pooler:,} of the pooler (H² + H)" if c.pooler else "")
            + (f", plus {rest:,} because this FFN is not 4H wide" if rest else "") + ".")
    return rows, text


# ----------------------------------------------------------------------------------------------------------------
# Contextual vs static


@friendly_errors
@gpu_handler
def bank(model_id: str, word: str, first: str, second: str, third: str, progress=gr.Progress()):
    """→ notice, contextual figure, static figure, explanation."""
    progress(0.1, desc="Loading the encoder and GloVe…")
    loaded, reason = fm.model_for_views(model_id)
    result = fm.contextual_vs_static(loaded, word, [first, second, third])
    labels = [f"{i + 1}: {s[:28]}{'…' if len(s) > 28 else ''}" for i, s in enumerate(result.sentences)]
    contextual = heatmap(result.contextual, labels, labels, f"'{result.word}' in context ({result.contextual_model})",
                         zmin=0, zmax=1, height=380)
    if result.static is None:
        static = empty_figure(result.static_note or "No static vector")
    else:
        static = heatmap(np.round(result.static, 6), labels, labels, f"'{result.word}' in {result.static_model}",
                         zmin=0, zmax=1, height=380)
    off = result.contextual[~np.eye(len(labels), dtype=bool)]
    text = (f"The encoder gives '{result.word}' a different vector in each sentence: cosines from {off.min():.2f} "
            f"to {off.max():.2f}. A static table returns the same row every time, so every cosine is exactly 1.0: "
            "it cannot tell a river bank from a savings bank.")
    return badge(loaded, reason), contextual, static, text


# ----------------------------------------------------------------------------------------------------------------
# Layout


MLM_ID = registry.CHECKPOINTS["mlm"][0]  # bert-base-uncased: the seed's model; offline, views fall back to MiniLM
P = presets.Preset
FILL_PRESETS = [P("my-dog-is", "my dog is [MASK] .", (MLM_ID, FILL_EXAMPLES[0][0], 5), "§13"),
                P("capital-of-france", "The capital of France is [MASK].", (MLM_ID, FILL_EXAMPLES[1][0], 5), "§13"),
                P("gallon-of-milk", "two blanks: store, milk", (MLM_ID, FILL_EXAMPLES[2][0], 5), "§13"),
                P("weather-zh", "今天天气很[MASK]", ("bert-base-chinese", FILL_EXAMPLES[3][0], 5), "§13.1")]
COMPARE_PRESETS = [P("gpt-vs-bert", "weather: both sides vs left only", (MLM_ID, COMPARE_EXAMPLES[0][0], 8),
                     "§13.1"),
                   P("gpt-vs-bert-zh", "今天天气很__ (Chinese)", ("bert-base-chinese", COMPARE_EXAMPLES[1][0], 8),
                     "§13.1"),
                   P("opened-the", "She opened the [MASK]…", (MLM_ID, COMPARE_EXAMPLES[2][0], 8), "§13.1")]
INPUT_PRESETS = [P("bert-input", "[CLS] my dog is cute [SEP] he likes play ##ing [SEP]",
                   (MLM_ID, *INPUT_EXAMPLES[0]), "§13"),
                 P("wordpiece", "straw ##berries, flight ##less", (MLM_ID, *INPUT_EXAMPLES[1]), "§13"),
                 P("single-sentence", "one sentence: all segment 0", (MLM_ID, *INPUT_EXAMPLES[2]), "§13")]
MASKING_PRESETS = [P("mlm-80-10-10", "my dog is hairy: 15%, then 80/10/10", (MLM_ID, *MASKING_EXAMPLES[0]), "§13"),
                   P("masking-long", "a longer sentence", (MLM_ID, *MASKING_EXAMPLES[1]), "§13")]
NSP_PRESETS = [P("nsp-isnext", "IsNext: he bought a gallon [MASK] milk", (MLM_ID, *NSP_EXAMPLES[0]), "§13"),
               P("nsp-notnext", "NotNext: penguin [MASK] are flightless", (MLM_ID, *NSP_EXAMPLES[1]), "§13"),
               P("nsp-dog", "my dog is cute / he likes playing", (MLM_ID, *NSP_EXAMPLES[2]), "§13")]
CARD_PRESETS = [P("bert-base-parameters", "BERT-base: 108,808,704 by the seed's formula", (MLM_ID,), "§13"),
                P("distilbert-parameters", "DistilBERT", ("distilbert-base-uncased",), "§13")]
BANK_PRESETS = [P("contextual-bank", "bank: money, river, money", (MLM_ID, *BANK_EXAMPLES[0]), "§13"),
                P("contextual-bat", "bat: animal, sport, animal", (MLM_ID, *BANK_EXAMPLES[1]), "§13")]
# (seed §, question, answer, view key, preset)
LESSON = [
    ("§13", "How many parameters does BERT-base have? Count them with the seed's formula, then module by module.",
     "The seed's hand count gives 108,808,704. Counting every module of BertModel gives 109,482,240: the formula "
     "leaves out the 82,944 biases of the linear layers and the 590,592 of the pooler.", "card",
     "bert-base-parameters"),
    ("§13", "In the pair “my dog is cute” / “he likes playing”, which segment id does each token get, and how many "
     "rows does the input have?", "[CLS] my dog is cute [SEP] get segment 0, he likes playing [SEP] get segment 1; "
     "each of the n tokens gets token + segment + position embeddings, a (1, n, H) input. The real vocabulary keeps "
     "“playing” whole; the paper's “play ##ing” is an illustration.", "inputs", "bert-input"),
    ("§13", "Of the tokens chosen for masking, what share become [MASK], a random token, or stay unchanged?",
     "About 80%, 10% and 10%: over 10,000 seeded draws the counts land close to those shares, and about 15% of "
     "the tokens are chosen each time.", "masking", "mlm-80-10-10"),
]


def build() -> None:
    gr.Markdown(INTRO)
    lesson_slot = gr.Column()
    with gr.Row():
        model_id = model_picker("mlm")
        notice = gr.Markdown("Predictions load the checkpoint on first use. Without network, the views that need "
                             "only a tokenizer and an encoder run on the packaged MiniLM-L6.")
    with gr.Tabs():
        with gr.Tab("Fill in the blank", id="fill"):
            with gr.Row():
                text = gr.Textbox(value="my dog is [MASK] .", label="Sentence with blanks ([MASK], [mask] or _)",
                                  scale=4)
                top_k = gr.Slider(1, 20, value=5, step=1, label="Top k", scale=1)
            with gr.Row():
                word = gr.Dropdown(choices=word_list(text.value), value=None, label="Word to hide", scale=3)
                mask_button = gr.Button("Mask this word", scale=1)
                fill_button = gr.Button("Fill in", variant="primary", scale=1)
            fill_bar = gr.Column()
            filled = gr.Markdown()
            with gr.Row():
                fill_plot = gr.Plot(label="Predictions", scale=3, show_label=False)
                fill_table = gr.Dataframe(headers=["blank", "rank", "token", "probability"], interactive=False,
                                          label="Top-k per blank", scale=2, buttons=TABLE_BUTTONS)
            text.change(word_choices, text, word, api_name="mlm_words")
            mask_button.click(mask_chosen_word, [text, word], text, api_name="mlm_mask_word")
            # batch=True: requests that arrive together (a class pressing Fill at once) share one forward pass;
            # benchmarks/batching.py measures the throughput against fill (unbatched).
            model_event(fill_button.click, {"mlm": model_id}, fill_batch, [model_id, text, top_k],
                        [notice, filled, fill_plot, fill_table], api_name="mlm_fill", batch=True,
                        max_batch_size=fm.FILL_BATCH)
            # Tab level (where=None): the first sub-tab, shown (and computed) when the tab opens.
            fill_view = presets.View("mlm", "fill", [model_id, text, top_k], [notice, filled, fill_plot, fill_table],
                                     fill, FILL_PRESETS)
            with fill_bar:
                fill_view.buttons()

        with gr.Tab("Both sides vs left only", id="compare") as compare_tab:
            gr.Markdown("The same blank, predicted from the whole sentence (BERT) and from the words before it "
                        "only (what a left-to-right model like GPT sees). Seed §13.1.")
            with gr.Row():
                compare_text = gr.Textbox(value=COMPARE_EXAMPLES[0][0], label="Sentence with one blank", scale=4)
                compare_k = gr.Slider(1, 20, value=8, step=1, label="Top k", scale=1)
            compare_button = gr.Button("Compare", variant="primary")
            compare_md = gr.Markdown()
            with gr.Row():
                both_plot, left_plot = gr.Plot(label="Both sides", show_label=False), gr.Plot(label="Left only",
                    show_label=False)
            model_event(compare_button.click, {"mlm": model_id}, compare, [model_id, compare_text, compare_k],
                        [notice, compare_md, both_plot, left_plot], api_name="mlm_compare")
            presets.View("mlm", "compare", [model_id, compare_text, compare_k], [notice, compare_md, both_plot, left_plot],
                         compare, COMPARE_PRESETS, where=compare_tab).buttons()

        with gr.Tab("Input representation", id="input") as inputs_tab:
            gr.Markdown("E = token + segment + position embedding, one row per WordPiece token; segment ids are 0 "
                        "for sentence A (with [CLS]) and 1 for sentence B.")
            with gr.Row():
                first = gr.Textbox(value="my dog is cute", label="Sentence A")
                second = gr.Textbox(value="he likes playing", label="Sentence B (optional)")
            inputs_button = gr.Button("Show the input", variant="primary")
            inputs_md = gr.Markdown()
            with gr.Row():
                tokens = gr.HighlightedText(label="WordPiece tokens by segment", combine_adjacent=False, scale=3,
                                            color_map={"segment A (0)": COLORWAY[0], "segment B (1)": COLORWAY[1]})
                token_table = gr.Dataframe(headers=["position", "token", "id", "segment"], interactive=False,
                                           label="Tokens", scale=2, max_height=320, buttons=TABLE_BUTTONS)
            with gr.Row():
                token_plot, segment_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            with gr.Row():
                position_plot, sum_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            model_event(inputs_button.click, {"mlm": model_id}, inputs, [model_id, first, second],
                        [inputs_md, tokens, token_table, token_plot, segment_plot, position_plot, sum_plot],
                        api_name="mlm_inputs", queue={})
            inputs_view = presets.View("mlm", "inputs", [model_id, first, second],
                                       [inputs_md, tokens, token_table, token_plot, segment_plot, position_plot,
                                        sum_plot], inputs, INPUT_PRESETS, where=inputs_tab)
            inputs_view.buttons()

        with gr.Tab("Masking procedure", id="masking") as masking_tab:
            gr.Markdown("Pre-training corrupts 15% of the tokens: 80% become [MASK], 10% a random token, 10% stay "
                        "as they are. One seeded draw, then the counts over many draws.")
            with gr.Row():
                masking_text = gr.Textbox(value="my dog is hairy", label="Sentence", scale=4)
                seed = gr.Number(value=0, precision=0, label="Seed", scale=1)
                draws = gr.Slider(100, fm.MAX_DRAWS, value=10_000, step=100, label="Draws", scale=2)
            masking_button = gr.Button("Mask", variant="primary")
            with gr.Row():
                draw_view = gr.HighlightedText(label="One draw (what the model reads)", combine_adjacent=False,
                                               scale=3)
                draw_table = gr.Dataframe(headers=["position", "original", "model reads", "what happened"],
                                          interactive=False, label="Chosen tokens", scale=2, buttons=TABLE_BUTTONS)
            masking_md = gr.Markdown()
            with gr.Row():
                counts_plot, positions_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            masking_button.click(masking, [model_id, masking_text, seed, draws],
                                 [draw_view, draw_table, counts_plot, positions_plot, masking_md],
                                 api_name="mlm_masking")
            masking_view = presets.View("mlm", "masking", [model_id, masking_text, seed, draws],
                                        [draw_view, draw_table, counts_plot, positions_plot, masking_md], masking,
                                        MASKING_PRESETS, where=masking_tab)
            masking_view.buttons()

        with gr.Tab("Next sentence", id="nsp") as nsp_tab:
            gr.Markdown("Next-sentence prediction: half of the pre-training pairs were real neighbours (IsNext), "
                        "half random (NotNext). A linear layer on the pooled [CLS] vector tells them apart. "
                        "bert-base-uncased has this head; DistilBERT does not.")
            with gr.Row():
                nsp_first = gr.Textbox(value=NSP_EXAMPLES[0][0], label="Sentence A")
                nsp_second = gr.Textbox(value=NSP_EXAMPLES[0][1], label="Sentence B")
            nsp_button = gr.Button("Is B the next sentence?", variant="primary")
            nsp_plot = gr.Plot(show_label=False)
            nsp_md = gr.Markdown()
            model_event(nsp_button.click, {"mlm": model_id}, nsp, [model_id, nsp_first, nsp_second],
                        [notice, nsp_plot, nsp_md], api_name="mlm_nsp")
            presets.View("mlm", "nsp", [model_id, nsp_first, nsp_second], [notice, nsp_plot, nsp_md], nsp,
                         NSP_PRESETS, where=nsp_tab).buttons()

        with gr.Tab("Model card", id="card") as card_tab:
            card_button = gr.Button("Count the parameters", variant="primary")
            card_md = gr.Markdown()
            card_table = gr.Dataframe(headers=["part", "parameters"], interactive=False, label="From the config",
                buttons=TABLE_BUTTONS)
            card_button.click(card, model_id, [card_table, card_md], api_name="mlm_card")
            card_view = presets.View("mlm", "card", [model_id], [card_table, card_md], card, CARD_PRESETS,
                                     where=card_tab)
            card_view.buttons()

        with gr.Tab("Contextual vs static", id="bank") as bank_tab:
            gr.Markdown("One word in three sentences: the encoder's vector (last layer, mean over the word's "
                        "pieces) changes with the sentence; GloVe's does not.")
            with gr.Row():
                bank_word = gr.Textbox(value="bank", label="Word", scale=1)
                bank_1 = gr.Textbox(value=BANK_EXAMPLES[0][1], label="Sentence 1", scale=2)
                bank_2 = gr.Textbox(value=BANK_EXAMPLES[0][2], label="Sentence 2", scale=2)
                bank_3 = gr.Textbox(value=BANK_EXAMPLES[0][3], label="Sentence 3", scale=2)
            bank_button = gr.Button("Compare vectors", variant="primary")
            bank_md = gr.Markdown()
            with gr.Row():
                contextual_plot, static_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            model_event(bank_button.click, {"mlm": model_id}, bank, [model_id, bank_word, bank_1, bank_2, bank_3],
                        [notice, contextual_plot, static_plot, bank_md], api_name="mlm_bank")
            presets.View("mlm", "bank", [model_id, bank_word, bank_1, bank_2, bank_3],
                         [notice, contextual_plot, static_plot, bank_md], bank, BANK_PRESETS, where=bank_tab).buttons()

    views = {"card": card_view, "inputs": inputs_view, "masking": masking_view}
    with lesson_slot:
        presets.lesson_table(LESSON, views)
