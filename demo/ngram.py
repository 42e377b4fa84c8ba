"""N-gram tab (issue #3): count, score, smooth and sample with a statistical language model (seed §2.1)."""
from __future__ import annotations

import math

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from core.cache import bounded_cache
from core.corpora import load_corpus
from core.errors import UserInputError
from core.limits import MAX_UPLOAD_BYTES
from core.ngram import (EOS, KN_DISCOUNT, MAX_ORDER, ContextCounts, Generation, NgramModel, SentenceScore,
                        short, tokenize_sentences)
from core.textio import normalize_text, read_text_upload
from demo import presets
from demo.common import TABLE_BUTTONS, friendly_errors, preprocess_in_handler, whole_number
from demo.figures import COLORWAY, bar, empty_figure, styled

TITLE = "N-gram"

TOY, MOBY, OWN = "Seed toy corpus (4 segmented Chinese sentences)", "Moby-Dick (English, 1.2 MB)", "My own text"
CORPUS_KEYS = {TOY: "toy_zh", MOBY: "moby_dick"}
WORDS, CHARS = "words", "characters"
SMOOTHING_CHOICES = [
    ("none (MLE)", "mle"),
    ("add-k (Laplace at k = 1)", "add_k"),
    (f"interpolated Kneser-Ney (d = {KN_DISCOUNT})", "kneser_ney"),
]
SMOOTHING_NAMES = {value: label for label, value in SMOOTHING_CHOICES}
SHORT_NAMES = {"add_k": "P_add-k", "kneser_ney": "P_KN"}
ZERO_STYLE = "background-color: #fde2e1; color: #b42318; font-weight: 600"  # P = 0: the sparsity problem

INTRO = """
### A statistical language model you can take apart
**Chain rule:** P(w₁…w_m) = Π P(wᵢ | w₁…wᵢ₋₁). **Markov assumption:** keep only the last n−1 tokens
(n = 2: a bigram model). **MLE:** P(w | context) = count(context, w) / count(context).
Every number below comes from counting the corpus you pick.
"""

CONVENTIONS = """
- n-grams never cross a sentence: one sentence per line, and long lines are also split after . ! ? 。！？
- count(context) counts how often the context is *followed* by a token, so each distribution sums to 1.
- *Boundary tokens off* (the seed's convention): |V| = the distinct tokens of the corpus. The toy corpus has 12,
  so add-one gives (2+1)/(3+12) = 0.2.
- *Boundary tokens on* (NLTK's `pad_both_ends`): n−1 `<s>` before and n−1 `</s>` after each sentence; |V| also
  counts `<s>`, `</s>` and one `<UNK>` slot for unknown tokens, exactly as `nltk.lm` does (15 for the toy corpus).
- With word tokens, Chinese must be segmented with spaces (as in the toy corpus); for unsegmented Chinese pick
  character tokens.
"""


# ----------------------------------------------------------------------------------------------------------------
# Corpus → model (cached: the learner usually changes the query, not the corpus)


def corpus_text(corpus: str, own_text: str | None, upload: str | None) -> str:
    if corpus in CORPUS_KEYS:
        return load_corpus(CORPUS_KEYS[corpus])
    if upload:
        return read_text_upload(upload)
    own_text = own_text or ""
    if len(own_text.encode("utf-8")) > MAX_UPLOAD_BYTES:
        raise UserInputError(f"The pasted text is over {MAX_UPLOAD_BYTES / 1e6:.0f} MB. Paste less text.")
    if not own_text.strip():
        raise UserInputError("The corpus is empty: paste some text (one sentence per line) or upload a .txt file, "
                             "or pick a bundled corpus.")
    return normalize_text(own_text)


# An order-5 model of Moby-Dick (1.2 M characters) takes ~70 MB, so the cache is bounded by corpus length too.
@bounded_cache(max_entries=4, max_weight=3_000_000, weight=lambda args, model: len(args[0]))
def _fit(text: str, unit: str, lowercase: bool, n: int, boundaries: bool) -> NgramModel:
    return NgramModel(tokenize_sentences(text, "char" if unit == CHARS else "word", lowercase), n, boundaries)


