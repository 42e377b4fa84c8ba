"""N-gram tab (issue #3): count, score, smooth and sample with a statistical language model (seed §2.1)."""
from __future__ import annotations

import math

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from core.loading.cache import bounded_cache
from core.text.corpora import load_corpus
from core.text.errors import UserInputError
from core.text.limits import (MAX_LIST_CHARS, MAX_LONG_TEXT_CHARS, MAX_SCORED_TOKENS, MAX_SHORT_TEXT_CHARS,
                         MAX_UPLOAD_BYTES, MAX_WORD_CHARS)
from core.ngram.ngram import (
    EOS,
    KN_DISCOUNT,
    MAX_ORDER,
    ContextCounts,
    Generation,
    NgramModel,
    SentenceScore,
    short,
    tokenize_sentences,
)
from core.text.textio import normalize_text, read_text_upload
from demo.kit import lessons, presets, sampling
from demo.server.handlers import friendly_errors, preprocess_in_handler
from demo.kit.widgets import TABLE_BUTTONS, sig4, sig4_text
from demo.kit.figures import COLORWAY, bar, empty_figure, styled
from demo.kit.i18n import label, t

TITLE = "N-gram"
HISTORY = [(2.1, "§2.1 · 1948 → 1990s", "n-gram", "ngram", "p-cixing-de")]  # the Overview's timeline

# Choice values are language-free (API clients send them); the browser shows each choice's label in the learner's
# language.
TOY, TANG, MOBY, OWN = "toy_zh", "tang_poems", "moby_dick", "own"
CORPUS_KEYS = {TOY: "toy_zh", TANG: "tang_poems", MOBY: "moby_dick"}
CORPUS_LABELS = {TOY: "ngram.corpus_toy", TANG: "ngram.corpus_tang", MOBY: "ngram.corpus_moby", OWN: "ngram.corpus_own"}
WORDS, CHARS = "words", "characters"
SMOOTHING_KEYS = {"mle": "ngram.smooth_mle", "add_k": "ngram.smooth_add_k", "kneser_ney": "ngram.smooth_kn"}
SHORT_NAMES = {"add_k": "P_add-k", "kneser_ney": "P_KN"}
ZERO_STYLE = "background-color: #fde2e1; color: #b42318; font-weight: 600"  # P = 0: the sparsity problem


# ----------------------------------------------------------------------------------------------------------------
# Corpus → model (cached: the learner usually changes the query, not the corpus)


def corpus_text(corpus: str, own_text: str | None, upload: str | None) -> str:
    if corpus in CORPUS_KEYS:
        return load_corpus(CORPUS_KEYS[corpus])
    if upload:
        return read_text_upload(upload)
    own_text = own_text or ""
    if len(own_text.encode("utf-8")) > MAX_UPLOAD_BYTES:
        raise UserInputError("ngram.err.pasted_too_big", mb=f"{MAX_UPLOAD_BYTES / 1e6:.0f}")
    if not own_text.strip():
        raise UserInputError("ngram.err.own_empty")
    return normalize_text(own_text)


# An order-5 model of Moby-Dick (1.2 M characters) takes ~70 MB, so the cache is bounded by corpus length too.
@bounded_cache(max_entries=4, max_weight=3_000_000, weight=lambda args, model: len(args[0]))
def _fit(text: str, unit: str, lowercase: bool, n: int, boundaries: bool) -> NgramModel:
    return NgramModel(tokenize_sentences(text, "char" if unit == CHARS else "word", lowercase), n, boundaries)


def get_model(corpus, own_text, upload, unit, lowercase, n, boundaries, progress=None) -> NgramModel:
    n = int(n)
    if not 1 <= n <= MAX_ORDER:
        raise UserInputError("ngram.err.order_range", max_order=MAX_ORDER, n=n)
    if progress is not None:
        progress(0.1, desc=t("ngram.progress_counting"))
    return _fit(corpus_text(corpus, own_text, upload), unit, bool(lowercase), n, bool(boundaries))


