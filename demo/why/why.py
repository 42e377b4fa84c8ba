"""Why this answer (issue #35): which input tokens the prediction leans on, and how the answer forms layer by layer.

One view per predicting tab, each one call: ``build_gpt()`` inside the Transformer & GPT tab's sub-tabs (the char-GPT's
or a GPT-2's next token), ``build_lstm()`` inside the RNN & LSTM tab's (the shipped LSTM's next character; no rollout,
no logit lens); the BERT tabs' views (masked LM, NER, QA, classification) are in demo/why/encoders.py.
A view is ~11 components and 3 events: the text, the step count, a button, the preset bar, one Markdown (the
answer, f(x) − f(x'), the completeness gap), one gr.HTML (the tokens coloured by each method, the numbers, the
logit-lens table: PNG/SVG/CSV from demo/kit/static_html.py) and one plot (the logit-lens heatmap, demo/kit/figures.py).
core/why/attribution.py, core/why/why.py and core/why/logit_lens.py compute; this module formats.

A click streams (issue #53): the button's handler (``stream_*``) is a generator that shows gradient × input and
rollout first, then integrated gradients at 4, 8, 16, … steps with the completeness gap of each, so the learner sees
it shrink. The result cache keeps the last stage, so the next learner asking the same gets it at once. A preset
(``explain_*``, also what first open shows) computes the last stage only.
"""
from __future__ import annotations

from typing import Callable, Iterator

import gradio as gr
import numpy as np

from core.loading.checkpoints import CHAR_GPT_ID, CHECKPOINTS, CHINESE_GPT2_ID
from core.text.i18n import current_language
from core.loading.lazy import lazy_import
from core.text.limits import MAX_TEXT_CHARS
from demo.kit import presets
from demo.server.handlers import friendly_errors, gpu_handler, number_in_range
from demo.kit.widgets import sig4, sig4_text
from demo.server.downloads import card_when_missing, model_event, results_visible
from demo.kit.figures import empty_figure, heatmap
from demo.kit.i18n import label, t
from demo.kit.static_html import EXPORT_JS, coloured_tokens, table

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
why_core = lazy_import("core.why.why")
logit_lens = lazy_import("core.why.logit_lens")
attribution = lazy_import("core.why.attribution")

DEFAULT_STEPS = 32
MAX_STEPS = 128
GPT_CHOICES = (CHAR_GPT_ID, *CHECKPOINTS["causal-lm"])


def _shown(piece: str) -> str:
    """Spaces and newlines made visible (a character model reads them as tokens)."""
    return piece.replace(" ", "␣").replace("\n", "↵") or "∅"


def _steps(steps) -> int:
    return int(number_in_range(steps, t("why.steps_name"), 2, MAX_STEPS))


def gap_share(ig) -> str:
    """|gap| as a percentage of f(x) − f(x'), as shown ("—" when the input changes nothing)."""
    change = ig.score - ig.baseline_score
    return sig4_text(100 * abs(ig.gap) / abs(change)) if change else "—"


def stage_line(result, gaps: list[tuple[int, str]]) -> str | None:
    """Where a stream stands: integrated gradients still to come, or each stage's completeness gap so far (``gaps``:
    (steps, gap share) of the stages shown). None for an answer computed in one go (a preset)."""
    ig = result.integrated
    if ig is None:
        stages = attribution.stage_steps(result.steps)
        key = "why.stage_quick" if result.rollout is not None else "why.stage_quick_no_rollout"
        return t(key, stages=", ".join(map(str, stages)))
    if result.final and len(gaps) < 2:
        return None
    shown = " → ".join(t("why.stage_gap", steps=steps, share=share) for steps, share in gaps)
    return t("why.stage_done", gaps=shown) if result.final else t("why.stage_refining", gaps=shown,
                                                                   final=result.steps)


def summary(result, lens, gaps: list[tuple[int, str]] | None = None) -> str:
    """The answer, what integrated gradients promise (Σ a = f(x) − f(x')) and how close they came; in a stream,
    which stage this is (stage_line)."""
    ig = result.integrated
    lines = [t("why.answer", model=result.model_id, target=t(f"why.target_{result.target}"),
               answer=_shown(result.answer), probability=sig4_text(result.probability))]
    stage = stage_line(result, gaps or [])
    if stage:
        lines.append(stage)
    if ig is not None:
        change = ig.score - ig.baseline_score
        lines.append(t("why.completeness", steps=ig.steps, baseline=t(f"why.baseline_{result.baseline}"),
                       f_x=sig4_text(ig.score), f_base=sig4_text(ig.baseline_score), change=sig4_text(change),
                       total=sig4_text(ig.total), gap=sig4_text(ig.gap), share=gap_share(ig)))
    if lens is not None:
        lines.append(t("why.lens_summary", answer=_shown(lens.answer), first=_layer(_first_top(lens)),
                       layers=len(lens.layers) - 1))
    if result.rollout is not None:
        lines.append(t("why.rollout_note"))
    lines += ["⚠️ " + note for note in result.notes]
    return "\n\n".join(lines)


