"""The char-BERT in the BERT masked LM tab: "Fill in the blank" and "Both sides vs left only" on the masked LM this
repository trained (core/mlm/char.py), chosen in the picker as "char-bert" or standing in for a Hub checkpoint that is
not on this machine.

A word blank is as long as it is written ("_____" five characters, "[MASK][MASK]" two): one [MASK] per character.
The fill view shows the top-k at every masked character (the first pass, everything still masked), the whole word
filled iteratively (the most confident position first, the model run again after each) and beside it each
position's own argmax. Each character of the iterative fill is drawn by core/text/sampling.py with the controls every
generating tab has (demo/kit/sampling.py: τ, top-k, top-p, seed; τ = 0, the default, is the argmax): the steps table says
what each step drew, and the next-token figure shows the first step's cut. Every string is a key of the
``mlm.char_bert`` section of assets/i18n/*.yaml.
"""
from __future__ import annotations

import gradio as gr

from core.loading.checkpoints import CHAR_BERT_ID
from core.loading.lazy import lazy_import
from demo.kit import presets, sampling
from demo.kit.widgets import sig4
from demo.server.downloads import results_visible
from demo.kit.i18n import label, t
from demo.mlm.figures import candidates_figure, table

char_bert = lazy_import("core.mlm.char")  # torch-backed: loaded on first use (core/loading/lazy.py)
sides = lazy_import("core.mlm.char_compare")
held_out = lazy_import("core.mlm.char_heldout")

GREEDY = (0.0, 0, 1.0, 0)  # temperature, top-k, top-p, seed: the argmax fill, the controls' default
MAX_TOP_K = 80  # the sampling top-k slider's end (the char-BERT draws among its 76 characters)
HAIRY = "my dog is _____ ."  # seed §6's "my dog is hairy", also the fill view's first example
# The seed's English examples on the char-BERT (Moby-Dick's characters, so English only): each blank as long as the
# word it hides.
CHAR_FILL_EXAMPLES = [
    "Call me _______. Some years ago, never mind how long precisely, having little or no money in my purse.",
    "the man went to ___ store. he bought a gallon __ milk.",  # seed §6's NSP pair: "the", "of"
    "The weather today is very ___, so we had to cancel the outdoor game.",  # seed §13.1: "bad"
]
# model, text, top-k shown, temperature, top-k cut, top-p, seed (the fill view's inputs; demo/mlm/mlm.py adds the Hub's)
P = presets.Preset
FILL_PRESETS = [
    P("char-bert-hairy", label("mlm.preset_char_hairy"), (CHAR_BERT_ID, HAIRY, 5, *GREEDY), "§13"),
    P("char-bert-ishmael", label("mlm.preset_char_ishmael"), (CHAR_BERT_ID, CHAR_FILL_EXAMPLES[0], 5, *GREEDY), "§13"),
    # issue #36: the same blank, each character drawn (τ = 1.2, top-p 0.9); another seed writes another word
    P("char-bert-ishmael-sampled", label("mlm.preset_char_ishmael_sampled"),
      (CHAR_BERT_ID, CHAR_FILL_EXAMPLES[0], 5, 1.2, 0, 0.9, 7), "§13"),
    P("char-bert-gallon", label("mlm.preset_char_gallon"), (CHAR_BERT_ID, CHAR_FILL_EXAMPLES[1], 5, *GREEDY), "§13"),
    P("char-bert-weather", label("mlm.preset_char_weather"), (CHAR_BERT_ID, CHAR_FILL_EXAMPLES[2], 5, *GREEDY),
      "§13.1"),
]
SEED_INPUT = 6  # the seed's position among the fill view's inputs


def is_char_bert(model_id) -> bool:
    return str(model_id or "").strip().lower() == CHAR_BERT_ID


def shown(char: str) -> str:
    """A character as a bar's label: a space made visible."""
    return char.replace(" ", "␣").replace("\n", "↵")


def badge() -> str:
    """The char-BERT's badge and its held-out figures (assets/char_bert/heldout.json), with the caveat that a masked
    LM's bits are not a probability of the text."""
    figures = held_out.load_held_out()
    rows = {row["model"]: row for row in figures["rows"]}
    both, gpt = rows["char-BERT, both sides"], rows["char-GPT, left only"]
    parameters = char_bert.shipped_char_bert().info["parameters"]
    return (f"<span class='badge'>{t('mlm.char_bert.badge', parameters=f'{parameters:,}')}</span>\n\n"
            + t("mlm.char_bert.held_out", positions=f"{figures['protocol']['positions']:,}",
                both_accuracy=f"{both['accuracy']:.2%}", both_bits=sig4(both["bits_per_char"]),
                gpt_accuracy=f"{gpt['accuracy']:.2%}", gpt_bits=sig4(gpt["bits_per_char"])))


def notice(stands_in_for: str | None, note: str | None) -> str:
    """The badge, the Hub checkpoint it stands in for (with its download card), the unknown characters."""
    parts = [badge()] + ([stands_in_for] if stands_in_for else []) + (["⚠️ " + note] if note else [])
    return "\n\n".join(parts)


def plot_shown(figure) -> dict:
    """The first step's next-token figure, shown (a Hub checkpoint's one-shot fill draws nothing: hidden)."""
    return gr.update(value=figure, visible=figure is not None)