def get_model(corpus, own_text, upload, unit, lowercase, n, boundaries, progress=None) -> NgramModel:
    n = int(n)
    if not 1 <= n <= MAX_ORDER:
        raise UserInputError(f"The order n must be between 1 and {MAX_ORDER}.")
    if progress is not None:
        progress(0.1, desc="Counting n-grams…")
    return _fit(corpus_text(corpus, own_text, upload), unit, bool(lowercase), n, bool(boundaries))


def query_tokens(text: str, unit: str, lowercase: bool) -> list[str]:
    """The learner's sentence/context, tokenised exactly like the corpus (one sequence, even across . or lines)."""
    return [t for sentence in tokenize_sentences(normalize_text(text or ""), "char" if unit == CHARS else "word",
                                                 bool(lowercase)) for t in sentence]


def corpus_summary(model: NgramModel, corpus: str, unit: str) -> str:
    kind = "characters" if unit == CHARS else "words"
    extra = " (all distinct tokens incl. `<s>`, `</s>`, plus `<UNK>`)" if model.boundaries else f" (distinct {kind})"
    name = corpus if corpus != OWN else "your text"
    return (f"**Corpus:** {name} · {model.n_tokens:,} tokens in {model.sentences:,} sentences · "
            f"**|V| = {model.vocab_size:,}**{extra} · order n = {model.n}"
            + (" · boundary tokens on" if model.boundaries else " · boundary tokens off"))


# ----------------------------------------------------------------------------------------------------------------
# Formatting helpers


def code(token: str) -> str:
    """A token inside Markdown: a code span, so <s> or * show as they are."""
    token = short(token).replace("`", "ˋ")
    return f"`{token}`"


def label(token: str) -> str:
    """A token as a plotly label (plotly reads a few HTML tags, and <s> is one of them)."""
    return short(token).replace("<", "&lt;").replace(">", "&gt;")


def joined(tokens, unit: str) -> str:
    return ("" if unit == CHARS else " ").join(short(t) for t in tokens)


def fmt(p: float) -> str:
    return "0" if p == 0 else f"{p:.4f}" if p >= 1e-3 else f"{p:.3e}"


def formula(model: NgramModel, counts: ContextCounts, word: str, smoothing: str, k: float) -> str:
    """The estimate for one next token, with every number filled in."""
    ctx = " ".join(short(t) for t in counts.context)
    target = f"P({short(word)} | {ctx})" if ctx else f"P({short(word)})"
    c_w = next((f.count for f in counts.followers if f.word == word), 0)
    c = counts.context_count
    count_w = f"count({ctx}, {short(word)})" if ctx else f"count({short(word)})"
    count_c = f"count({ctx})" if ctx else "N"
    p = model.prob(word, counts.context, smoothing, k)
    if smoothing == "mle":
        if c == 0:
            return (f"{target} = {count_w} / {count_c} = 0 / 0: the context never occurs, so MLE has no estimate "
                    "(shown as 0).")
        return f"{target} = {count_w} / {count_c} = {c_w} / {c} = **{fmt(p)}**"
    if smoothing == "add_k":
        V = model.vocab_size
        return (f"{target} = ({count_w} + k) / ({count_c} + k·|V|) = ({c_w} + {k:g}) / ({c} + {k:g} × {V}) "
                f"= {c_w + k:g} / {c + k * V:g} = **{fmt(p)}**  (|V| = {V})")
    text = f"{target} = **{fmt(p)}** (interpolated Kneser-Ney, d = {KN_DISCOUNT})"
    if counts.context and c and len(counts.context) == model.n - 1:  # the top order: raw counts, as in the formula
        distinct = len(counts.followers)
        lower = model.prob(word, counts.context[1:], "kneser_ney")
        shorter = " ".join(short(t) for t in counts.context[1:]) or "∅"
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
        notes.append(f"A {model.n}-gram model looks at the last {model.n - 1} token(s) only, so the context is "
                     f"{' '.join(map(code, counts.context)) or 'empty (a unigram model)'}.")
    elif len(tokens) < model.n - 1:
        notes.append(f"The context has {len(tokens)} token(s), fewer than n − 1 = {model.n - 1}, so these are the "
                     f"{len(tokens) + 1}-gram counts" + (" (Kneser-Ney uses continuation counts at this order)."
                                                         if smoothing == "kneser_ney" else "."))
    unknown = [t for t in counts.context if not model.known(t)]
    if unknown:
        notes.append("Not in the corpus: " + ", ".join(map(code, unknown)) + ". The context was never seen, so every "
                     "count below is 0.")
    smoothed = smoothing != "mle"
    rows = [[short(f.word), f.count, counts.context_count, f.p_mle] + [f.p] * smoothed for f in counts.followers[:30]]
    if len(counts.followers) > 30:
        notes.append(f"The table shows the 30 most frequent of the {len(counts.followers):,} tokens seen after "
                     "the context.")
    if counts.n_unseen:  # under MLE visibly 0: the sparsity problem
        rows.append([f"(each of {counts.n_unseen:,} unseen tokens)", 0, counts.context_count, 0.0]
                    + [counts.p_unseen] * smoothed)
    columns = ["w", "count(ctx,w)", "count(ctx)", "P_MLE"] + [SHORT_NAMES.get(smoothing)] * smoothed
    table = pd.DataFrame(rows, columns=columns).style.format({c: fmt for c in columns[3:]})
    target = query_tokens(word, unit, lowercase)
    target = target[0] if target else (counts.followers[0].word if counts.followers else None)
    explanation = formula(model, counts, target, smoothing, as_k(k)) if target else ""
    if not counts.followers:
        explanation += "\n\nThis context is never followed by anything in the corpus."
    if counts.top:
        words, probs = zip(*counts.top)
        title = (f"Most likely next tokens after “{joined(counts.context, unit)}”" if counts.context
                 else "Most likely tokens (unigram)")
        figure = bar([label(w) for w in words], probs, title, highlight=[w == target for w in words])
    else:
        figure = empty_figure("No next-token probabilities: the context was never seen (MLE is 0/0). Try smoothing.")
    summary = corpus_summary(model, corpus, unit) + notes_markdown(notes)
    return summary, explanation, table, figure