def query_tokens(text: str, unit: str, lowercase: bool) -> list[str]:
    """The learner's sentence/context, tokenised exactly like the corpus (one sequence, even across . or lines)."""
    return [token for sentence in tokenize_sentences(normalize_text(text or ""), "char" if unit == CHARS else "word",
                                                 bool(lowercase)) for token in sentence]


def corpus_summary(model: NgramModel, corpus: str, unit: str) -> str:
    vocab = "ngram.vocab_padded" if model.boundaries else "ngram.vocab_chars" if unit == CHARS else "ngram.vocab_words"
    name = t(CORPUS_LABELS[corpus]) if corpus != OWN else t("ngram.your_text")
    return t("ngram.summary", name=name, tokens=f"{model.n_tokens:,}", sentences=f"{model.sentences:,}",
             vocab=f"{model.vocab_size:,}", vocab_note=t(vocab), n=model.n,
             boundaries=t("ngram.boundaries_on" if model.boundaries else "ngram.boundaries_off"))


# ----------------------------------------------------------------------------------------------------------------
# Formatting helpers


def code(token: str) -> str:
    """A token inside Markdown: a code span, so <s> or * show as they are."""
    token = short(token).replace("`", "ˋ")
    return f"`{token}`"


def plot_label(token: str) -> str:
    """A token as a plotly label (plotly reads a few HTML tags, and <s> is one of them)."""
    return short(token).replace("<", "&lt;").replace(">", "&gt;")


def joined(tokens, unit: str) -> str:
    return ("" if unit == CHARS else " ").join(short(tok) for tok in tokens)


def fmt(p: float) -> str:
    return sig4_text(p)


def formula(model: NgramModel, counts: ContextCounts, word: str, smoothing: str, k: float) -> str:
    """The estimate for one next token, with every number filled in."""
    ctx = " ".join(short(tok) for tok in counts.context)
    target = f"P({short(word)} | {ctx})" if ctx else f"P({short(word)})"
    c_w = next((f.count for f in counts.followers if f.word == word), 0)
    c = counts.context_count
    count_w = f"count({ctx}, {short(word)})" if ctx else f"count({short(word)})"
    count_c = f"count({ctx})" if ctx else "N"
    p = model.prob(word, counts.context, smoothing, k)
    if smoothing == "mle":
        if c == 0:
            return t("ngram.mle_unseen", target=target, count_w=count_w, count_c=count_c)
        return f"{target} = {count_w} / {count_c} = {c_w} / {c} = **{fmt(p)}**"
    if smoothing == "add_k":
        V = model.vocab_size
        return (f"{target} = ({count_w} + k) / ({count_c} + k·|V|) = ({c_w} + {k:g}) / ({c} + {k:g} × {V}) "
                f"= {c_w + k:g} / {c + k * V:g} = **{fmt(p)}**  (|V| = {V})")
    text = t("ngram.kn_formula", target=target, p=fmt(p), d=KN_DISCOUNT)
    if counts.context and c and len(counts.context) == model.n - 1:  # the top order: raw counts, as in the formula
        distinct = len(counts.followers)
        lower = model.prob(word, counts.context[1:], "kneser_ney")
        shorter = " ".join(short(tok) for tok in counts.context[1:]) or "∅"
        text += (f"  \n= max({count_w} − d, 0) / {count_c} + d · N₁₊({ctx}, •) / {count_c}"
                 f" · P_KN({short(word)} | {shorter})"
                 f"  \n= max({c_w} − {KN_DISCOUNT}, 0) / {c} + {KN_DISCOUNT} × {distinct} / {c} × {fmt(lower)}")
    return text


def as_k(k) -> float:
    """k from the number box (an emptied box means the default, Laplace's k = 1)."""
    return 1.0 if k is None else float(k)


