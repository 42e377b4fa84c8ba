"""The sampling controls and the next-token figure, the same in every tab that generates (issue #36): the N-gram
tab's Generate view, the RNN & LSTM tab's, the Transformer & GPT tab's next-token and generation views (the
char-GPT and GPT-2), and the BERT masked LM tab's Fill view on the char-BERT (demo/mlm/char_views.py: each character
of its iterative fill is drawn). core/text/sampling.py draws; this module builds the four controls (temperature, top-k, top-p, seed),
reads them, and turns a ``Cut`` into the figure (demo/token_figures.next_token_figure), its table and its sentences.

What the controls accept, and what a learner gets at their ends:
- temperature 0: greedy, the limit τ → 0 (all the mass on the most probable token; shared if several tie);
- top-k 0: no top-k cut; a k above the vocabulary: no cut either, and the note says so;
- top-p 1: no top-p cut; top-p 0: only the most probable token (min_tokens_to_keep = 1, as in transformers);
- seed: a whole number from 0 to 2³²−1; the same seed and settings give the same text, and a preset's link carries
  its seed (``?tab=…&preset=…&seed=…``, demo/kit/presets.py).
"""
from __future__ import annotations

import gradio as gr
import pandas as pd

from core.loading.lazy import lazy_import
from demo.kit.widgets import TABLE_BUTTONS, sig4
from demo.kit.token_figures import next_token_figure
from demo.kit.i18n import label, t

# torch-backed: loaded on the first draw, not when the app is built (core/loading/lazy.py)
sampling = lazy_import("core.text.sampling")

MAX_SEED = 2**32 - 1
TABLE_COLUMNS = 7  # rank, token, P (τ = 1), P_τ, kept, q, Σ P_τ (sampling.col_*)


def controls(temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0, *,
             max_top_k: int = 100) -> tuple[gr.Slider, gr.Slider, gr.Slider, gr.Number]:
    """The four controls, in a row of their own, labelled alike in every tab. Returned in the handlers' order."""
    with gr.Row():
        temperature_box = gr.Slider(0, 3, value=temperature, step=0.05, label=label("sampling.temperature"),
                                    info=label("sampling.temperature_info"))
        top_k_box = gr.Slider(0, max_top_k, value=top_k, step=1, label=label("sampling.top_k"),
                              info=label("sampling.top_k_info"))
        top_p_box = gr.Slider(0, 1, value=top_p, step=0.01, label=label("sampling.top_p"),
                              info=label("sampling.top_p_info"))
        seed_box = gr.Number(value=seed, precision=0, minimum=0, maximum=MAX_SEED, label=label("sampling.seed"),
                             info=label("sampling.seed_info"))
    return temperature_box, top_k_box, top_p_box, seed_box


def settings(temperature, top_k, top_p, seed) -> "sampling.Settings":
    """The controls' values as checked settings (an API client may send anything; the message says what is wrong)."""
    return sampling.Settings(temperature, top_k, top_p, seed).checked()


def describe(settings: "sampling.Settings") -> str:
    """"τ = 0.8 · top-k 5 · top-p 0.9 · seed 7", the same words in every tab (formulas: no translation needed)."""
    parts = [f"τ = {settings.temperature:g}" + (f" ({t('sampling.greedy')})" if settings.greedy else "")]
    parts.append(f"top-k {settings.top_k}" if settings.top_k else t("sampling.no_top_k"))
    parts.append(f"top-p {settings.top_p:g}" if settings.top_p < 1 else t("sampling.no_top_p"))
    return " · ".join(parts + [t("sampling.seed_is", seed=settings.seed)])


def describe_plain(temperature: float, top_k: int = 0, top_p: float = 1.0) -> str:
    """A preset's settings in formulas only ("τ = 1 · top-k 5"): the same in both languages, for preset labels."""
    return " · ".join([f"τ = {temperature:g}"] + [f"top-k {top_k}"] * bool(top_k) + [f"top-p {top_p:g}"] * (top_p < 1))


