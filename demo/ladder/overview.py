"""Overview tab (issue #17): the history as a timeline, and the ladder: one text through every character model.

Names: the tab is "Overview" (this module, api_names ``overview_*``, tests/ladder/test_overview_demo.py); what it computes
is the ladder, in core/ladder/ladder.py (tests/ladder/test_ladder.py), as docs/ARCHITECTURE.md lists it. Its strings are the overview section
of assets/i18n; the ladder's presets, first open and deep links (``?tab=overview&preset=closing-quote``) are
demo/kit/presets.py's.
"""
from __future__ import annotations

import re

import gradio as gr
import numpy as np
import pandas as pd

from core.ladder import heldout as ladder_heldout
from core.loading.lazy import lazy_import
from core.loading.paths import ASSETS_DIR
from core.text.limits import MAX_SHORT_TEXT_CHARS
from demo.kit import lessons, presets, static_html, tour
from demo.server import result_cache
from demo.server.handlers import friendly_errors, gpu_handler
from demo.kit.widgets import sig4
from demo.kit.figures import PLOTLY_PRELOAD_JS, bar, heatmap
from demo.kit.i18n import LANGUAGES, PerLanguage, label, t, using_language
from demo.kit.scripts import script

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
ladder = lazy_import("core.ladder.ladder")

TITLE = "Overview"
LINK = "?tab={tab}&preset={preset}"  # deep links, read by demo/kit/presets.py's Registry (tests check every target exists)


def link(tab: str, preset: str | None) -> str:
    """A deep link to a tab, and to one of its presets when the tab registers presets (demo/kit/presets.py)."""
    return LINK.format(tab=tab, preset=preset) if preset else f"?tab={tab}"


# The timeline is read from the tabs themselves: a tab's demo module may declare HISTORY, its steps as
# (place, when, name, key of what it brought, preset). Steps are shown by place, the lessons' order (the seed's):
# recurrent networks are older than word2vec, but recurrent language models and ELMo came after the fixed-window
# NNLM; the pre-trained models of 2018 (ELMo, GPT, BERT) share the last place and one point of the timeline.


def milestones(tabs) -> list[tuple[str, str, str, str, str | None]]:
    """Every step of the tabs' HISTORY, as (when, name, what, tab, preset), by place (then in the tabs' order)."""
    steps = [(place, number, when, name, what, module.__name__.rsplit(".", 1)[-1], preset)
             for number, module in enumerate(tabs)
             for place, when, name, what, preset in getattr(module, "HISTORY", [])]
    return [step[2:] for step in sorted(steps, key=lambda step: step[:2])]


def timeline(tabs) -> list[tuple[str, str, str, str, str | None]]:
    """One point per date: steps of the same date (2018) share it, named together and linked to the last."""
    points: list[tuple] = []
    for when, name, what, tab, preset in milestones(tabs):
        if points and points[-1][0] == when:
            points[-1] = (when, f"{points[-1][1]} / {name}", points[-1][2], tab, preset)
        else:
            points.append((when, name, what, tab, preset))
    return points

# (slug, text): each preset shows where some rung fails; its label and what to look at are keys
# overview.preset.<slug> and overview.look.<slug>. The texts stay English: every rung was trained on Moby-Dick.
LADDER_TEXTS = [
    ("call-me-ishmael", "Call me Ishmael. Some years ago—never mind how long precisely—having little or no money in "
     "my purse, and nothing particular to interest me on shore, I thought I would sail about a little."),
    ("closing-quote", '"If the whale comes up on the lee side, and the boats are all down, and the mate is still '
     'below with the harpoons and the lines and the lances," said Stubb, "we are lost."'),
    ("unknown-word", "The submarine surfaced beside the Pequod, and the sonar operator radioed the helicopter that "
     "the whales were heading north."),
    ("name-repeated", "Mr. Zorbanowski came aboard at dawn with a sea-chest and a harpoon of his own. The crew "
     "watched him in silence all that day, and nobody spoke to Mr. Zorbanowski."),
]
DEFAULT_TEXT = LADDER_TEXTS[0][1]
STRIP_CAP_BITS = 12  # cells above this share the top colour (an unknown character costs 15-25 bits)


def _key(slug: str) -> str:
    return slug.replace("-", "_")


def look_note(slug: str):
    """What to look at in a preset, as Markdown the browser shows in the learner's language."""
    return label(f"overview.look.{_key(slug)}")


PRESETS = [presets.Preset(slug, label(f"overview.preset.{_key(slug)}"), (text, look_note(slug)), "§all")
           for slug, text in LADDER_TEXTS]