def _first_top(lens) -> str:
    """The first layer from which the final answer is the lens's top token and stays so."""
    layer = len(lens.layers) - 1
    while layer > 0 and lens.answer_ranks[layer - 1] == 1:
        layer -= 1
    return lens.layers[layer]


def details(result, lens, name: str, marked: int | None = None) -> str:
    """The coloured tokens (one strip per method), the numbers per token, and the logit-lens table, as HTML.
    ``marked``: the predicting position to outline (default: the last token of a next-token answer, else [MASK])."""
    lang = current_language()
    tokens = [_shown(token) for token in result.tokens]
    if marked is None:
        marked = len(tokens) - 1 if result.target in ("next_token", "next_char") else (
            result.tokens.index("[MASK]") if "[MASK]" in result.tokens else None)
    legend = (t("why.legend_against"), t("why.legend_for"))
    parts = []
    for attribution in result.attributions:
        title = t(f"why.strip_{attribution.method}", answer=_shown(result.answer))
        parts.append(coloured_tokens(tokens, attribution.signed, title, f"{name}-{attribution.method}", lang,
                                     legend=legend, marked=marked))
    if result.rollout is not None:
        parts.append(coloured_tokens(tokens, result.rollout, t("why.strip_rollout"), f"{name}-rollout", lang,
                                     legend=legend, marked=marked))
    ig, gxi = result.integrated, result.attributions[-1]  # integrated gradients: None in the quick first view
    headers = [t("why.col_position"), t("why.col_token")] + (
        [t("why.col_ig_sum"), t("why.col_ig_l2")] if ig else []) + [t("why.col_gxi_sum"), t("why.col_gxi_l2")] + (
        [t("why.col_rollout")] if result.rollout else [])
    # one column per list, each read once: .signed and .l2 reduce the whole (T, E) tensor on every read
    columns = ([ig.signed, ig.l2] if ig else []) + [gxi.signed, gxi.l2] + ([result.rollout] if result.rollout else [])
    rows = [[i, token, *(sig4(column[i]) for column in columns)] for i, token in enumerate(tokens)]
    parts.append(table(headers, rows, f"{name}-numbers", lang))
    if lens is None:  # the LSTM: one recurrent layer, no stack of layers to read
        return "".join(parts)
    lens_headers = [t("why.col_layer"), t("why.col_top"), t("why.col_rank"), t("why.col_probability")]
    lens_rows = [[_layer(layer), ", ".join(f"{_shown(tok)} {sig4_text(p)}" for tok, p in zip(top, probs)), rank, sig4(p)]
                 for layer, top, probs, rank, p in zip(lens.layers, lens.top_tokens, lens.top_probabilities,
                                                       lens.answer_ranks, lens.answer_probabilities)]
    parts.append(table(lens_headers, lens_rows, f"{name}-logit-lens", lang))
    return "".join(parts)


def _layer(layer: str) -> str:
    return t("why.layer_embeddings") if layer == "embeddings" else layer


def lens_figure(lens):
    """Layers (rows) × the last layer's top k (columns): each layer's probability of each, read through the head."""
    tokens = [_shown(token) for token in lens.top_tokens[-1]]
    return heatmap(np.array(lens.tracked_probabilities), tokens, [_layer(layer) for layer in lens.layers],
                   t("why.lens_title", answer=_shown(lens.answer)), zmin=0.0, zmax=1.0,
                   x_title=t("why.lens_x"), y_title=t("why.lens_y"), value_format=".3f")


# ----------------------------------------------------------------------------------------------------------------
# Handlers


def staged(stages: Iterator, show: Callable, stream: bool, whys: Callable = lambda stage: [stage]
           ) -> Iterator[tuple]:
    """``show(stage, gaps, figures)`` → the outputs, for each stage of a stream (``stream`` False: for the last only,
    the answer computed in one go). ``whys(stage)``: the Whys a stage shows (QA: the start's and the end's);
    ``gaps`` holds one list per Why of the (steps, gap share) shown so far. ``figures``: this stage sends the figures
    that do not change during a stream (the first and the last do; those between skip them)."""
    gaps: list[list[tuple[int, str]]] = []
    first = True
    for stage in stages:
        whys_now = whys(stage)
        gaps = gaps or [[] for _ in whys_now]
        for why, seen in zip(whys_now, gaps):
            if why.integrated is not None:
                seen.append((why.integrated.steps, gap_share(why.integrated)))
        done = all(why.final for why in whys_now)
        if stream or done:
            yield show(stage, gaps, first or done)
            first = False


