"""Transformer & GPT tab, "Tokenizer lab" sub-tab (issue #36): one text cut into characters, UTF-8 bytes,
WordPiece, GPT-2's byte-level BPE and a BPE learned in the tab, side by side; then that BPE's first merges, one at
a time, with the pair counts that chose them. core/transformer/tokenizer_lab.py and core/transformer/bpe.py compute; this module draws.

Why here: the lab explains what a model reads before its first layer, and the two tokenizers it compares are those
of the tab's two halves: the encoder's WordPiece (MiniLM-L6, the "Inside a block" view) and GPT-2's byte-level BPE
(the GPT views), with the char-GPT's characters beside them. The BERT tab shows WordPiece alone; here it meets BPE.
"""
from __future__ import annotations

import gradio as gr
import pandas as pd

from core.transformer import tokenizer_lab as lab  # torch-free until a tokenizer is asked of the registry
from core.text.limits import MAX_SHORT_TEXT_CHARS
from demo.kit import presets
from demo.server.handlers import friendly_errors, number_in_range
from demo.kit.widgets import TABLE_BUTTONS, sig4
from demo.server.downloads import missing_model_card, needs_download
from demo.kit.figures import bar
from demo.kit.token_figures import token_strips
from demo.kit.i18n import label, t

CORPORA = {"moby_dick": "ngram.corpus_moby", "tang_poems": "ngram.corpus_tang", "toy_zh": "ngram.corpus_toy"}
SHOWS = {"wordpiece_zh": "tokenizer_lab.shows_wordpiece_zh", "gpt2": "tokenizer_lab.shows_gpt2"}
FIGURE_BYTES = 64  # the strip figure draws the text's first bytes (readable labels); the table counts all of it
STATS_COLUMNS, MERGE_COLUMNS = 7, 6

# text, corpus, vocabulary size, merge step
EXAMPLES = [
    ["strawberries", "moby_dick", 1000, 1],
    ["我学中文", "tang_poems", 1000, 4],
    ["I am learning Chinese: 我学中文，从字开始。", "moby_dick", 1000, 1],
]
PRESETS = [presets.Preset(slug, label(f"tokenizer_lab.preset_{slug.replace('-', '_')}"), tuple(row), "§13")
           for slug, row in zip(("straw-berries", "wo-xue-zhongwen", "two-languages"), EXAMPLES)]


def _name(cut) -> str:
    return t(f"tokenizer_lab.name_{cut.key}", model=cut.model)


def _readable(symbol: str) -> str:
    """A byte-level symbol ("Ġt", "æĪ") as the learner reads it: "␣t", "�E6 88"."""
    to_byte = lab.byte_symbols()[1]
    return lab.shown_bytes(bytes(to_byte[c] for c in symbol))[0]


def stats_table(result) -> pd.DataFrame:
    rows = [[_name(cut), f"{cut.vocab_size:,}" if cut.vocab_size else "—", len(cut.pieces),
             sig4(cut.per_char(result.chars)), sig4(cut.chars_per_token(result.chars)), cut.fragments,
             sum(piece.unknown for piece in cut.pieces)] for cut in result.segmentations if cut.pieces is not None]
    return pd.DataFrame(rows, columns=[t(f"tokenizer_lab.col_stats_{i}") for i in range(STATS_COLUMNS)])


def strips_figure(result):
    rows = []
    for cut in result.segmentations:
        if cut.pieces is not None:
            rows.append((_name(cut), [(p.start, min(p.end, FIGURE_BYTES), p.shown,
                                       "fragment" if p.fragment else "unknown" if p.unknown else "")
                                      for p in cut.pieces if p.start < FIGURE_BYTES]))
    shown = t("tokenizer_lab.fig_first_bytes", count=FIGURE_BYTES) if result.bytes > FIGURE_BYTES else ""
    return token_strips(rows, t("tokenizer_lab.fig_strips", chars=result.chars, bytes=result.bytes, shown=shown),
                        x_title=t("tokenizer_lab.axis_bytes"))