# ----------------------------------------------------------------------------------------------------------------
# The path: the timeline and the held-out ladder. Both are the same for every learner, so they are drawn into the page
# when the app is built, in every language (demo/kit/static_html.py): the page shows them as soon as it mounts, with no
# request and no plotly.js (benchmarks/first_paint_results.md, run 8).


def timeline_links(tabs) -> str:
    links = [f"[{name}]({link(tab, preset)})" for _, name, _, tab, preset in milestones(tabs)]
    return t("overview.open_step", links=" · ".join(links))


def _tab_link(rung_tab: str) -> str:
    tab = rung_tab.split("tab=")[1].split("&")[0]
    return t("overview.tab_link", tab=t(f"tabs.{tab}"), link=rung_tab)


def _duration(seconds: float) -> str:
    return t("overview.seconds", value=f"{seconds:.1f}") if seconds < 120 else t("overview.minutes",
                                                                                   value=f"{seconds / 60:.0f}")


_STEPS = re.compile(r"\): ([\d,]+) steps × (\d+) windows × (\d+) characters = ([\d.]+M) characters read$")


def _training_data(row: ladder_heldout.HeldOutRow, training_chars: int) -> str:
    """The held-out file's English description of a rung's training data, in the learner's language."""
    chars = f"{training_chars:,}"
    steps = _STEPS.search(row.training_data)
    if steps:
        return t("overview.data_steps", chars=chars, steps=steps[1], windows=steps[2], length=steps[3],
                 total=steps[4])
    return t("overview.data_counted", chars=chars) if row.training_data.endswith("counted once") else row.training_data


def held_out_headers() -> list[str]:
    return [t(f"overview.col.{name}") for name in ("model", "bits", "bits_byte", "perplexity", "tokenizer",
                                                   "parameters", "training", "data", "scored_by", "tab")]


def text_headers() -> list[str]:
    return [t(f"overview.col.{name}") for name in ("model", "total", "bits", "bits_byte", "unknown", "tokenizer",
                                                   "scored_by", "tab")]


def tokenizer_name(kind: str, size: int) -> str:
    """What a rung reads, in the learner's language ("characters (76 + an unknown slot)")."""
    return t(f"overview.tokenizer_{kind}", size=size)


def char_gpt_protocols() -> str:
    """The char-GPT's two held-out figures side by side: this ladder's (one stream) and the GPT tab's (windows)."""
    scores = ladder_heldout.char_gpt_scores()
    return t("overview.held_out_protocols", context=scores.context, stream=f"{scores.stream_bits:.3f}",
             windows=scores.windows, length=scores.length, nats=f"{scores.window_nats:.3f}",
             bits=f"{scores.window_bits:.3f}", covered=f"{scores.windows * scores.length:,}")


def masked_lm_apart() -> str:
    """Why the char-BERT is not a rung: its bits per masked character beside the char-GPT's, and what they are not."""
    rows = ladder_heldout.char_bert_rows()
    both, left = rows["char-BERT, both sides"], rows["char-GPT, left only"]
    return t("overview.masked_lm_apart", positions=f"{rows['positions']:,}", both=f"{both['bits_per_char']:.4g}",
             both_accuracy=f"{both['accuracy']:.2%}", left=f"{left['bits_per_char']:.4g}",
             left_accuracy=f"{left['accuracy']:.2%}")


def held_out_ladder():
    """The held-out ladder, as scripts/ladder_heldout.py computed it: (note, headers, rows, names, bits/char, best)."""
    facts, rows = ladder_heldout.load_held_out()
    note = t("overview.held_out_note", held=f"{facts['held_out_chars']:,}", train=f"{facts['training_chars']:,}",
             date=facts["date"])
    names = [ladder_heldout.describe(row.key)[0] for row in rows]
    table = [[name, f"{row.bits_per_char:.3f}", f"{row.bits_per_byte:.3f}", f"{row.perplexity:.2f}",
              tokenizer_name(row.tokenizer, row.vocabulary),
              f"{row.parameters:,} " + t("overview.kind_counts" if row.parameters_kind == "stored counts"
                                         else "overview.kind_weights"),
              _duration(row.training_seconds), _training_data(row, facts["training_chars"]),
              ladder_heldout.describe(row.key)[1],
              _tab_link(ladder_heldout.TAB_LINKS.get(row.family, row.tab))] for name, row in zip(names, rows)]
    values = [row.bits_per_char for row in rows]
    best = int(np.argmin(values))
    if rows[best].family == "n-gram":  # say why, rather than let the chart look like a contradiction of the intro
        note += "\n\n" + t("overview.held_out_ngram_best", best=names[best], stored=f"{rows[best].parameters:,}",
                           smallest=f"{min(row.parameters for row in rows if row.family != 'n-gram'):,}",
                           largest=f"{max(row.parameters for row in rows if row.family != 'n-gram'):,}")
    if any(row.key == "gpt" for row in rows):
        note += "\n\n" + char_gpt_protocols()
    note += "\n\n" + masked_lm_apart()
    note += "\n\n" + t("overview.bytes_note", chars=f"{rows[0].characters:,}", bytes=f"{rows[0].bytes:,}",
                        ratio=f"{rows[0].characters / rows[0].bytes:.4f}")
    return note, held_out_headers(), table, names, values, best


