"""Overview tab (issue #17): the history as a timeline, and the ladder: one text through every character model.

Names: the tab is "Overview" (this module, api_names ``overview_*``, tests/test_overview_demo.py); what it computes
is the ladder, in core/ladder.py (tests/test_ladder.py), as DESIGN.md lists it.
"""
from __future__ import annotations

import gradio as gr
import numpy as np

from core import ladder
from demo.common import friendly_errors, gpu_handler
from demo.figures import bar, empty_figure, heatmap, timeline

TITLE = "Overview"
LINK = "?tab={tab}&preset={preset}"  # deep links, read by demo/presets.py's Registry (tests check every target exists)


def link(tab: str, preset: str | None) -> str:
    """A deep link to a tab, and to one of its presets when the tab registers presets (demo/presets.py)."""
    return LINK.format(tab=tab, preset=preset) if preset else f"?tab={tab}"

INTRO = """
### From counting to BERT, on one screen
A language model gives every possible next piece of text a probability. Each model in this app did that a little
better than the one before, by fixing one thing its predecessor could not do: **counts go sparse** (n-grams), **fixed
windows forget** (the neural n-gram), **recurrences vanish** (RNN → LSTM), and **attention sees the whole text at
once** (Transformer, GPT, BERT). Follow the timeline from left to right; each step opens its tab.
"""

# (when, name, what it brought, tab, preset) in the lessons' order (the seed's): recurrent networks are older
# than word2vec, but recurrent language models and ELMo came after the fixed-window NNLM
TIMELINE = [
    ("§2.1 · 1948 → 1990s", "n-gram", "counts of the last n−1 words", "ngram", "p-cixing-de"),
    ("2003", "NNLM", "words as dense vectors, a fixed window", "embeddings", "nnlm-toy"),
    ("2013", "word2vec", "embeddings from context, fast", "embeddings", "king-queen"),
    ("LSTM 1997 · RNN LM 2010", "RNN / LSTM", "a memory of everything read, gated", "lstm", "forget-gate"),
    ("2014–15", "attention", "look back at every position", "attention", "thinking-machines"),
    ("2017", "Transformer", "attention only, all positions at once", "transformer", None),
    ("2018", "ELMo / GPT / BERT", "pre-train once, fine-tune for every task", "mlm", "my-dog-is"),
]
LATER_LINKS = [("ELMo", "lstm", "elmo-bank"), ("GPT", "transformer", None), ("BERT", "mlm", "my-dog-is")]

# (label, text, what to look at): each preset shows where some rung fails
PRESETS = [
    ("Call me Ishmael", "Call me Ishmael. Some years ago—never mind how long precisely—having little or no money in "
     "my purse, and nothing particular to interest me on shore, I thought I would sail about a little.",
     "The opening of the book (the models saw it in training). Common words are cheap for every rung; the 1-gram "
     "pays the same price for a letter wherever it stands."),
    ("A quote that closes far away", '"If the whale comes up on the lee side, and the boats are all down, and the '
     'mate is still below with the harpoons and the lines and the lances," said Stubb, "we are lost."',
     "Look at the closing quote after “lances,”: its opening quote is 120 characters back, far outside any "
     "n-gram's window, so the n-grams can only guess it from the comma before it; a model that carries a memory "
     "(compare the LSTM's cell) can expect it."),
    ("A word the n-gram never saw", "The submarine surfaced beside the Pequod, and the sonar operator radioed the "
     "helicopter that the whales were heading north.",
     "submarine, sonar, radioed, helicopter never occur in Moby-Dick. Inside them the 5-gram's contexts were never "
     "counted, so it backs off to shorter ones (Kneser-Ney) or spreads tiny counts (add-one); the neural models "
     "spell by analogy with words they did see. Hover over the cells of “helicopter”."),
    ("A name repeated far back", "Mr. Zorbanowski came aboard at dawn with a sea-chest and a harpoon of his own. "
     "The crew watched him in silence all that day, and nobody spoke to Mr. Zorbanowski.",
     "An invented name, twice. The second Zorbanowski is about 100 characters after the first: an n-gram cannot "
     "look that far back, so it pays exactly the same for both; a model that remembers, or attends to, the first "
     "one can pay less the second time."),
]
DEFAULT_TEXT = PRESETS[0][1]
STRIP_CAP_BITS = 12  # cells above this share the top colour (an unknown character costs 15-25 bits)