def log2_text(value: float) -> str:
    return "−∞" if value == -math.inf else f"{round(value, 3) + 0.0:.3f}"  # + 0.0 turns -0.0 into 0.0


def notes_markdown(notes: list[str]) -> str:
    return "".join(f"\n\n> ⚠️ {note}" for note in notes)


# ----------------------------------------------------------------------------------------------------------------
# Handlers


@friendly_errors
def show_counts(corpus, own_text, upload, unit, lowercase, n, boundaries, smoothing, k, context, word,
                progress=gr.Progress()):
    """count(context, w) / count(context) for the current context, and the most likely next tokens."""
    model = get_model(corpus, own_text, upload, unit, lowercase, n, boundaries, progress)
    tokens = query_tokens(context, unit, lowercase)
    counts = model.context_counts(tokens, smoothing, as_k(k))
    notes = []
    if len(tokens) > model.n - 1:
        notes.append(t("ngram.note.window", n=model.n, n1=model.n - 1,
                       context=" ".join(map(code, counts.context)) or t("ngram.note.context_empty")))
    elif len(tokens) < model.n - 1:
        notes.append(t("ngram.note.short_context_kn" if smoothing == "kneser_ney" else "ngram.note.short_context",
                       length=len(tokens), n1=model.n - 1, k=len(tokens) + 1))
    unknown = [token for token in counts.context if not model.known(token)]
    if unknown:
        notes.append(t("ngram.note.context_unknown", tokens=", ".join(map(code, unknown))))
    smoothed = smoothing != "mle"
    rows = [[short(f.word), f.count, counts.context_count, sig4(f.p_mle)] + [sig4(f.p)] * smoothed
            for f in counts.followers[:30]]
    if len(counts.followers) > 30:
        notes.append(t("ngram.note.top30", total=f"{len(counts.followers):,}"))
    if counts.n_unseen:  # under MLE visibly 0: the sparsity problem
        rows.append([t("ngram.row_unseen", count=f"{counts.n_unseen:,}"), 0, counts.context_count, 0.0]
                    + [sig4(counts.p_unseen)] * smoothed)
    columns = ["w", "count(ctx,w)", "count(ctx)", "P_MLE"] + [SHORT_NAMES.get(smoothing)] * smoothed
    table = pd.DataFrame(rows, columns=columns)
    target = query_tokens(word, unit, lowercase)
    target = target[0] if target else (counts.followers[0].word if counts.followers else None)
    explanation = formula(model, counts, target, smoothing, as_k(k)) if target else ""
    if not counts.followers:
        explanation += "\n\n" + t("ngram.never_followed")
    if counts.top:
        words, probs = zip(*counts.top)
        title = (t("ngram.fig_next_after", context=joined(counts.context, unit)) if counts.context
                 else t("ngram.fig_unigram"))
        figure = bar([plot_label(w) for w in words], probs, title, highlight=[w == target for w in words])
    else:
        figure = empty_figure(t("ngram.fig_no_next"))
    summary = corpus_summary(model, corpus, unit) + notes_markdown(notes)
    return summary, explanation, table, figure


def score_table(score: SentenceScore):
    rows = [[i + 1, " ".join(map(short, f.context)) or "∅",
             short(f.word) if f.known else t("ngram.word_unknown", word=short(f.word)),
             f.count, f.context_count, sig4(f.p), sig4(math.log2(f.p)) if f.p > 0 else "−∞"]
            for i, f in enumerate(score.factors)]
    columns = ["i", t("ngram.col_context"), "wᵢ", "count(ctx,wᵢ)", "count(ctx)", "P(wᵢ|ctx)", "log₂ P"]
    frame = pd.DataFrame(rows, columns=columns)
    return (frame.style
            .apply(lambda row: [ZERO_STYLE if row["P(wᵢ|ctx)"] == 0 else ""] * len(row), axis=1))