def summary(result) -> str:
    trained = result.trained
    corpus = t(CORPORA[trained.corpus]) if trained.corpus in CORPORA else t("tokenizer_lab.your_corpus")
    lines = [t("tokenizer_lab.summary", chars=f"{result.chars:,}", bytes=f"{result.bytes:,}",
               ratio=f"{result.bytes / result.chars:.3g}"),
             t("tokenizer_lab.trained", corpus=corpus, size=f"{trained.corpus_bytes:,}",
               words=f"{trained.words:,}", vocab=f"{trained.vocab_size:,}", merges=f"{len(trained.merges):,}",
               trainer=trained.trainer, seconds=f"{trained.seconds:.2f}")]
    if trained.vocab_size < trained.asked:
        lines.append(t("tokenizer_lab.trained_short", vocab=f"{trained.vocab_size:,}", asked=f"{trained.asked:,}"))
    if trained.trainer == "tokenizers":
        lines.append(t("tokenizer_lab.trained_by_library", mb=f"{lab.OURS_MAX_BYTES / 1e6:.0f}"))
    fragments = [f"{_name(cut)} ({cut.fragments})" for cut in result.segmentations
                 if cut.pieces is not None and cut.fragments]
    if fragments:
        lines.append(t("tokenizer_lab.fragments_note", where=", ".join(fragments)))
    if any(ord(ch) > 0xFFFF or 0x300 <= ord(ch) < 0x370 or ch in "\u200d\ufe0f" for ch in result.text):
        lines.append(t("tokenizer_lab.code_points_note"))
    for cut in result.segmentations:
        if cut.missing is None:
            continue
        if not needs_download(cut.missing):
            lines.append("⚠️ " + str(cut.missing))
            continue
        # online, the registry says it downloads on the view's button; the lab never does (the tokenizer must be here)
        why = t("tokenizer_lab.why_not_cached") if cut.missing.key == "registry.not_downloaded" else cut.missing
        lines.append(missing_model_card(cut.model, SHOWS[cut.key], why))
    return "\n\n".join(lines)


def step_outputs(result, step: int):
    """Merge ``step`` (1-based): the pairs that competed, the text after the first ``step`` merges, all merges."""
    trained = result.trained
    if not trained.steps:
        return t("tokenizer_lab.no_merges"), None, pd.DataFrame()
    step = min(step, len(trained.steps))
    merge = trained.steps[step - 1]
    pairs = [f"{_readable(a)} + {_readable(b)}" for a, b, _ in merge.rivals]
    figure = bar(pairs, [n for *_, n in merge.rivals], t("tokenizer_lab.fig_merge", step=step,
                                                        left=_readable(merge.left), right=_readable(merge.right),
                                                        token=_readable(merge.token), count=f"{merge.count:,}"),
                 value_title=t("tokenizer_lab.axis_pair_count"), highlight=[i == 0 for i in range(len(pairs))],
                 value_format=",d")
    after = lab.from_byte_level(result.text, trained.encode(result.text, step))
    tokens = " ".join(f"`{p.shown.replace('`', 'ˋ')}`" for p in after[:120]) + (" …" if len(after) > 120 else "")
    note = t("tokenizer_lab.step_note", step=step, shown=len(trained.steps), left=_readable(merge.left),
             right=_readable(merge.right), token=_readable(merge.token), count=f"{merge.count:,}",
             tokens=len(after), text=tokens)
    rows = [[k, _readable(m.left), _readable(m.right), _readable(m.token), m.count, f"{m.left} {m.right}"]
            for k, m in enumerate(trained.steps, 1)]
    return note, figure, pd.DataFrame(rows, columns=[t(f"tokenizer_lab.col_merge_{i}") for i in range(MERGE_COLUMNS)])


# ----------------------------------------------------------------------------------------------------------------
# Handlers