def score_table(score: SentenceScore):
    rows = [[i + 1, " ".join(short(t) for t in f.context) or "∅", short(f.word) + ("" if f.known else "  (unknown)"),
             f.count, f.context_count, f.p, math.log2(f.p) if f.p > 0 else -math.inf]
            for i, f in enumerate(score.factors)]
    frame = pd.DataFrame(rows, columns=["i", "context", "wᵢ", "count(ctx,wᵢ)", "count(ctx)", "P(wᵢ|ctx)", "log₂ P"])
    return (frame.style
            .apply(lambda row: [ZERO_STYLE if row["P(wᵢ|ctx)"] == 0 else ""] * len(row), axis=1)
            .format({"P(wᵢ|ctx)": fmt, "log₂ P": log2_text}))


def score_line(name: str, score: SentenceScore) -> str:
    p = score.probability
    pp = "∞ (a factor is 0)" if math.isinf(score.perplexity) else f"{score.perplexity:.2f}"
    return (f"**{name}:** P = {fmt(p)} · log₂ P = {log2_text(score.log2_prob)} · "
            f"perplexity = P^(−1/{len(score.factors)}) = {pp}"
            + (" · unknown: " + ", ".join(map(code, score.unknown)) if score.unknown else ""))


@friendly_errors
def score_sentences(corpus, own_text, upload, unit, lowercase, n, boundaries, smoothing, k, sentence_a, sentence_b,
                    progress=gr.Progress()):
    """Chain-rule scores of one or two sentences: every factor, the product, log₂ P and the perplexity."""
    model = get_model(corpus, own_text, upload, unit, lowercase, n, boundaries, progress)
    tokens_a = query_tokens(sentence_a, unit, lowercase)
    if not tokens_a:
        raise UserInputError("Sentence A is empty. Type a sentence to score.")
    a = model.score(tokens_a, smoothing, as_k(k))
    tokens_b = query_tokens(sentence_b, unit, lowercase)
    b = model.score(tokens_b, smoothing, as_k(k)) if tokens_b else None
    lines = [score_line("A", a)] + ([score_line("B", b)] if b else [])
    if b:
        if a.probability > 0 and b.probability > 0:
            ratio = a.probability / b.probability
            first, second, times = ("A", "B", ratio) if ratio >= 1 else ("B", "A", 1 / ratio)
            lines.append(f"→ the model finds **{first} {times:,.4g}× as likely as {second}**.")
        elif a.probability == 0 and b.probability == 0:
            lines.append("→ **both are 0**: each contains an n-gram never seen in the corpus (red rows). That is the "
                         "sparsity problem; switch smoothing to compare them.")
        else:
            lines.append(f"→ only **{'A' if a.probability > 0 else 'B'}** has a non-zero probability.")
    if smoothing == "mle" and (a.probability == 0 or (b and b.probability == 0)):
        lines.append("Under MLE an unseen n-gram gets probability **0**, and one zero factor makes the product 0.")
    notes = notes_markdown(a.notes + (b.notes if b else []))
    summary = corpus_summary(model, corpus, unit) + "\n\n" + "  \n".join(lines) + notes
    fig = go.Figure()
    for name, score, color in (("A", a, COLORWAY[0]), ("B", b, COLORWAY[1])):
        if score is not None:
            few = len(score.factors) <= 12  # label the bars with their token and value while they fit
            fig.add_bar(x=[str(i + 1) for i in range(len(score.factors))], y=[f.p for f in score.factors],
                        name=name, marker_color=color, hovertext=[label(f.word) for f in score.factors],
                        text=[f"{label(f.word)}<br>{fmt(f.p)}" for f in score.factors] if few else None,
                        textposition="outside", cliponaxis=False)
    fig.update_layout(barmode="group", xaxis=dict(type="category", title_text="factor i"),
                      yaxis=dict(title_text="P(wᵢ | context)"))
    figure = styled(fig, f"Chain-rule factors P(wᵢ | context): {SMOOTHING_NAMES[smoothing]}", 400)
    empty = pd.DataFrame(columns=["i"])
    return summary, score_table(a), score_table(b) if b else empty, figure