def score_line(name: str, score: SentenceScore) -> str:
    p = score.probability
    pp = t("ngram.pp_inf") if math.isinf(score.perplexity) else f"{score.perplexity:.2f}"
    line = t("ngram.score_line", name=name, p=fmt(p), log2=log2_text(score.log2_prob), n=len(score.factors), pp=pp)
    return line + (t("ngram.score_unknown", tokens=", ".join(map(code, score.unknown))) if score.unknown else "")


@friendly_errors
def score_sentences(corpus, own_text, upload, unit, lowercase, n, boundaries, smoothing, k, sentence_a, sentence_b,
                    progress=gr.Progress()):
    """Chain-rule scores of one or two sentences: every factor, the product, log₂ P and the perplexity."""
    model = get_model(corpus, own_text, upload, unit, lowercase, n, boundaries, progress)
    tokens_a = query_tokens(sentence_a, unit, lowercase)
    if not tokens_a:
        raise UserInputError("ngram.err.sentence_a_empty")
    tokens_b = query_tokens(sentence_b, unit, lowercase)
    for name, tokens in (("A", tokens_a), ("B", tokens_b)):  # one factor, row and bar each: keep the answer small
        if len(tokens) > MAX_SCORED_TOKENS:
            raise UserInputError("ngram.err.sentence_too_long", name=name, tokens=f"{len(tokens):,}",
                                 limit=MAX_SCORED_TOKENS)
    a = model.score(tokens_a, smoothing, as_k(k))
    b = model.score(tokens_b, smoothing, as_k(k)) if tokens_b else None
    lines = [score_line("A", a)] + ([score_line("B", b)] if b else [])
    if b:
        if a.probability > 0 and b.probability > 0:
            ratio = a.probability / b.probability
            first, second, times = ("A", "B", ratio) if ratio >= 1 else ("B", "A", 1 / ratio)
            lines.append(t("ngram.ratio", first=first, second=second, times=f"{times:,.4g}"))
        elif a.probability == 0 and b.probability == 0:
            lines.append(t("ngram.both_zero"))
        else:
            lines.append(t("ngram.only_one", name="A" if a.probability > 0 else "B"))
    if smoothing == "mle" and (a.probability == 0 or (b and b.probability == 0)):
        lines.append(t("ngram.mle_zero"))
    notes = notes_markdown(a.notes + (b.notes if b else []))
    summary = corpus_summary(model, corpus, unit) + "\n\n" + "  \n".join(lines) + notes
    fig = go.Figure()
    for name, score, color in (("A", a, COLORWAY[0]), ("B", b, COLORWAY[1])):
        if score is not None:
            few = len(score.factors) <= 12  # label the bars with their token and value while they fit
            fig.add_bar(x=[str(i + 1) for i in range(len(score.factors))], y=[f.p for f in score.factors],
                        name=name, marker_color=color, hovertext=[plot_label(f.word) for f in score.factors],
                        text=[f"{plot_label(f.word)}<br>{fmt(f.p)}" for f in score.factors] if few else None,
                        textposition="outside", cliponaxis=False)
    top = max([f.p for score in (a, b) if score is not None for f in score.factors] or [1.0]) or 1.0
    room = dict(range=[0, top * 1.3]) if fig.data and fig.data[0].text is not None else {}  # the labels fit under
    if room and top * 1.3 > 1:  # the title; a probability's ticks stop at 1
        room["tickvals"] = [0, 0.2, 0.4, 0.6, 0.8, 1]
    fig.update_layout(barmode="group", xaxis=dict(type="category", title_text=t("ngram.axis_factor")),
                      yaxis=dict(title_text=t("ngram.axis_factor_p"), **room))
    figure = styled(fig, t("ngram.fig_factors", smoothing=t(SMOOTHING_KEYS[smoothing])), 400)
    empty = pd.DataFrame(columns=["i"])
    return summary, score_table(a), score_table(b) if b else empty, figure