def unchanged(figure, shown: bool):
    """The figure when this stage sends it; else gr.skip(): the browser keeps the one it has."""
    return figure if shown else gr.skip()


def _explain_gpt(model_id: str, text: str, steps: float, stream: bool):
    lens = figure = None

    def show(result, gaps, send_figure):
        nonlocal lens, figure
        if lens is None:
            lens = logit_lens.gpt_lens(text, model_id)
            figure = lens_figure(lens)
        return summary(result, lens, gaps[0]), details(result, lens, "why-gpt"), unchanged(figure, send_figure)

    yield from staged(why_core.explain_gpt_stages(text, model_id, _steps(steps), stream), show, stream)


@friendly_errors
@gpu_handler
@card_when_missing("why.shows", outputs=3)
def explain_gpt(model_id: str, text: str, steps: float):
    """Integrated gradients, gradient × input and rollout for the GPT's next token, and its logit lens."""
    return attribution.last(_explain_gpt(model_id, text, steps, stream=False))


@friendly_errors
@gpu_handler
@card_when_missing("why.shows", outputs=3)
def stream_gpt(model_id: str, text: str, steps: float):
    """explain_gpt as the button shows it: gradient × input and rollout first, then integrated gradients refining."""
    yield from _explain_gpt(model_id, text, steps, stream=True)


def _explain_char_bert(text: str, steps: float, stream: bool, name: str = "why-char-bert"):
    lens = figure = None

    def show(result, gaps, send_figure):
        nonlocal lens, figure
        if lens is None:
            lens = logit_lens.char_bert_lens(text)
            figure = lens_figure(lens)
        return summary(result, lens, gaps[0]), details(result, lens, name), unchanged(figure, send_figure)

    yield from staged(why_core.explain_char_bert_stages(text, _steps(steps), stream), show, stream)


@friendly_errors
@gpu_handler
def explain_char_bert(text: str, steps: float):
    """The same for the char-BERT's guess at the first [MASK]."""
    return attribution.last(_explain_char_bert(text, steps, stream=False))


def _explain_lstm(text: str, steps: float, stream: bool):
    def show(result, gaps, _):
        return summary(result, None, gaps[0]), details(result, None, "why-lstm")

    yield from staged(why_core.explain_lstm_stages(text, _steps(steps), stream=stream), show, stream)


@friendly_errors
@gpu_handler
def explain_lstm(text: str, steps: float):
    """The shipped LSTM's next character: integrated gradients and gradient × input (no attention, no layers)."""
    return attribution.last(_explain_lstm(text, steps, stream=False))


@friendly_errors
@gpu_handler
def stream_lstm(text: str, steps: float):
    """explain_lstm as the button shows it, stage by stage."""
    yield from _explain_lstm(text, steps, stream=True)


def _or_message(fn, results: int, figures: int = 1):
    """fn for a preset: its result, or the message (with a blank figure for each of ``figures``) when it cannot run
    here."""
    def run(*values):
        try:
            return fn(*values)
        except gr.Error as exc:
            blank = (empty_figure(t("why.see_message")),) * figures
            return ("⚠️ " + str(exc.message), "", *blank, *[results_visible(False)] * results)
    return run


