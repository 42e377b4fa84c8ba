"""The char-BERT in the BERT masked LM tab: "Fill in the blank" and "Both sides vs left only" on the masked LM this
repository trained (core/mlm_char.py), chosen in the picker as "char-bert" or standing in for a Hub checkpoint that is
not on this machine.

A word blank is as long as it is written ("_____" five characters, "[MASK][MASK]" two): one [MASK] per character.
The fill view shows the top-k at every masked character (the first pass, everything still masked), the whole word
filled iteratively (the most confident position first, the model run again after each) and beside it each
position's own argmax. Every string is a key of the ``mlm.char_bert`` section of assets/i18n/*.yaml.
"""
from __future__ import annotations

from core.checkpoints import CHAR_BERT_ID
from core.lazy import lazy_import
from demo.common import sig4
from demo.downloads import results_visible
from demo.i18n import t
from demo.mlm_figures import candidates_figure, table

char_bert = lazy_import("core.mlm_char")  # torch-backed: loaded on first use (core/lazy.py)
sides = lazy_import("core.mlm_char_compare")
held_out = lazy_import("core.mlm_char_heldout")


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


def fill(text: str, top_k, stands_in_for: str | None = None) -> tuple:
    """→ notice, filled text, top-k per masked character, the iterative fill's steps, the results' column."""
    result = char_bert.fill_as_written(text, top_k)
    words = [t("mlm.char_bert.blank_words", n=b + 1, iterative=blank.iterative, independent=blank.independent,
               order=" → ".join(str(offset + 1) for offset in blank.order)) for b, blank in enumerate(result.blanks)]
    filled = "\n\n".join([t("mlm.char_bert.filled", iterative=result.iterative, independent=result.independent),
                          *words, t("mlm.char_bert.how_blanks_count")])
    columns = [(t("mlm.char_bert.position", blank=m.blank + 1, n=m.offset + 1),
                [(shown(c.char), c.probability) for c in m.candidates]) for m in result.masked]
    first_pass = {m.position: m.candidates[0].char for m in result.masked}
    rows = [[s.step, s.blank + 1, s.offset + 1, shown(s.char), sig4(s.probability), shown(first_pass[s.position])]
            for s in result.steps]
    steps = table(rows, "mlm.char_bert.col_step", "mlm.col_blank", "mlm.char_bert.col_char",
                  "mlm.char_bert.col_written", "mlm.col_probability", "mlm.char_bert.col_independent")
    figure = candidates_figure(columns, t("mlm.char_bert.fig_title", k=len(result.masked[0].candidates)))
    return notice(stands_in_for, result.note), filled, figure, steps, results_visible(True)


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