def generation_table(gen: Generation):
    rows = [[i + 1, " ".join(short(tok) for tok in step.context) or "∅", short(step.chosen), sig4(step.p_chosen),
             step.cut.kept_count, sig4(step.cut.kept_mass),
             " · ".join(f"{short(w)} {p:.3f}" for w, p in step.candidates[:5])]
            for i, step in enumerate(gen.steps)]
    columns = [t("ngram.col_step"), t("ngram.col_context"), t("ngram.col_drawn"), t("ngram.col_p_drawn"),
               t("sampling.step_col_3"), t("sampling.step_col_4"), t("ngram.col_candidates")]
    return pd.DataFrame(rows, columns=columns)


@friendly_errors
def generate_text(corpus, own_text, upload, unit, lowercase, n, boundaries, smoothing, k, prompt, steps, temperature,
                  top_k, top_p, seed, progress=gr.Progress()):
    """Sample token by token from P(w | context) through core/text/sampling.py: temperature, top-k, top-p, seeded."""
    settings = sampling.settings(temperature, top_k, top_p, seed)
    model = get_model(corpus, own_text, upload, unit, lowercase, n, boundaries, progress)
    gen = model.generate(query_tokens(prompt, unit, lowercase), int(steps), smoothing, as_k(k), settings)
    prompt_text = joined(gen.prompt, unit)
    new = joined(gen.tokens[len(gen.prompt):], unit)
    ended = " `</s>`" if gen.steps and gen.steps[-1].chosen == EOS else ""
    sep = "" if unit == CHARS else " "
    text = (f"**{prompt_text}**{sep}{new}{ended}" if prompt_text else f"{new}{ended}").strip()
    info = t("ngram.gen_settings", settings=sampling.describe(settings), smoothing=t(SMOOTHING_KEYS[smoothing]))
    if gen.steps:
        info += "  \n" + sampling.summary(gen.steps[0].cut)
        figure = sampling.figure(gen.steps[0].cut, plot_label, "sampling.fig_first_step")
    else:
        figure = empty_figure(t("ngram.fig_nothing"))
    values = (corpus, own_text, unit, lowercase, n, boundaries, smoothing, k, prompt, steps, temperature, top_k, top_p,
              seed)  # the preset's values that generation reads (an upload is in no preset)
    link = "" if upload else sampling.result_link("ngram", PRESETS, values, 17, [*range(8), *range(12, 18)])
    summary = (corpus_summary(model, corpus, unit) + f"\n\n### {text or t('ngram.nothing_generated')}\n" + info
               + link + notes_markdown(gen.notes))
    return summary, generation_table(gen), figure


# ----------------------------------------------------------------------------------------------------------------
# Presets (the seed's worked examples, §2.1, and classical Chinese by character)