def figure(cut: "sampling.Cut", shown=lambda token: token, title_key: str = "sampling.fig_title", **fields):
    """The next-token figure of one step; ``shown`` makes a token readable on an axis (spaces, newlines)."""
    others = cut.candidates - len(cut.tokens)
    title = t(title_key, kept=f"{cut.kept_count:,}", candidates=f"{cut.candidates:,}", mass=f"{cut.kept_mass:.3f}",
              settings=describe(cut.settings), **fields)
    return next_token_figure([shown(token) for token in cut.tokens], cut.tempered, cut.renormalised, cut.kept, title,
                             original=None if cut.settings.temperature == 1 else cut.original,
                             rest=(t("sampling.others", count=f"{others:,}"), *cut.rest[1:]) if others else None)


def table(cut: "sampling.Cut", shown=lambda token: token) -> pd.DataFrame:
    """The figure's numbers, one row per shown token (the CSV button exports them)."""
    running, rows = 0.0, []
    for rank, (token, p, p_tau, kept, q) in enumerate(zip(cut.tokens, cut.original, cut.tempered, cut.kept,
                                                          cut.renormalised), 1):
        running += p_tau
        rows.append([rank, shown(token), sig4(p), sig4(p_tau), t("sampling.kept" if kept else "sampling.cut"),
                     sig4(q), sig4(running)])
    return pd.DataFrame(rows, columns=[t(f"sampling.col_{i}") for i in range(TABLE_COLUMNS)])


def summary(cut: "sampling.Cut", model: str = "", notes: bool = True) -> str:
    """What the cut kept, in a sentence (``model``: whose cut, when a view draws from two), and, with ``notes``,
    what the settings' ends mean when the learner is at one."""
    s = cut.settings
    lines = [(f"**{model}:** " if model else "") + t(
        "sampling.kept_summary", kept=f"{cut.kept_count:,}", candidates=f"{cut.candidates:,}",
        mass=f"{cut.kept_mass:.4g}", original=f"{cut.kept_mass_original:.4g}")]
    if not notes:
        return lines[0]
    if s.greedy:
        lines.append(t("sampling.note_greedy"))
    else:
        if s.top_k and s.top_k >= cut.candidates:
            lines.append(t("sampling.note_top_k_all", k=s.top_k, candidates=f"{cut.candidates:,}"))
        if s.top_p == 0:
            lines.append(t("sampling.note_top_p_zero"))
    return "  \n".join(lines)


STEP_COLUMNS = 6  # step, drawn, q, kept, kept mass, most probable (sampling.step_col_*)


def step_row(n: int, token: str, draw: "sampling.Draw", shown=lambda token: token) -> list:
    """One generation step for the steps table: what was drawn, with what probability, from how large a cut."""
    cut = draw.cut
    likely = " · ".join(f"{shown(tok)} {p:.2f}" for tok, p in zip(cut.tokens[:3], cut.tempered[:3]))
    return [n, token, sig4(draw.probability), cut.kept_count, sig4(cut.kept_mass), likely]


def steps_table(rows: list[list]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=[t(f"sampling.step_col_{i}") for i in range(STEP_COLUMNS)])


def drawn(token: str, probability: float, seed: int) -> str:
    return t("sampling.drawn", token=token, q=f"{probability:.4g}", seed=seed)


def table_component(**options) -> gr.Dataframe:
    return gr.Dataframe(headers=[""] * TABLE_COLUMNS, interactive=False, max_height=420, buttons=TABLE_BUTTONS,
                        label=label("sampling.table"), **options)


def result_link(tab: str, presets, values: tuple, seed_index: int, positions: list[int] | None = None) -> str:
    """"🔗 link to this result" when the inputs are a preset's, whatever the seed: the preset's link with the seed in
    it (demo/kit/presets.py reads ``&seed=``). ``values`` are the preset's values at ``positions`` (default: all of
    them, in order); ``seed_index`` is the seed's position in the preset. Empty once the learner changed anything
    else, since the link would then show another result."""
    positions = list(range(len(values))) if positions is None else positions
    seed = values[positions.index(seed_index)]
    for preset in presets:
        wanted = preset.resolved()
        if all(_same(wanted[i], value) for i, value in zip(positions, values) if i != seed_index):
            seed = int(float(seed))
            return "\n\n" + t("sampling.result_link", link=f"?tab={tab}&preset={preset.slug}&seed={seed}", seed=seed)
    return ""


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b