def generation_table(gen: Generation):
    rows = [[i + 1, " ".join(short(t) for t in step.context) or "∅", short(step.chosen), step.p_chosen,
             " · ".join(f"{short(w)} {p:.3f}" for w, p in step.candidates[:5])]
            for i, step in enumerate(gen.steps)]
    frame = pd.DataFrame(rows, columns=["step", "context", "drawn", "p(drawn)", "candidates after temperature & top-k"])
    return frame.style.format({"p(drawn)": "{:.3f}"})


@friendly_errors
def generate_text(corpus, own_text, upload, unit, lowercase, n, boundaries, smoothing, k, prompt, steps, temperature,
                  top_k, seed, progress=gr.Progress()):
    """Sample token by token from P(w | context)^(1/T), renormalised over the top-k tokens (seeded)."""
    model = get_model(corpus, own_text, upload, unit, lowercase, n, boundaries, progress)
    gen = model.generate(query_tokens(prompt, unit, lowercase), int(steps), smoothing, as_k(k), float(temperature),
                         whole_number(top_k, "top-k", 1), whole_number(seed, "the seed"))
    prompt_text = joined(gen.prompt, unit)
    new = joined(gen.tokens[len(gen.prompt):], unit)
    ended = " `</s>`" if gen.steps and gen.steps[-1].chosen == EOS else ""
    sep = "" if unit == CHARS else " "
    text = (f"**{prompt_text}**{sep}{new}{ended}" if prompt_text else f"{new}{ended}").strip()
    summary = (corpus_summary(model, corpus, unit) + f"\n\n### {text or '(nothing generated)'}\n"
               f"seed {whole_number(seed, 'the seed')} · temperature {float(temperature):g} · top-k {int(top_k)} · "
               f"{SMOOTHING_NAMES[smoothing]}; `<s>` and `<UNK>` are never drawn." + notes_markdown(gen.notes))
    if gen.steps:
        figure = bar([f"{i + 1}. {label(s.chosen)}" for i, s in enumerate(gen.steps)], [s.p_chosen for s in gen.steps],
                     "p(drawn) at each step (orange: not the most likely candidate)",
                     highlight=[s.chosen != s.candidates[0][0] for s in gen.steps])
    else:
        figure = empty_figure("Nothing was generated.")
    return summary, generation_table(gen), figure


# ----------------------------------------------------------------------------------------------------------------
# Presets (the seed's worked examples, §2.1)