def _run(text, corpus, vocab_size, upload, progress):
    vocab_size = int(number_in_range(vocab_size, t("tokenizer_lab.vocab_name"), lab.MIN_VOCAB, lab.MAX_VOCAB))
    return lab.cut(text, corpus, vocab_size, upload,
                   progress=(lambda fraction, message: progress(fraction, desc=message)) if progress else None)


@friendly_errors
def cut_text(text: str, corpus: str, vocab_size: float, step: float, upload: str | None = None,
             progress=gr.Progress()):
    """The text through every tokenizer, and the trained BPE's merge ``step``."""
    result = _run(text, corpus, vocab_size, upload, progress)
    step = int(number_in_range(step, t("tokenizer_lab.step_name"), 1, lab.STEPS_SHOWN))
    return summary(result), stats_table(result), strips_figure(result), *step_outputs(result, step)


@friendly_errors
def show_step(text: str, corpus: str, vocab_size: float, step: float, upload: str | None = None):
    """Another merge of the same training (cached: nothing is retrained)."""
    result = _run(text, corpus, vocab_size, upload, None)
    return step_outputs(result, int(number_in_range(step, t("tokenizer_lab.step_name"), 1, lab.STEPS_SHOWN)))


def run_preset(text: str, corpus: str, vocab_size: float, step: float):
    return cut_text(text, corpus, vocab_size, step, None)


# ----------------------------------------------------------------------------------------------------------------
# Layout


def build_tab() -> presets.View:
    """The sub-tab, built inside the Transformer & GPT tab's gr.Tabs."""
    with gr.Tab(label("tokenizer_lab.tab"), id="tokenizer-lab") as tab:
        gr.Markdown(label("tokenizer_lab.intro"))
        bar_slot = gr.Column()
        text = gr.Textbox(label=label("tokenizer_lab.text"), value=EXAMPLES[0][0], lines=2,
                          max_length=MAX_SHORT_TEXT_CHARS)
        with gr.Row():
            corpus = gr.Radio([(label(key), value) for value, key in CORPORA.items()], value=EXAMPLES[0][1],
                              label=label("tokenizer_lab.corpus"), info=label("tokenizer_lab.corpus_info"))
            upload = gr.File(file_types=[".txt"], type="filepath", label=label("tokenizer_lab.upload"))
            vocab_size = gr.Slider(lab.MIN_VOCAB, lab.MAX_VOCAB, value=EXAMPLES[0][2], step=10,
                                   label=label("tokenizer_lab.vocab"), info=label("tokenizer_lab.vocab_info"))
        button = gr.Button(label("tokenizer_lab.cut"), variant="primary")
        note = gr.Markdown()
        strips = gr.Plot(show_label=False)
        stats = gr.Dataframe(headers=[""] * STATS_COLUMNS, interactive=False, wrap=True, buttons=TABLE_BUTTONS,
                             max_height=420, label=label("tokenizer_lab.stats"))
        step = gr.Slider(1, lab.STEPS_SHOWN, value=EXAMPLES[0][3], step=1, label=label("tokenizer_lab.step"),
                         info=label("tokenizer_lab.step_info"))
        step_note = gr.Markdown()
        step_plot = gr.Plot(show_label=False)
        merges = gr.Dataframe(headers=[""] * MERGE_COLUMNS, interactive=False, max_height=420,
                              buttons=TABLE_BUTTONS, label=label("tokenizer_lab.merges"))
    inputs = [text, corpus, vocab_size, step]
    step_outputs_ = [step_note, step_plot, merges]
    outputs = [note, stats, strips, *step_outputs_]
    button.click(cut_text, [*inputs, upload], outputs, api_name="transformer_tokenizer_lab")
    step.release(show_step, [*inputs, upload], step_outputs_, api_name="transformer_tokenizer_lab_step")
    view = presets.View("transformer", "tokenizer_lab", inputs, outputs, run_preset, PRESETS, where=tab)
    with bar_slot:
        view.buttons()
    return view