HELD_OUT_HEADERS = ["model", "bits/char", "perplexity", "parameters", "training (CPU)", "training data",
                    "scored by", "tab"]
TEXT_HEADERS = ["model", "total bits", "bits/char", "outside its vocabulary (scored as <unk>)", "scored by", "tab"]


# ----------------------------------------------------------------------------------------------------------------
# Views


def timeline_figure():
    steps = [(when, name, what, link(tab, preset)) for when, name, what, tab, preset in TIMELINE]
    return timeline(steps, "How language models got better at predicting text")


def timeline_links() -> str:
    links = [f"[{name}]({link(tab, preset)})" for _, name, _, tab, preset in TIMELINE[:-1]]
    links += [f"[{name}]({link(tab, preset)})" for name, tab, preset in LATER_LINKS]
    return "**Open a step:** " + " · ".join(links)


def _tab_link(rung_tab: str) -> str:
    tab = rung_tab.split("tab=")[1].split("&")[0]
    return f"[{tab} tab]({rung_tab})"


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def held_out_view():
    """The held-out ladder, as the script computed it: note, table, bar chart."""
    facts, rows = ladder.load_held_out()
    note = ("**The ladder on held-out text.** Every model predicts the last {held:,} characters of Moby-Dick, which "
            "none of them saw in training ({train:,} characters before them). Bits per character is the average "
            "−log₂ P of the character that really came; perplexity 2^bits is how many equally likely characters "
            "that is worth. Computed by `scripts/ladder_heldout.py` on {date}; `tests/test_ladder.py` recomputes "
            "it.").format(held=facts["held_out_chars"], train=facts["training_chars"], date=facts["date"])
    table = [[row.name, round(row.bits_per_char, 3), round(row.perplexity, 2),
              f"{row.parameters:,} {row.parameters_kind}", _duration(row.training_seconds), row.training_data,
              row.equation, _tab_link(row.tab)] for row in rows]
    values = [row.bits_per_char for row in rows]
    best = int(np.argmin(values))
    if rows[best].family == "n-gram":  # say why, rather than let the chart look like a contradiction of the intro
        note += ("\n\nHere the best score is a counting model's: **{best}** stores {stored:,} counts of the book's "
                 "letter sequences, while the shipped neural models are small ({smallest:,}–{largest:,} weights) and "
                 "trained for minutes on one CPU core. On next-character loss, local spelling dominates; what memory "
                 "buys shows up in the strips below, at a quote that closes or a name that comes back.").format(
            best=rows[best].name, stored=rows[best].parameters,
            smallest=min(row.parameters for row in rows if row.family != "n-gram"),
            largest=max(row.parameters for row in rows if row.family != "n-gram"))
    figure = bar([row.name for row in rows], values, "Held-out Moby-Dick: bits per character (lower is better)",
                 value_title="bits per character", highlight=[i == best for i in range(len(rows))])
    return note, table, figure


def _shown(ch: str) -> str:
    return "␣" if ch == " " else ch


def ladder_view(result: ladder.LadderScore):
    """Summary, surprisal strip (rows = models, one cell per character), total bits, and the per-model table."""
    names = [score.rung.name for score in result.scores]
    strip = np.full((len(result.scores), len(result.text)), np.nan)  # the first character is context only
    for row, score in enumerate(result.scores):
        strip[row, 1:] = score.bits
    strip_figure = heatmap(np.minimum(strip, STRIP_CAP_BITS), [_shown(ch) for ch in result.text], names,
                           "Surprisal of each character, −log₂ P in bits (bright: the model did not expect it)",
                           zmin=0, zmax=STRIP_CAP_BITS, x_title="character", y_title="model", annotate=False,
                           value_format=".1f", height=140 + 30 * len(names))
    # Characters read upright, every one of them while they fit (hover names each cell in any case).
    every = len(result.text) <= 200
    strip_figure.update_xaxes(tickangle=0, dtick=1 if every else None,
                              tickfont=dict(size=12 if len(result.text) <= 100 else 9) if every else None)
    totals = [score.total_bits for score in result.scores]
    best = int(np.argmin(totals))
    totals_figure = bar(names, totals, "Total bits for your text (lower: predicted better)", value_title="bits",
                        highlight=[i == best for i in range(len(names))], value_format=".1f")
    table = [[score.rung.name, round(score.total_bits, 2), round(score.bits_per_char, 3),
              ", ".join(f"'{ch}' (character {i + 1}): {bits:.1f} bits" for i, ch, bits in score.unknown) or "none",
              score.rung.equation, _tab_link(score.rung.tab)] for score in result.scores]
    unknown = {}
    for score in result.scores:
        if score.unknown_chars:
            unknown.setdefault(", ".join(f"'{ch}'" for ch in score.unknown_chars), []).append(score.rung.family)
    summary = ("**{count} characters**, each predicted from the ones before it (the first is context only). "
               "Lowest total: **{best}** with {bits:.1f} bits.").format(count=len(result.text), best=names[best],
                                                                        bits=totals[best])
    for chars, families in unknown.items():
        summary += "\n\n⚠️ Never seen in training by the {families} models, scored as their `<unk>` (cost in the " \
                   "table): {chars}.".format(families=" / ".join(dict.fromkeys(families)), chars=chars)
    return summary, strip_figure, totals_figure, table


