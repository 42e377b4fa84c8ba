"""The guided tour (issue #37): the seed's whole arc, from counting word pairs to the ladder, in 32 stops, each chapter's
ending with one of its "Your turn" checks (issue #51): 42 in all.

Each stop opens one preset of one view through the page's own link router (``window.plmOpenLink``, demo/kit/presets.py),
so the tab and sub-tab are selected and the preset's results computed exactly as a "Try this" step or a ``?tab=…``
link does; a check stop opens its check as a ``?check=<slug>`` link does (assets/your_turn.js). The tour then outlines the result the stop talks about (one of the view's outputs, tagged here with a
class when the app is built), scrolls it into view, and says in a few sentences what to look at, citing the seed §.

    STOPS = [Stop("counting", "counting", "ngram", "counts", "p-cixing-de", "§2.1", focus=(1,)), ...]
    box = tour.build()          # in the header: the "Start the tour" button; the panel is added by the browser
    tour.wire(box, collector)   # after the tabs: check every stop against the registry, tag what each outlines

The stops are plain data here and nowhere else; tests/kit/test_tour.py checks them against the built app (every tab,
sub-tab, preset and output exists; 20-30 stops; both languages; a § each), and tests/e2e/test_tour_browser.py walks
them in Chromium in both languages. Their words are the ``tour`` section of assets/i18n.

In the browser (TOUR_JS): ← / → and the Back / Next buttons move, Esc or ✕ leaves (the learner stays where the
tour left them), "Stop k of N" says where they are, ``localStorage["plm-tour"]`` remembers the stop, ``?tour=k`` links
to a stop, and every link to ``?tour=k`` in the page (the Overview's "Start the tour") starts it in place. On a phone
the panel is a sheet docked at the bottom that folds down to one line, and the page gets room below its last block so
the outlined result is never under it.
"""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from core import checks
from core.text.i18n import LANGUAGES, text
from demo.kit.i18n import BROWSER_LANGUAGE_JS, PerLanguage, in_every_language, label
from demo.kit.presets import Registry, enclosing_tab, preset_link
from demo.kit.scripts import script
from demo.kit.static_html import markdown_inline

# The seed's arc, in order, as issue #37 lists it: every stop belongs to one step, every step has a stop.
ARC = ["counting", "sparsity", "smoothing", "nnlm", "one-hot-vs-dense", "word2vec", "rnn", "vanishing-gradients",
       "lstm", "elmo", "attention-arithmetic", "multi-head", "positions", "block", "encoder-decoder", "gpt", "bert",
       "fine-tuning-and-tasks", "ladder"]


@dataclass(frozen=True)
class Stop:
    """One stop: its words (``tour.stop.<key>.title`` and ``.text``), the arc step it belongs to, where it goes
    (tab id, sub-tab id or None for a tab without sub-tabs, preset slug), the seed § it cites, and which of the
    preset's view's outputs it outlines: the first of ``focus`` that is on screen (offline, a view whose checkpoint
    is missing hides its results and shows a card; the input layout beside it is the next best thing)."""
    key: str
    topic: str
    tab: str
    sub: str | None
    preset: str
    section: str
    focus: tuple[int, ...] = (0,)
    check: str = ""  # a "Your turn" check's slug (issue #51): the stop opens that check in its tab, no preset

    @property
    def link(self) -> str:
        return f"?tab={self.tab}&check={self.check}" if self.check else preset_link(self.tab, self.preset)