def path_html(lang: str, tabs) -> str:
    """The path sub-tab in ``lang``: the timeline of ``tabs`` (the app's demo modules; names link to their tabs), the
    step links, then the held-out ladder's note, bar chart and table."""
    with using_language(lang):
        steps = [(when, name, t(f"overview.brought.{what}"), link(tab, preset))
                 for when, name, what, tab, preset in timeline(tabs)]
        note, headers, rows, names, values, best = held_out_ladder()
        return "".join([
            static_html.markdown(t("tour.overview_start", n=len(tour.STOPS))),
            static_html.timeline(steps, t("overview.fig_timeline"), "overview-timeline", lang),
            static_html.markdown(timeline_links(tabs)),
            static_html.markdown(t("overview.held_title")),
            static_html.markdown(note),
            static_html.bars(names, values, t("overview.fig_held_out"), "overview-held-out-bits", lang,
                             value_title=t("overview.axis_bits_per_char"),
                             highlight=[i == best for i in range(len(values))]),
            static_html.table(headers, rows, "overview-held-out", lang, markdown_columns=[len(headers) - 1]),
        ])


def first_page(lang: str, tabs) -> str:
    """The first page's text in ``lang``: the app's header, the Overview's words and its path (the sub-tab the page
    opens on), as the page's own HTML. demo/server/first_page.py puts it into the page, before Gradio's app: on a
    school's wifi it is readable while Gradio's front end (about 370 KB, then 3 s of drawing) is still on its way,
    and assets/first_page.js takes it away once the app has drawn its tab bar."""
    with using_language(lang):
        words = static_html.markdown(t("app.intro")) + static_html.markdown(t("overview.intro"))
        note = f'<p class="plm-first-note" role="status">{static_html.markdown_inline(t("app.first_page_note"))}</p>'
    return (f'<div id="plm-first-page" lang="{"zh-CN" if lang == "zh" else "en"}"><style>{FIRST_PAGE_CSS}</style>'
            f'{words}{note}{path_html(lang, tabs)}<script>{script("first_page")}</script></div>')


FIRST_PAGE_CSS = re.sub(r"/\*.*?\*/\s*", "", (ASSETS_DIR / "first_page.css").read_text(encoding="utf-8"), flags=re.S)


# ----------------------------------------------------------------------------------------------------------------
# The ladder on the learner's text (computed when its sub-tab opens, or on a click)


def _shown(ch: str) -> str:
    return "␣" if ch == " " else ch