PRESET_LABELS = [
    "Seed: P(词性 | 的) = 2/3 (MLE, word tokens)",
    "Seed: add-one (2+1)/(3+12) = 0.2",
    "Seed: P(词 | 的) = 2/3 (character tokens)",
    "判断这个词的词性 vs 判断这个词的磁性",
    "Moby-Dick trigram, Kneser-Ney",
]
# corpus, own text, unit, lowercase, n, boundaries, smoothing, k, context, word, sentence A, sentence B, prompt,
# steps, temperature, top-k, seed
PRESET_VALUES = [
    [TOY, "", WORDS, False, 2, False, "mle", 1, "的", "词性", "判断 单词 的 词性", "判断 单词 的 磁性",
     "北京", 10, 1.0, 5, 0],
    [TOY, "", WORDS, False, 2, False, "add_k", 1, "的", "词性", "判断 单词 的 词性", "判断 单词 的 磁性",
     "北京", 10, 1.0, 5, 0],
    [TOY, "", CHARS, False, 2, False, "mle", 1, "的", "词", "判断这个词的词性", "判断这个词的磁性",
     "北", 10, 1.0, 5, 0],
    [TOY, "", WORDS, False, 2, False, "add_k", 1, "的", "磁性", "判断 这个 词 的 词性", "判断 这个 词 的 磁性",
     "判断", 10, 1.0, 5, 0],
    [MOBY, "", WORDS, True, 3, True, "kneser_ney", 1, "the white", "whale", "call me ishmael .", "call me whale .",
     "the white", 25, 0.8, 10, 7],
]


PRESET_SLUGS = ["p-cixing-de", "add-one", "char-de", "cixing-vs-cixing", "moby-trigram"]
PRESETS = [presets.Preset(slug, label, tuple(values), "§2.1")
           for slug, label, values in zip(PRESET_SLUGS, PRESET_LABELS, PRESET_VALUES)]

# (seed §, question, answer, preset)
LESSON = [
    ("§2.1", "On the toy corpus, how likely is 词性 right after 的 under a bigram model without smoothing?",
     "的 occurs 3 times and is followed by 词性 twice, so P(词性 | 的) = count(的, 词性) / count(的) = 2/3 ≈ 0.6667. "
     "The table lists every follower of 的 with its count.", "p-cixing-de"),
    ("§2.1", "Add-one smoothing gives every pair one extra count. What is P(词性 | 的) now, and where does the 12 come "
     "from?", "(2 + 1) / (3 + 12) = 0.2: the corpus has 12 distinct words, so count(的) grows by |V| = 12. The mass "
     "taken from seen pairs goes to the 9 unseen followers.", "add-one"),
    ("§2.1", "Which sentence does the model prefer: 判断这个词的词性 or 判断这个词的磁性? What would plain MLE say?",
     "The 词性 version wins (see the ratio under “Score a sentence”): 的 → 词性 was seen twice, 的 → 磁性 never. "
     "Without smoothing both get probability 0, because 这个 and 词 never occur in the corpus: one unseen factor "
     "zeroes the whole product.", "cixing-vs-cixing"),
]


@friendly_errors
def run_preset(corpus, own_text, unit, lowercase, n, boundaries, smoothing, k, context, word, sentence_a,
               sentence_b, prompt, steps, temperature, top_k, seed, progress=gr.Progress()):
    """All three views (counts, sentence scores, generation) for one set of inputs."""
    model = (corpus, own_text, None, unit, lowercase, n, boundaries, smoothing, k)
    return (*show_counts(*model, context, word, progress),
            *score_sentences(*model, sentence_a, sentence_b, progress),
            *generate_text(*model, prompt, steps, temperature, top_k, seed, progress))