# corpus, own text, unit, lowercase, n, boundaries, smoothing, k, context, word, sentence A, sentence B, prompt,
# steps, temperature, top-k, top-p, seed
PRESET_VALUES = [
    [TOY, "", WORDS, False, 2, False, "mle", 1, "的", "词性", "判断 单词 的 词性", "判断 单词 的 磁性",
     "北京", 10, 1.0, 5, 1.0, 0],
    [TOY, "", WORDS, False, 2, False, "add_k", 1, "的", "词性", "判断 单词 的 词性", "判断 单词 的 磁性",
     "北京", 10, 1.0, 5, 1.0, 0],
    [TOY, "", CHARS, False, 2, False, "mle", 1, "的", "词", "判断这个词的词性", "判断这个词的磁性",
     "北", 10, 1.0, 5, 1.0, 0],
    [TOY, "", WORDS, False, 2, False, "add_k", 1, "的", "磁性", "判断 这个 词 的 词性", "判断 这个 词 的 磁性",
     "判断", 10, 1.0, 5, 1.0, 0],
    [TANG, "", CHARS, False, 2, False, "mle", 1, "明", "月", "举头望明月", "举头望明日", "明", 12, 1.0, 5, 1.0, 0],
    [MOBY, "", WORDS, True, 3, True, "kneser_ney", 1, "the white", "whale", "call me ishmael .", "call me whale .",
     "the white", 25, 0.8, 10, 1.0, 7],
    [MOBY, "", WORDS, True, 3, True, "kneser_ney", 1, "the white", "whale", "call me ishmael .", "call me whale .",
     "the white", 25, 1.0, 0, 0.75, 7],
]
PRESET_SLUGS = ["p-cixing-de", "add-one", "char-de", "cixing-vs-cixing", "tang-chars", "moby-trigram", "moby-top-p"]
PRESET_LABELS = [label(f"ngram.preset.{slug.replace('-', '_')}") for slug in PRESET_SLUGS]
# The sub-tab each preset is about (a lesson step or a link selects it; all three are filled either way).
PRESET_SHOWS = ["counts", "counts", "counts", "score", "score", "generate", "generate"]
PRESETS = [presets.Preset(slug, name, tuple(values), "§2.1", shows=shows)
           for slug, name, values, shows in zip(PRESET_SLUGS, PRESET_LABELS, PRESET_VALUES, PRESET_SHOWS)]

# (seed §, question, answer, preset)
LESSON = [("§2.1", label(f"ngram.lesson.q{i}"), label(f"ngram.lesson.a{i}"), slug)
          for i, slug in enumerate(["p-cixing-de", "add-one", "cixing-vs-cixing"], 1)]


@friendly_errors
def run_preset(corpus, own_text, unit, lowercase, n, boundaries, smoothing, k, context, word, sentence_a,
               sentence_b, prompt, steps, temperature, top_k, top_p, seed, progress=gr.Progress()):
    """All three views (counts, sentence scores, generation) for one set of inputs."""
    model = (corpus, own_text, None, unit, lowercase, n, boundaries, smoothing, k)
    return (*show_counts(*model, context, word, progress),
            *score_sentences(*model, sentence_a, sentence_b, progress),
            *generate_text(*model, prompt, steps, temperature, top_k, top_p, seed, progress))