# ----------------------------------------------------------------------------------------------------------------
# Handlers


@friendly_errors
@gpu_handler
def score_text(text: str):
    """The learner's text through every rung."""
    return ladder_view(ladder.score_text(text))


@friendly_errors
@gpu_handler
def run_preset(label: str):
    """One of PRESETS by its label: the text, what to look at, and the ladder on it."""
    for name, text, note in PRESETS:
        if name == label:
            return (text, f"**What to look at.** {note}", *ladder_view(ladder.score_text(text)))
    raise gr.Error(f"Pick one of the presets: {', '.join(name for name, _, _ in PRESETS)}.", print_exception=False)


@friendly_errors
def first_open():
    """What the tab shows as soon as the app opens (no model needed): the timeline and the held-out ladder."""
    return (timeline_figure(), *held_out_view())


@friendly_errors
def first_ladder():  # run_preset carries gpu_handler (no nested GPU calls)
    """The first preset through every rung, on opening (the first call loads the models: a few seconds)."""
    return run_preset(PRESETS[0][0])


def build() -> None:
    gr.Markdown(INTRO)
    timeline_plot = gr.Plot(empty_figure("The timeline appears when the page has loaded."), show_label=False)
    gr.Markdown(timeline_links())

    gr.Markdown("### 1 · Every model on the same held-out text")
    held_note = gr.Markdown()
    held_plot = gr.Plot(empty_figure("The held-out ladder appears when the page has loaded."), show_label=False)
    held_table = gr.Dataframe(headers=HELD_OUT_HEADERS, interactive=False, wrap=True, max_height=900,
                              datatype=["str", "number", "number", "str", "str", "str", "str", "markdown"])

    gr.Markdown(f"### 2 · Every model on your text\nType up to {ladder.MAX_CHARS} characters, or pick a preset: "
                "each is chosen to show where one kind of model fails.")
    with gr.Row():
        text = gr.Textbox(value=DEFAULT_TEXT, label=f"Text (up to {ladder.MAX_CHARS} characters)", lines=3, scale=4)
        with gr.Column(scale=1, min_width=240):
            preset = gr.Radio([name for name, _, _ in PRESETS], value=PRESETS[0][0], label="Presets")
            score_button = gr.Button("Score with every model", variant="primary")
    preset_note = gr.Markdown()
    summary = gr.Markdown()
    strip_plot = gr.Plot(empty_figure("The surprisal strip appears when the page has loaded."), show_label=False)
    totals_plot = gr.Plot(empty_figure("Total bits per model appear here."), show_label=False)
    text_table = gr.Dataframe(headers=TEXT_HEADERS, interactive=False, wrap=True, max_height=900,
                              datatype=["str", "number", "number", "str", "str", "markdown"])

    ladder_outputs = [summary, strip_plot, totals_plot, text_table]
    gr.on(None, first_open, None, [timeline_plot, held_note, held_table, held_plot], api_name="overview_open")
    gr.on(None, first_ladder, None, [text, preset_note, *ladder_outputs], api_name="overview_open_ladder")
    preset.input(run_preset, preset, [text, preset_note, *ladder_outputs], api_name="overview_preset")
    score_button.click(score_text, text, ladder_outputs, api_name="overview_score")
    text.submit(score_text, text, ladder_outputs, api_name="overview_score_submit", api_visibility="undocumented")
