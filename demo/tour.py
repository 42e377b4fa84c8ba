"""The guided tour (issue #37): the seed's whole arc, from counting word pairs to the ladder, in 32 stops, each chapter's
ending with one of its "Your turn" checks (issue #51): 42 in all.

Each stop opens one preset of one view through the page's own link router (``window.plmOpenLink``, demo/presets.py),
so the tab and sub-tab are selected and the preset's results computed exactly as a "Try this" step or a ``?tab=…``
link does; a check stop opens its check as a ``?check=<slug>`` link does (assets/your_turn.js). The tour then outlines the result the stop talks about (one of the view's outputs, tagged here with a
class when the app is built), scrolls it into view, and says in a few sentences what to look at, citing the seed §.

    STOPS = [Stop("counting", "counting", "ngram", "counts", "p-cixing-de", "§2.1", focus=(1,)), ...]
    box = tour.build()          # in the header: the "Start the tour" button; the panel is added by the browser
    tour.wire(box, collector)   # after the tabs: check every stop against the registry, tag what each outlines

The stops are plain data here and nowhere else; tests/test_tour.py checks them against the built app (every tab,
sub-tab, preset and output exists; 20-30 stops; both languages; a § each), and tests/e2e/test_tour_browser.py walks
them in Chromium in both languages. Their words are the ``tour`` section of assets/i18n.

In the browser (TOUR_JS): ← / → and the Back / Next buttons move, Esc or ✕ leaves (the learner stays where the
tour left them), "Stop k of N" says where they are, ``localStorage["plm-tour"]`` remembers the stop, ``?tour=k`` links
to a stop, and every link to ``?tour=k`` in the page (the Overview's "Start the tour") starts it in place. On a phone
the panel is a sheet docked at the bottom that folds down to one line, and the page gets room below its last block so
the outlined result is never under it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import gradio as gr

from core import checks
from core.i18n import LANGUAGES, text
from demo.i18n import BROWSER_LANGUAGE_JS, in_every_language, label
from demo.presets import Registry, enclosing_tab, preset_link
from demo.static_html import markdown_inline

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


# The header's button, rendered by the browser in its language; TOUR_JS keeps its words up to date.
TEMPLATE = """${(() => {
  const lang = LANGUAGE;
  return `<button type="button" class="tour-start" data-tour-start="1">${ui.start[lang]}</button>`;
})()}""".replace("LANGUAGE", BROWSER_LANGUAGE_JS)

TOUR_JS = """
if (!window.plmTour) {
  const lang = LANGUAGE;
  const stops = props.stops, ui = props.ui, N = stops.length, KEY = STORAGE_KEY;
  const words = (key) => ui[key][lang];
  const clamp = (k) => Math.min(Math.max(1, Math.round(Number(k)) || 1), N);
  const load = () => { try { return JSON.parse(localStorage.getItem(KEY)) || {}; } catch (e) { return {}; } };
  const save = () => { try { localStorage.setItem(KEY, JSON.stringify(state)); } catch (e) {} };
  let state = {stop: 1, active: false, ...load()};
  state.stop = clamp(state.stop);
  let token = 0;

  const panel = document.createElement("aside");
  panel.className = "tour-panel";
  panel.hidden = true;
  panel.setAttribute("aria-label", words("region"));
  panel.innerHTML = `<div class="tour-head"><span class="tour-count" aria-live="polite"></span>`
    + `<span class="tour-keys">${words("keys")}</span>`
    + `<button type="button" class="tour-fold" aria-expanded="true"></button>`
    + `<button type="button" class="tour-leave" aria-label="${words("leave")}" title="${words("leave")}">✕</button>`
    + `</div>`
    + `<div class="tour-body"><h2 class="tour-title"></h2><p class="tour-text"></p><p class="tour-section"></p></div>`
    + `<div class="tour-nav"><button type="button" class="tour-back">${words("back")}</button>`
    + `<button type="button" class="tour-next"></button></div>`;
  // Inside Gradio's .contain: Gradio applies our stylesheet's @media rules (the phone's sheet) only in there.
  (document.querySelector(".gradio-container .contain") || document.body).appendChild(panel);
  const $ = (selector) => panel.querySelector(selector);

  const shown = (el) => !!el && el.offsetParent !== null && el.getBoundingClientRect().height > 0;
  const selected = (id) => [...document.querySelectorAll('button[role="tab"][aria-selected="true"]')]
    .some((b) => b.dataset.tabId === id && b.offsetParent !== null);
  const busy = () => !!document.querySelector(".wrap.generating, .progress-text, .eta-bar");
  const spot = (stop) => stop.spots.map((name) => [...document.querySelectorAll("." + name)].find(shown))
    .find(Boolean);
  const unmark = () => document.querySelectorAll(".tour-highlight")
    .forEach((el) => el.classList.remove("tour-highlight"));
  const room = () => { document.body.style.paddingBottom = state.active ? panel.offsetHeight + 24 + "px" : ""; };

  const startLabel = () => {
    const text = state.stop > 1 && !state.active
      ? words("resume").replace("{k}", state.stop).replace("{n}", N) : words("start");
    document.querySelectorAll(".tour-start").forEach((b) => { b.textContent = text; });
  };
  const render = () => {
    const stop = stops[state.stop - 1];
    panel.dataset.stop = String(state.stop);
    panel.dataset.state = "loading";
    $(".tour-count").textContent = words("count").replace("{k}", state.stop).replace("{n}", N);
    $(".tour-title").innerHTML = stop.title[lang];
    $(".tour-text").innerHTML = (stop.text || ui.check_text)[lang];  // a check stop: the words all of them share
    $(".tour-section").textContent = words("seed").replace("{section}", stop.section);
    $(".tour-back").disabled = state.stop === 1;
    $(".tour-next").textContent = state.stop === N ? words("finish") : words("next");
    panel.hidden = false;
    room();
    startLabel();
  };
  // Outline the stop's result once its tab and sub-tab are selected and nothing is computing; a preset whose result
  // was computed before may answer at once, so "nothing is computing" counts only after the answer could have come.
  const settle = (stop, mine) => {
    const began = performance.now();
    const tick = () => {
      if (mine !== token) return;
      const waited = performance.now() - began;
      const target = spot(stop);
      const ready = selected(stop.tab) && (!stop.sub || selected(stop.sub)) && !busy() && target && waited > 600;
      if (!ready && waited < 120000) { setTimeout(tick, 150); return; }
      const fallback = [...document.querySelectorAll(".tabitem")].filter(shown).pop();
      const el = target || fallback;
      unmark();
      if (!el) { panel.dataset.state = "missing"; return; }
      el.classList.add("tour-highlight");
      el.scrollIntoView({block: "start", behavior: "auto"});
      // Figures above it may still be drawing and push it down (or up): keep it in place until the page stops
      // moving, unless the learner scrolls first.
      let last = null, still = 0;
      const steady = performance.now();
      const hold = () => {
        if (mine !== token) return;
        const top = Math.round(el.getBoundingClientRect().top);
        still = top === last ? still + 1 : 0;
        last = top;
        if (still >= 4 || performance.now() - steady > 6000 || moved) {
          panel.dataset.state = target ? "ready" : "missing";
          return;
        }
        if (Math.abs(top - 16) > 4 && still === 0) el.scrollIntoView({block: "start", behavior: "auto"});
        setTimeout(hold, 150);
      };
      let moved = false;
      const stay = () => { moved = true; };
      ["wheel", "touchmove"].forEach((name) => window.addEventListener(name, stay, {once: true, passive: true}));
      hold();
    };
    tick();
  };
  const go = (k, navigate = true) => {
    state = {stop: clamp(k), active: true};
    save();
    unmark();
    render();
    const stop = stops[state.stop - 1];
    const href = stop.link + "&tour=" + state.stop;
    if (navigate) {
      if (window.plmOpenLink) window.plmOpenLink(href);
      else window.history.replaceState(null, "", href);  // the page's load reads the address next and opens it
    }
    if (stop.check && window.plmYourTurn) window.plmYourTurn.open(stop.check, false);  // assets/your_turn.js
    settle(stop, ++token);
  };
  const leave = () => {
    token++;
    state = {stop: state.stop, active: false};
    save();
    unmark();
    panel.hidden = true;
    room();
    const url = new URL(window.location.href);
    if (url.searchParams.has("tour")) {
      url.searchParams.delete("tour");
      window.history.replaceState(null, "", url.pathname + url.search);
    }
    startLabel();
  };
  const fold = () => {
    const folded = panel.classList.toggle("tour-folded");
    $(".tour-fold").textContent = folded ? "▴" : "▾";
    $(".tour-fold").setAttribute("aria-label", folded ? words("unfold") : words("fold"));
    $(".tour-fold").setAttribute("aria-expanded", String(!folded));
    room();
  };

  panel.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (!button || button.disabled) return;
    if (button.classList.contains("tour-back")) go(state.stop - 1);
    else if (button.classList.contains("tour-next")) state.stop === N ? leave() : go(state.stop + 1);
    else if (button.classList.contains("tour-leave")) leave();
    else if (button.classList.contains("tour-fold")) fold();
  });
  document.addEventListener("click", (event) => {
    const start = event.target.closest?.("[data-tour-start], a[href^='?tour=']");
    if (!start || event.defaultPrevented || event.ctrlKey || event.metaKey || event.shiftKey || event.button) return;
    event.preventDefault();
    const href = start.getAttribute("href");
    go(href ? new URLSearchParams(href).get("tour") : state.stop);
    $(".tour-next").focus({preventScroll: true});  // a keyboard learner goes on from the panel, not the page's end
  });
  document.addEventListener("keydown", (event) => {
    if (!state.active || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const where = event.target;
    const typing = "input, textarea, select, [contenteditable], [role=slider], [role=tab], [role=listbox]";
    if (where.closest?.(typing)) return;
    if (event.key === "ArrowRight" && state.stop < N) { event.preventDefault(); go(state.stop + 1); }
    else if (event.key === "ArrowLeft" && state.stop > 1) { event.preventDefault(); go(state.stop - 1); }
    else if (event.key === "Escape") { event.preventDefault(); leave(); }
  });
  new ResizeObserver(room).observe(panel);
  fold(); fold();  // the fold button's words and state
  window.plmTour = {go, leave, state: () => ({...state}), stops: N};

  // Where the learner was: ?tour=k wins (the address may already open its preset: a reload); else a tour left open
  // goes on at its stop, unless the address opens another link (then the header offers to resume).
  const query = new URLSearchParams(window.location.search);
  const asked = query.get("tour");
  if (asked && /^[0-9]+$/.test(asked)) {
    const stop = stops[clamp(asked) - 1];
    go(asked, !(query.get("tab") === stop.tab && query.get("preset") === stop.preset));
  } else if (state.active && !query.get("tab")) {
    go(state.stop);
  } else {
    state.active = false;
    startLabel();
  }
}
""".replace("LANGUAGE", BROWSER_LANGUAGE_JS).replace("STORAGE_KEY", json.dumps(STORAGE_KEY))

UI_KEYS = ["region", "start", "resume", "count", "back", "next", "finish", "leave", "fold", "unfold", "seed", "keys"]


def build() -> gr.HTML:
    """The header's "Start the tour" button; its script adds the tour's panel to the page and runs the tour."""
    stops = [{"title": {lang: markdown_inline(words(stop, lang)[0]) for lang in LANGUAGES},
              "text": None if stop.check else {lang: markdown_inline(words(stop, lang)[1]) for lang in LANGUAGES},
              "section": stop.section, "tab": stop.tab, "sub": stop.sub, "preset": stop.preset, "link": stop.link,
              "check": stop.check, "spots": spots(number, stop)}
             for number, stop in enumerate(STOPS, 1)]
    return gr.HTML("", html_template=TEMPLATE, js_on_load=TOUR_JS, elem_classes=["tour-box"], stops=stops,
                   ui={**{key: in_every_language(label(f"tour.{key}")) for key in UI_KEYS},
                       "check_text": {lang: markdown_inline(text("your_turn.tour_text", lang)) for lang in LANGUAGES}})


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
    with some of the tabs only (a test's) skips the stops of the others; tests/test_tour.py checks the whole app."""
    for number, stop in enumerate(STOPS, 1):
        if stop.tab not in collector.tabs:
            continue
        for rank, output in enumerate(check(stop, collector)):
            output.elem_classes = [*(output.elem_classes or []), spot_class(number, rank)]
    box.tour_stops = list(STOPS)  # for tests and tools