def ladder_view(result: ladder.LadderScore):
    """Summary, surprisal strip (rows = models, one cell per character), total bits, and the per-model table."""
    described = [ladder.describe(score.rung.key) for score in result.scores]
    names = [name for name, _ in described]
    strip = np.full((len(result.scores), len(result.text)), np.nan)  # the first character is context only
    for row, score in enumerate(result.scores):
        strip[row, 1:] = score.bits
    strip_figure = heatmap(np.minimum(strip, STRIP_CAP_BITS), [_shown(ch) for ch in result.text], names,
                           t("overview.fig_strip"), zmin=0, zmax=STRIP_CAP_BITS, x_title=t("overview.axis_character"),
                           y_title=t("overview.axis_model"), annotate=False, value_format=".1f",
                           height=140 + 30 * len(names))
    # Characters read upright, every one of them while they fit (hover names each cell in any case).
    every = len(result.text) <= 200
    strip_figure.update_xaxes(tickangle=0, dtick=1 if every else None,
                              tickfont=dict(size=12 if len(result.text) <= 100 else 9) if every else None)
    totals = [score.total_bits for score in result.scores]
    best = int(np.argmin(totals))
    totals_figure = bar(names, totals, t("overview.fig_totals"), value_title=t("overview.axis_bits"),
                        highlight=[i == best for i in range(len(names))], value_format=".1f")
    table = pd.DataFrame(
        [[name, sig4(score.total_bits), sig4(score.bits_per_char), sig4(score.bits_per_byte),
          ", ".join(t("overview.unknown_cell", ch=ch, position=i + 1, bits=f"{bits:.1f}")
                    for i, ch, bits in score.unknown) or t("overview.none"),
          tokenizer_name(score.rung.tokenizer, len(score.rung.vocabulary)), equation, _tab_link(score.rung.tab)]
         for (name, equation), score in zip(described, result.scores)],
        columns=text_headers())
    unknown = {}
    for score in result.scores:
        if score.unknown_chars:
            unknown.setdefault(", ".join(f"'{ch}'" for ch in score.unknown_chars), []).append(score.rung.family)
    summary = t("overview.ladder_summary", count=len(result.text), best=names[best], bits=f"{totals[best]:.1f}")
    scored = result.scores[0]
    summary += "\n\n" + t("overview.bytes_text", chars=f"{len(scored.bits):,}", bytes=f"{scored.scored_bytes:,}",
                           ratio=f"{len(scored.bits) / scored.scored_bytes:.4g}")
    for chars, families in unknown.items():
        summary += "\n\n" + t("overview.unknown_summary", families=" / ".join(dict.fromkeys(families)), chars=chars)
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
def run_ladder(text: str, note=None):
    """A preset's view: its text through every rung (``note``, what to look at, is shown as the preset set it)."""
    return ladder_view(ladder.score_text(text))


def build() -> None:
    tabs = presets.app_tabs()  # the timeline's steps come from the app's tabs (app.TABS)
    gr.Markdown(label("overview.intro"))
    lesson_slot = gr.Column()  # the whole path's lesson, above both sub-tabs

    with gr.Tabs(overflow_behavior="wrap"):
        # Two sub-tabs, one screen each. The page opens on the path, drawn into the page when the app is built (see
        # path_html): it shows as soon as Gradio mounts the tab. The ladder runs its models when its sub-tab opens.
        with gr.Tab(label("overview.tab_path"), id="path"):
            # Once it is on screen, the browser loads plotly.js for the tabs that plot (figures.PLOTLY_PRELOAD_JS).
            gr.HTML("", html_template=static_html.TEMPLATE, js_on_load=static_html.EXPORT_JS + PLOTLY_PRELOAD_JS,
                    elem_classes=["static-view"], html=PerLanguage({lang: path_html(lang, tabs) for lang in LANGUAGES}))

        with gr.Tab(label("overview.tab_ladder"), id="ladder") as ladder_tab:
            gr.Markdown(label("overview.text_title"))
            with gr.Row():
                text = gr.Textbox(value=DEFAULT_TEXT, label=label("overview.text"), lines=3, scale=4,
                                  max_length=MAX_SHORT_TEXT_CHARS)
                score_button = gr.Button(label("overview.score_btn"), variant="primary", scale=1)
            preset_bar = gr.Column()
            preset_note = gr.Markdown()
            summary = gr.Markdown()
            strip_plot = gr.Plot(show_label=False)
            totals_plot = gr.Plot(show_label=False)
            text_table = gr.Dataframe(interactive=False, wrap=True, max_height=900,
                                      datatype=["str", "number", "number", "number", "str", "str", "str",
                                                "markdown"])
            ladder_outputs = [summary, strip_plot, totals_plot, text_table]
            view = presets.View("overview", "ladder", [text, preset_note], ladder_outputs, run_ladder, PRESETS,
                                where=ladder_tab)
            with preset_bar:
                view.buttons()
            score = result_cache.cached(score_text, "overview_score", {})  # the button and Enter: one answer
            score_button.click(score, text, ladder_outputs, api_name="overview_score")
            text.submit(score, text, ladder_outputs, api_name="overview_score_submit", api_visibility="undocumented")

    with lesson_slot:
        lessons.lesson_table(LESSON, view)


# The whole path, in the seed's order: each step opens the Overview's ladder on a text that shows why the next
# model was needed. (seed §, question key, answer key, preset)
LESSON = [("§2.1", label("overview.lesson.q1"), label("overview.lesson.a1"), "unknown-word"),
          ("§6", label("overview.lesson.q2"), label("overview.lesson.a2"), "closing-quote"),
          ("§8–§12", label("overview.lesson.q3"), label("overview.lesson.a3"), "name-repeated")]