STOPS = [
    Stop("counting", "counting", "ngram", "counts", "p-cixing-de", "§2.1", (1,)),
    Stop("zeros", "sparsity", "ngram", "counts", "p-cixing-de", "§2.1", (2,)),
    Stop("add_one", "smoothing", "ngram", "counts", "add-one", "§2.1", (1,)),
    Stop("smoothed_sentences", "smoothing", "ngram", "score", "cixing-vs-cixing", "§2.1", (4,)),
    Stop("nnlm", "nnlm", "embeddings", "nnlm", "nnlm-toy", "§2.2", (2,)),
    Stop("one_hot", "one-hot-vs-dense", "embeddings", "onehot", "one-hot-cosine", "§3.1", (1,)),
    Stop("lookup", "one-hot-vs-dense", "embeddings", "onehot", "one-hot-times-q", "§3.2", (0,)),
    Stop("analogy", "word2vec", "embeddings", "glove", "king-queen", "§4", (0,)),
    Stop("static_bank", "word2vec", "embeddings", "static", "static-bank", "§7", (1,)),
    Stop("rnn", "rnn", "lstm", "gates", "cell-state", "§6.1", (2,)),
    Stop("vanishing", "vanishing-gradients", "lstm", "gradients", "rnn-vs-lstm-gradients", "§6.2", (1,)),
    Stop("lstm", "lstm", "lstm", "gates", "forget-gate", "§6.3–§6.4", (1,)),
    Stop("elmo", "elmo", "lstm", "elmo-layers", "elmo-layers-bank", "§7.2", (1,)),
    Stop("thinking_machines", "attention-arithmetic", "attention", "steps", "thinking-machines", "§8.3", (0,)),
    Stop("causal_mask", "attention-arithmetic", "attention", "steps", "i-have-a-dream", "§8.5", (3,)),
    Stop("multi_head", "multi-head", "attention", "multihead", "multi-head-512", "§8.6", (2,)),
    Stop("real_heads", "multi-head", "attention", "model", "it-was-tired", "§8.6", (3,)),
    Stop("positional_encoding", "positions", "attention", "positions", "positional-encoding-512", "§9", (1,)),
    Stop("word_order", "positions", "attention", "positions", "word-order", "§9", (1,)),
    Stop("block", "block", "transformer", "block", "bank-two-contexts", "§10.2", (4,)),
    # issue #52: the encoder–decoder that translates, its decoder's mask and its cross-attention (§10.3–§11.2)
    Stop("encoder_decoder", "encoder-decoder", "transformer", "seq2seq", "je-suis-etudiant", "§10.3", (2,)),
    Stop("decoder_mask", "encoder-decoder", "transformer", "seq2seq-mask", "mask-experiment", "§11.1", (1,)),
    Stop("context_vector", "encoder-decoder", "transformer", "seq2seq-align", "c-vs-attention", "§11.2", (1,)),
    Stop("gpt", "gpt", "transformer", "gpt-next", "char-gpt-ishmael", "§12.1", (1,)),
    Stop("gpt_vs_bert", "bert", "transformer", "gpt-vs-bert", "gpt-vs-bert-ishmael", "§13.1", (1,)),
    Stop("bert_input", "bert", "mlm", "input", "bert-input", "§13.6", (1,)),
    Stop("masking", "bert", "mlm", "masking", "mlm-80-10-10", "§13.4", (2,)),
    Stop("fine_tuning", "fine-tuning-and-tasks", "classify", "classify-finetune", "before-fine-tuning", "§14.2",
         (1,)),
    Stop("sentence_pair", "fine-tuning-and-tasks", "classify", "classify-checkpoint", "wo-hen-xihuan-ni", "§14.1",
         (1, 4)),
    Stop("qa", "fine-tuning-and-tasks", "qa", None, "zuigao-wendu", "§14.3", (3, 10)),
    Stop("ner", "fine-tuning-and-tasks", "ner", "iobes", "einstein-iobes", "§14.4", (0,)),
    Stop("ladder", "ladder", "overview", "ladder", "closing-quote", "§15", (1,)),
]
# Each chapter's stops end with one of its "Your turn" checks (issue #51): the learner predicts, the model answers.
TOUR_CHECKS = {"ngram": "ngram-cixing", "embeddings": "embeddings-analogy", "lstm": "lstm-gradient",
               "attention": "attention-it", "transformer": "transformer-gpt-next", "mlm": "mlm-char-fill",
               "classify": "classify-class", "qa": "qa-start", "ner": "ner-bio", "overview": "overview-ladder-best"}


def with_checks(stops: list[Stop]) -> list[Stop]:
    """``stops`` with a check stop after the last stop of each chapter's run (the stop before it names the arc's
    step: a check revisits what its chapter showed)."""
    out: list[Stop] = []
    for number, stop in enumerate(stops):
        out.append(stop)
        ends_run = number + 1 == len(stops) or stops[number + 1].tab != stop.tab
        if ends_run and stop.tab in TOUR_CHECKS:
            check = checks.get(TOUR_CHECKS[stop.tab])
            out.append(Stop(f"check_{stop.tab}", stop.topic, stop.tab, None, "", f"§{check.section}",
                            check=check.slug))
    return out


STOPS = with_checks(STOPS)