def build() -> None:
    gr.Markdown(label("ngram.intro"))
    preset_row = gr.Column()  # filled at the end, once every component the presets set exists
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            corpus = gr.Radio([(label(key), value) for value, key in CORPUS_LABELS.items()], value=TOY,
                              label=label("ngram.corpus"))
            with gr.Accordion(label("ngram.own_accordion"), open=False):
                own_text = gr.Textbox(lines=4, label=label("ngram.own_text"),
                                      placeholder=label("ngram.own_placeholder"), max_length=MAX_LONG_TEXT_CHARS)
                upload = gr.File(file_types=[".txt"], type="filepath", label=label("ngram.upload"))
            unit = gr.Radio([(label("ngram.unit_words"), WORDS), (label("ngram.unit_chars"), CHARS)], value=WORDS,
                            label=label("ngram.unit"), info=label("ngram.unit_info"))
            lowercase = gr.Checkbox(False, label=label("ngram.lowercase"))
            n = gr.Slider(1, MAX_ORDER, value=2, step=1, label=label("ngram.order"))
            boundaries = gr.Checkbox(False, label=label("ngram.boundaries"))
            smoothing = gr.Radio([(label(key), value) for value, key in SMOOTHING_KEYS.items()], value="mle",
                                 label=label("ngram.smoothing"))
            k = gr.Number(1, label=label("ngram.k"), minimum=0.001, maximum=100)
            with gr.Accordion(label("ngram.conventions_title"), open=False):
                gr.Markdown(label("ngram.conventions"))
        with gr.Column(scale=3):
            with gr.Tabs(overflow_behavior="wrap"):
                with gr.Tab(label("ngram.tab_counts"), id="counts") as counts_tab:
                    with gr.Row():
                        context = gr.Textbox("的", label=label("ngram.context"), max_length=MAX_LIST_CHARS)
                        word = gr.Textbox("词性", label=label("ngram.word"), max_length=MAX_WORD_CHARS)
                    counts_btn = gr.Button(label("ngram.count_btn"), variant="primary")
                    counts_info = gr.Markdown()
                    counts_formula = gr.Markdown()
                    with gr.Row():
                        counts_table = gr.Dataframe(label=label("ngram.counts_table"), max_height=420, scale=3,
                                                    buttons=TABLE_BUTTONS)  # columns fit their words (style.css)
                        counts_plot = gr.Plot(scale=2, show_label=False)
                with gr.Tab(label("ngram.tab_score"), id="score"):
                    with gr.Row():
                        sentence_a = gr.Textbox("判断 单词 的 词性", label=label("ngram.sentence_a"),
                                                max_length=MAX_SHORT_TEXT_CHARS)
                        sentence_b = gr.Textbox("判断 单词 的 磁性", label=label("ngram.sentence_b"),
                                                max_length=MAX_SHORT_TEXT_CHARS)
                    score_btn = gr.Button(label("ngram.score_btn"), variant="primary")
                    score_info = gr.Markdown()
                    score_plot = gr.Plot(show_label=False)
                    table_a = gr.Dataframe(label=label("ngram.table_a"), max_height=360, buttons=TABLE_BUTTONS)
                    table_b = gr.Dataframe(label=label("ngram.table_b"), max_height=360, buttons=TABLE_BUTTONS)
                with gr.Tab(label("ngram.tab_generate"), id="generate"):
                    with gr.Row():
                        prompt = gr.Textbox("北京", label=label("ngram.prompt"), scale=2, max_length=MAX_LIST_CHARS)
                        steps = gr.Slider(1, 50, value=10, step=1, label=label("ngram.steps"))
                    temperature, top_k, top_p, seed = sampling.controls(*PRESET_VALUES[0][14:], max_top_k=50)
                    gen_btn = gr.Button(label("ngram.gen_btn"), variant="primary")
                    gen_info = gr.Markdown()
                    gen_plot = gr.Plot(show_label=False)
                    gen_table = gr.Dataframe(label=label("ngram.gen_table"), max_height=420, wrap=True,
                                             buttons=TABLE_BUTTONS)

    model_inputs = [corpus, own_text, upload, unit, lowercase, n, boundaries, smoothing, k]
    counts_inputs = model_inputs + [context, word]
    counts_outputs = [counts_info, counts_formula, counts_table, counts_plot]
    score_inputs, score_outputs = model_inputs + [sentence_a, sentence_b], [score_info, table_a, table_b, score_plot]
    gen_inputs = model_inputs + [prompt, steps, temperature, top_k, top_p, seed]
    gen_outputs = [gen_info, gen_table, gen_plot]
    preset_inputs = [corpus, own_text, unit, lowercase, n, boundaries, smoothing, k, context, word, sentence_a,
                     sentence_b, prompt, steps, temperature, top_k, top_p, seed]
    # 11 to 14 inputs each: preprocess them in the handler's thread (see preprocess_in_handler).
    counts_btn.click(preprocess_in_handler(show_counts, counts_inputs), counts_inputs, counts_outputs,
                     api_name="ngram_counts", preprocess=False)
    score_btn.click(preprocess_in_handler(score_sentences, score_inputs), score_inputs, score_outputs,
                    api_name="ngram_score", preprocess=False)
    gen_btn.click(preprocess_in_handler(generate_text, gen_inputs), gen_inputs, gen_outputs,
                  api_name="ngram_generate", preprocess=False)

    view = presets.View("ngram", "all", preset_inputs, counts_outputs + score_outputs + gen_outputs, run_preset,
                        PRESETS, where=counts_tab, seed=seed)
    with preset_row:
        view.buttons()
        lessons.lesson_table(LESSON, view)