def build() -> None:
    gr.Markdown(INTRO)
    preset_row = gr.Column()  # filled at the end, once every component the presets set exists
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            corpus = gr.Radio([TOY, MOBY, OWN], value=TOY, label="Corpus")
            with gr.Accordion("My own text: paste or upload (UTF-8, ≤ 5 MB)", open=False):
                own_text = gr.Textbox(lines=4, label="Text, one sentence per line",
                                      placeholder="Pick “My own text” above.")
                upload = gr.File(file_types=[".txt"], type="filepath",
                                 label="…or a .txt file (used instead of the box)")
            unit = gr.Radio([WORDS, CHARS], value=WORDS, label="Tokens",
                            info="characters drop whitespace (suits unsegmented Chinese)")
            lowercase = gr.Checkbox(False, label="lowercase (English)")
            n = gr.Slider(1, MAX_ORDER, value=2, step=1, label="Order n (n = 2: bigram)")
            boundaries = gr.Checkbox(False, label="Sentence-boundary tokens <s> </s> (NLTK padding)")
            smoothing = gr.Radio(SMOOTHING_CHOICES, value="mle", label="Smoothing")
            k = gr.Number(1, label="k for add-k (1 = Laplace)", minimum=0.001, maximum=100)
            with gr.Accordion("Conventions: boundaries and |V|", open=False):
                gr.Markdown(CONVENTIONS)
        with gr.Column(scale=3):
            with gr.Tabs():
                with gr.Tab("Counts"):
                    with gr.Row():
                        context = gr.Textbox("的", label="Context (the last n−1 tokens are used)")
                        word = gr.Textbox("词性", label="Next token to explain")
                    counts_btn = gr.Button("Count", variant="primary")
                    counts_info = gr.Markdown()
                    counts_formula = gr.Markdown()
                    with gr.Row():
                        counts_table = gr.Dataframe(label="P_MLE = count(ctx, w) / count(ctx), ctx = the context",
                                                    max_height=420, scale=3,
                                                    column_widths=["16%", "26%", "20%", "19%", "19%"],
                                                        buttons=TABLE_BUTTONS)
                        counts_plot = gr.Plot(empty_figure("Press Count."), label="Next tokens", scale=2,
                            show_label=False)
                with gr.Tab("Score a sentence"):
                    with gr.Row():
                        sentence_a = gr.Textbox("判断 单词 的 词性", label="Sentence A")
                        sentence_b = gr.Textbox("判断 单词 的 磁性", label="Sentence B (optional)")
                    score_btn = gr.Button("Score with the chain rule", variant="primary")
                    score_info = gr.Markdown()
                    score_plot = gr.Plot(empty_figure("Press Score."), label="Factors", show_label=False)
                    table_a = gr.Dataframe(label="A: one factor per token (red: probability 0)", max_height=360,
                        buttons=TABLE_BUTTONS)
                    table_b = gr.Dataframe(label="B: one factor per token", max_height=360, buttons=TABLE_BUTTONS)
                with gr.Tab("Generate"):
                    with gr.Row():
                        prompt = gr.Textbox("北京", label="Start of the text (may be empty)", scale=2)
                        steps = gr.Slider(1, 50, value=10, step=1, label="tokens")
                        seed = gr.Number(0, label="seed", precision=0, minimum=0)
                    with gr.Row():
                        temperature = gr.Slider(0.1, 2.0, value=1.0, step=0.05, label="temperature T (p^(1/T))")
                        top_k = gr.Slider(1, 50, value=5, step=1, label="top-k")
                    gen_btn = gr.Button("Generate", variant="primary")
                    gen_info = gr.Markdown()
                    gen_plot = gr.Plot(empty_figure("Press Generate."), label="Drawn tokens", show_label=False)
                    gen_table = gr.Dataframe(label="Each step's distribution", max_height=420, wrap=True,
                        buttons=TABLE_BUTTONS)

    model_inputs = [corpus, own_text, upload, unit, lowercase, n, boundaries, smoothing, k]
    counts_inputs = model_inputs + [context, word]
    counts_outputs = [counts_info, counts_formula, counts_table, counts_plot]
    score_inputs, score_outputs = model_inputs + [sentence_a, sentence_b], [score_info, table_a, table_b, score_plot]
    gen_inputs = model_inputs + [prompt, steps, temperature, top_k, seed]
    gen_outputs = [gen_info, gen_table, gen_plot]
    preset_inputs = [corpus, own_text, unit, lowercase, n, boundaries, smoothing, k, context, word, sentence_a,
                     sentence_b, prompt, steps, temperature, top_k, seed]
    # 11 to 14 inputs each: preprocess them in the handler's thread (see preprocess_in_handler).
    counts_btn.click(preprocess_in_handler(show_counts, counts_inputs), counts_inputs, counts_outputs,
                     api_name="ngram_counts", preprocess=False)
    score_btn.click(preprocess_in_handler(score_sentences, score_inputs), score_inputs, score_outputs,
                    api_name="ngram_score", preprocess=False)
    gen_btn.click(preprocess_in_handler(generate_text, gen_inputs), gen_inputs, gen_outputs,
                  api_name="ngram_generate", preprocess=False)

    view = presets.View("ngram", "all", preset_inputs, counts_outputs + score_outputs + gen_outputs, run_preset,
                        PRESETS)
    with preset_row:
        view.buttons()
        presets.lesson_table(LESSON, view)