def words(stop: Stop, lang: str) -> tuple[str, str]:
    """A stop's title and text (Markdown) in ``lang``: its own, or a check stop's (the check itself, outlined, shows
    its question)."""
    if stop.check:
        return text("your_turn.tour_title", lang, tab=text(f"tabs.{stop.tab}", lang)), text("your_turn.tour_text", lang)
    return text(f"tour.stop.{stop.key}.title", lang), text(f"tour.stop.{stop.key}.text", lang)


def spots(number: int, stop: Stop) -> list[str]:
    """The classes of what stop ``number`` may outline: the check's block (assets/your_turn.js draws it), or the
    outputs tour.wire tags."""
    if stop.check:
        return [f"your-turn-check-{stop.check}"]
    return [spot_class(number, rank) for rank in range(len(stop.focus))]


STORAGE_KEY = "plm-tour"  # localStorage: {"stop": k, "active": bool}


def spot_class(number: int, rank: int) -> str:
    """The class that marks stop ``number``'s ``rank``-th choice of what to outline."""
    return f"tour-spot-{number}-{rank}"


# The header's button (assets/tour_button_template.js), rendered by the browser in its language; TOUR_JS keeps its
# words up to date.
TEMPLATE = script("tour_button_template", LANGUAGE=BROWSER_LANGUAGE_JS)

# The tour's script (gr.HTML's js_on_load), read once; its header comment stays out of the page.
TOUR_JS = script("tour")

UI_KEYS = ["region", "start", "resume", "count", "back", "next", "finish", "leave", "fold", "unfold", "seed", "keys"]


def build() -> gr.HTML:
    """The header's "Start the tour" button; its script adds the tour's panel to the page and runs the tour."""
    stops = [{"title": PerLanguage({lang: markdown_inline(words(stop, lang)[0]) for lang in LANGUAGES}),
              "text": None if stop.check else PerLanguage({lang: markdown_inline(words(stop, lang)[1])
                                                           for lang in LANGUAGES}),
              "section": stop.section, "tab": stop.tab, "sub": stop.sub, "preset": stop.preset, "link": stop.link,
              "check": stop.check, "spots": spots(number, stop)}
             for number, stop in enumerate(STOPS, 1)]
    return gr.HTML("", html_template=TEMPLATE, js_on_load=TOUR_JS, elem_classes=["tour-box"], stops=stops,
                   storage_key=STORAGE_KEY,
                   ui={**{key: in_every_language(label(f"tour.{key}")) for key in UI_KEYS},
                       "check_text": PerLanguage({lang: markdown_inline(text("your_turn.tour_text", lang))
                                                 for lang in LANGUAGES})})


def check(stop: Stop, collector: Registry) -> list:
    """The components ``stop`` may outline, in order; raises ValueError if the stop names something the app lacks
    or outlines a result outside the sub-tab it selects. A check stop outlines the check (drawn by the browser)."""
    if stop.check:
        check = checks.CHECKS.get(stop.check)
        if check is None or check.tab != stop.tab or stop.tab not in collector.tabs:
            raise ValueError(f"tour stop {stop.key}: check {stop.check!r} is not in tab {stop.tab!r}")
        return []
    view = collector.find(stop.tab, stop.preset)
    if view is None:
        raise ValueError(f"tour stop {stop.key}: no runnable preset {stop.preset!r} in tab {stop.tab!r}")
    opens = view.presets[stop.preset].shows or (view.where.id if view.where is not None else None)
    if opens != stop.sub:
        raise ValueError(f"tour stop {stop.key}: preset {stop.preset!r} opens sub-tab {opens!r}, not {stop.sub!r}")
    outputs = []
    for index in stop.focus:
        if not 0 <= index < len(view.outputs):
            raise ValueError(f"tour stop {stop.key}: view {view.key!r} has no output {index}")
        output = view.outputs[index]
        around = enclosing_tab(output)
        if (around.id if around is not None and around is not collector.tabs[stop.tab].tab else None) != stop.sub:
            raise ValueError(f"tour stop {stop.key}: output {index} is not in sub-tab {stop.sub!r}")
        outputs.append(output)
    return outputs


def wire(box: gr.HTML, collector: Registry) -> None:
    """Check every stop against the built app and tag what each outlines (a class per stop and choice). An app built
    with some of the tabs only (a test's) skips the stops of the others; tests/kit/test_tour.py checks the whole app."""
    for number, stop in enumerate(STOPS, 1):
        if stop.tab not in collector.tabs:
            continue
        for rank, output in enumerate(check(stop, collector)):
            output.elem_classes = [*(output.elem_classes or []), spot_class(number, rank)]
    box.tour_stops = list(STOPS)  # for tests and tools