def fill(text: str, top_k, stands_in_for: str | None = None, settings=None, link: tuple | None = None) -> tuple:
    """→ notice, filled text, top-k per masked character, the iterative fill's steps (what each step drew), the first
    step's next-token figure, the results' column. ``settings``: demo/sampling.settings (None: the argmax);
    ``link``: the view's inputs, for the link to a preset's result with its seed (none when standing in)."""
    settings = settings or sampling.settings(*GREEDY)
    result = char_bert.fill_as_written(text, top_k, settings)
    words = [t("mlm.char_bert.blank_words", n=b + 1, iterative=blank.iterative, independent=blank.independent,
               order=" → ".join(str(offset + 1) for offset in blank.order)) for b, blank in enumerate(result.blanks)]
    first = result.steps[0]
    where = t("mlm.char_bert.first_filled", blank=first.blank + 1, n=first.offset + 1, char=shown(first.char))
    drawn = t("mlm.char_bert.drawn_with", settings=sampling.describe(settings)) + "  \n" + sampling.summary(
        first.draw.cut, where)
    filled = "\n\n".join([t("mlm.char_bert.filled", iterative=result.iterative, independent=result.independent),
                          *words, drawn, t("mlm.char_bert.how_blanks_count")])
    if link:
        filled += sampling.result_link("mlm", FILL_PRESETS, link, SEED_INPUT)
    columns = [(t("mlm.char_bert.position", blank=m.blank + 1, n=m.offset + 1),
                [(shown(c.char), c.probability) for c in m.candidates]) for m in result.masked]
    first_pass = {m.position: m.candidates[0].char for m in result.masked}
    rows = []
    for s in result.steps:  # the columns every generating tab's steps table has, after the char-BERT's own
        n, char, *draw = sampling.step_row(s.step, shown(s.char), s.draw, shown)
        rows.append([n, s.blank + 1, s.offset + 1, char, sig4(s.probability), shown(first_pass[s.position]), *draw])
    steps = table(rows, "sampling.step_col_0", "mlm.col_blank", "mlm.char_bert.col_char", "sampling.step_col_1",
                  "sampling.col_2", "mlm.char_bert.col_independent",
                  *(f"sampling.step_col_{i}" for i in range(2, sampling.STEP_COLUMNS)))
    figure = candidates_figure(columns, t("mlm.char_bert.fig_title", k=len(result.masked[0].candidates)))
    next_char = sampling.figure(first.draw.cut, shown, "mlm.char_bert.fig_first_step", blank=first.blank + 1,
                                n=first.offset + 1)
    return notice(stands_in_for, result.note), filled, figure, steps, plot_shown(next_char), results_visible(True)


def compare(text: str, top_k, stands_in_for: str | None = None) -> tuple:
    """→ notice, the three readers' words, char-BERT both sides, char-GPT left only, the results' column. Both
    figures are the blank's first character: the one distribution the two models both give."""
    result = sides.compare_as_written(text, top_k)
    both, left_only, gpt = result.both, result.left_only, result.gpt

    def first(candidates) -> str:
        return f"{shown(candidates[0].char)} ({candidates[0].probability:.3f})"

    summary = t("mlm.char_bert.compare_table", chars=result.blank_chars,
                both=both.blanks[0].iterative, both_first=first(both.masked[0].candidates),
                gpt=gpt.word, gpt_first=first(gpt.first),
                left=left_only.blanks[0].iterative, left_first=first(left_only.masked[0].candidates))
    both_fig = candidates_figure([("", [(shown(c.char), c.probability) for c in both.masked[0].candidates])],
                                 t("mlm.char_bert.both_title"))
    gpt_fig = candidates_figure([("", [(shown(c.char), c.probability) for c in gpt.first])],
                                t("mlm.char_bert.gpt_title"))
    return notice(stands_in_for, result.note), summary, both_fig, gpt_fig, results_visible(True)


def card() -> tuple:
    """→ table, explanation: the char-BERT's parameters counted from its weights, by part (the tied decoder once)."""
    loaded = char_bert.shipped_char_bert()
    counts: dict[str, int] = {}
    for name, parameter in loaded.model.named_parameters():  # a tied parameter is listed once
        parts = name.split(".")
        if parts[:2] == ["bert", "embeddings"]:
            part = t("mlm.char_bert.part_embeddings")
        elif parts[:3] == ["bert", "encoder", "layer"]:
            part = t("mlm.char_bert.part_layer", n=int(parts[3]) + 1)
        else:
            part = t("mlm.char_bert.part_head")
        counts[part] = counts.get(part, 0) + parameter.numel()
    total = sum(counts.values())
    rows = [[part, f"{count:,}"] for part, count in counts.items()] + [[t("mlm.char_bert.part_total"), f"{total:,}"]]
    config = loaded.model.config
    text = t("mlm.char_bert.card_text", layers=config.num_hidden_layers, hidden=config.hidden_size,
             heads=config.num_attention_heads, ffn=config.intermediate_size, vocab=len(loaded.tokenizer),
             positions=config.max_position_embeddings, total=f"{total:,}")
    return table(rows, "mlm.col_part", "mlm.col_parameters"), text