P = presets.Preset
ANIMAL = "The animal didn't cross the street because it was too tired"
GPT_PRESETS = [
    P("why-weather", label("why.preset_weather"), (CHAR_GPT_ID, "The weather today is very goo", DEFAULT_STEPS),
      "§12"),
    P("why-it-animal", label("why.preset_animal"), (CHAR_GPT_ID, ANIMAL[:-1], DEFAULT_STEPS), "§9"),
    P("why-bank", label("why.preset_bank"), (CHAR_GPT_ID, "We had a picnic on the river ban", DEFAULT_STEPS),
      "§3"),
    P("why-thinking-machines", label("why.preset_thinking"), (CHAR_GPT_ID, "Thinking Machine", DEFAULT_STEPS),
      "§9"),
    P("why-gpt2-animal", label("why.preset_gpt2_animal"),
      ("gpt2", "The animal didn't cross the street because it was too", DEFAULT_STEPS), "§12"),
    P("why-jintian-tianqi-hen", label("why.preset_zh_weather"), (CHINESE_GPT2_ID, "今天天气很", DEFAULT_STEPS),
      "§13.1"),
]
CHAR_BERT_PRESETS = [
    P("why-char-bert-weather", label("why.preset_weather"),
      ("The weather today is very goo[MASK], so we had to cancel the outdoor game.", DEFAULT_STEPS), "§13.1"),
    P("why-char-bert-it-animal", label("why.preset_animal"), (ANIMAL[:-1] + "[MASK].", DEFAULT_STEPS), "§9"),
    P("why-char-bert-bank", label("why.preset_bank"), ("We had a picnic on the river ba[MASK]k.", DEFAULT_STEPS),
      "§3"),
    P("why-char-bert-thinking-machines", label("why.preset_thinking"),
      ("Thinking Machine[MASK] can read both sides.", DEFAULT_STEPS), "§9"),
]
LSTM_PRESETS = [
    P("why-lstm-weather", label("why.preset_weather"), ("The weather today is very goo", DEFAULT_STEPS), "§6"),
    P("why-lstm-it-animal", label("why.preset_animal"), (ANIMAL[:-1], DEFAULT_STEPS), "§6"),
    P("why-lstm-bank", label("why.preset_bank"), ("We had a picnic on the river ban", DEFAULT_STEPS), "§6"),
    P("why-lstm-ishmael", label("why.preset_ishmael"), ("Call me Ishmae", DEFAULT_STEPS), "§6"),
]


# ----------------------------------------------------------------------------------------------------------------
# Layout: one sub-tab per call


def _steps_slider(value: int = DEFAULT_STEPS) -> gr.Slider:
    """The integration steps; ``value``: the view's default preset's, so its first open does not set it."""
    return gr.Slider(2, MAX_STEPS, value=value, step=1, label=label("why.steps"), info=label("why.steps_info"))


def _outputs(plot: bool = True):
    """The note (the answer and completeness, or the missing-model card), then the column of results that a card
    stands in for (hidden while the checkpoint is missing, so the card itself stays outside it)."""
    note = gr.Markdown()
    with gr.Column() as results:
        result = gr.HTML("", js_on_load=EXPORT_JS, elem_classes=["static-view"])
        figure = gr.Plot(show_label=False) if plot else None
    return note, result, figure, results


def build_gpt() -> dict[str, presets.View]:
    """The "Why this answer" sub-tab of the Transformer & GPT tab (call inside its gr.Tabs())."""
    with gr.Tab(label("why.tab"), id="why-gpt") as tab:
        gr.Markdown(label("why.intro_gpt"))
        model = gr.Dropdown(list(GPT_CHOICES), value=CHAR_GPT_ID, label=label("why.model"), allow_custom_value=True)
        text = gr.Textbox(label=label("why.text_gpt"), value=GPT_PRESETS[0].values[1], max_length=MAX_TEXT_CHARS)
        steps = _steps_slider()
        button = gr.Button(label("why.explain"), variant="primary")
        bar = gr.Column()
        note, result, plot, results = _outputs()  # results hidden while the checkpoint is missing: note = card
        inputs, outputs = [model, text, steps], [note, result, plot, results]
        model_event(button.click, {"causal-lm": model}, stream_gpt, inputs, outputs, api_name="transformer_why",
                    queue={}, cache_results=True)  # attributions at fixed steps: the same every time
        view = presets.View("transformer", "why_gpt", inputs, outputs, _or_message(explain_gpt, 1), GPT_PRESETS,
                            where=tab)
        with bar:
            view.buttons()
    return {"why_gpt": view}


def build_lstm() -> dict[str, presets.View]:
    """The "Why this answer" sub-tab of the RNN & LSTM tab, on the shipped LSTM (call inside its gr.Tabs())."""
    with gr.Tab(label("why.tab"), id="why-lstm") as tab:
        gr.Markdown(label("why.intro_lstm"))
        text = gr.Textbox(label=label("why.text_lstm"), value=LSTM_PRESETS[0].values[0], max_length=MAX_TEXT_CHARS)
        steps = _steps_slider()
        button = gr.Button(label("why.explain"), variant="primary")
        bar = gr.Column()
        note = gr.Markdown()
        result = gr.HTML("", js_on_load=EXPORT_JS, elem_classes=["static-view"])
        inputs, outputs = [text, steps], [note, result]
        button.click(stream_lstm, inputs, outputs, api_name="lstm_why", queue={}, show_progress_on=[note])
        view = presets.View("lstm", "why_lstm", inputs, outputs, _or_message(explain_lstm, 0, 0), LSTM_PRESETS,
                            where=tab)
        with bar:
            view.buttons()
    return {"why_lstm": view}
