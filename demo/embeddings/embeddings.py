"""Word embeddings tab (issue #4): from one-hot vectors to GloVe and a word2vec trained here (seed §2.2–§4)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import gradio as gr
import numpy as np
import pandas as pd

from core.loading import jobs
from core.text.corpora import load_corpus
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_LIST_CHARS, MAX_SHORT_TEXT_CHARS, MAX_WORD_CHARS
from core.text.seeds import SEED_Q
from core.text.textio import read_text_upload
from demo.embeddings import nnlm as embeddings_nnlm
from demo.kit import lessons, presets
from demo.server import result_cache
from demo.server.handlers import (TRAIN_QUEUE, TRAINER_GPU_SECONDS, friendly_errors, gpu_handler, stopped_error,
                                  stopped_note, training_run, whole_number)
from demo.kit.widgets import TABLE_BUTTONS, sig4, sig4_text
from demo.kit.figures import DIVERGING_SCALE, HIGHLIGHT, bar, empty_figure, heatmap, lines, scatter
from demo.kit.i18n import examples_table, label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
w2v = lazy_import("core.embeddings.embeddings")
word2vec = lazy_import("core.embeddings.word2vec")
if TYPE_CHECKING:  # annotations only: the module imports torch, which the app loads on first use
    from core.embeddings.word2vec import TrainedWord2Vec

TITLE = "Word embeddings"
HISTORY = [(3, "2003", "NNLM", "nnlm", "nnlm-toy"), (4, "2013", "word2vec", "word2vec", "king-queen")]  # timeline

MOBY, UPLOAD = "moby_dick", "upload"  # language-free choice values; the browser shows their labels
SKIPGRAM, CBOW = "skip-gram", "CBOW"


NEIGHBOUR_COLUMNS = ["embeddings.col_rank", "embeddings.col_word", "embeddings.col_cosine"]
NEIGHBOUR_LABELS = [label(key) for key in NEIGHBOUR_COLUMNS]  # the empty tables' headers, in the browser's language


def neighbour_headers() -> list[str]:
    return [t(key) for key in NEIGHBOUR_COLUMNS]


# ----------------------------------------------------------------------------------------------------------------
# Handlers


def _glove(progress: gr.Progress | None = None) -> w2v.WordVectors:
    if progress is not None:
        progress(0.1, desc=t("embeddings.progress_glove"))
    return w2v.load_glove()


def _neighbour_rows(neighbours: list[w2v.Neighbour]):
    rows = [[rank, n.word, sig4(n.score)] for rank, n in enumerate(neighbours, 1)]
    return pd.DataFrame(rows, columns=neighbour_headers())


@friendly_errors
def compare_one_hot(words_text: str, progress=gr.Progress()):
    """One-hot vectors of the words, their cosine matrix (all 0 off the diagonal), and GloVe's cosine matrix."""
    words = w2v.parse_words(words_text, limit=w2v.MAX_QUERY_WORDS)
    if len(words) < 2:
        raise UserInputError("embeddings.err.two_words")
    one_hots = np.stack([w2v.one_hot(i, len(words)) for i in range(len(words))])  # (N, N): vocabulary = these words
    one_hot_fig = heatmap(one_hots, [f"{i + 1}" for i in range(len(words))], words, t("embeddings.fig_one_hot"),
                          x_title=t("embeddings.axis_position"), y_title=t("embeddings.axis_word"), value_format=".0f")
    one_hot_cos = heatmap(w2v.cosine_matrix(one_hots), words, words, t("embeddings.fig_one_hot_cos"),
                          zmin=-1, zmax=1, colorscale=DIVERGING_SCALE, zmid=0)
    glove = _glove(progress)
    try:
        dense = np.stack([glove.vector(w) for w in words])  # (N, 50)
    except w2v.UnknownWordError as exc:
        return one_hot_fig, one_hot_cos, empty_figure(t("embeddings.fig_glove_missing")), str(exc)
    cosines = w2v.cosine_matrix(dense)  # (N, N)
    dense_cos = heatmap(cosines, words, words, t("embeddings.fig_glove_cos"),
                        zmin=-1, zmax=1, colorscale=DIVERGING_SCALE, zmid=0)
    pairs = [(float(cosines[i, j]), words[i], words[j]) for i in range(len(words)) for j in range(i + 1, len(words))]
    best = max(pairs)
    summary = t("embeddings.onehot_summary", low=f"{min(pairs)[0]:.2f}", high=f"{best[0]:.2f}", a=best[1], b=best[2])
    return one_hot_fig, one_hot_cos, dense_cos, summary


@friendly_errors
def one_hot_lookup(word_number: float):
    """The seed's lookup: the one-hot vector of word n times the 5×3 matrix Q is row n of Q."""
    size = len(SEED_Q)
    if word_number is None or int(word_number) != word_number:
        raise UserInputError("embeddings.err.word_number", number=word_number, size=size)
    index = int(word_number) - 1
    vector = w2v.one_hot(index, size)
    row = w2v.lookup(vector, SEED_Q)
    fig = heatmap(SEED_Q, [t("embeddings.dim_n", n=j + 1) for j in range(3)],
                  [t("embeddings.word_n", n=i + 1) for i in range(size)], t("embeddings.fig_q"), value_format=".0f",
                  height=360)
    fig.add_shape(type="rect", x0=-0.5, x1=2.5, y0=index - 0.5, y1=index + 0.5,
                  line=dict(color=HIGHLIGHT, width=4))
    fmt = lambda v: "[" + " ".join(f"{x:g}" for x in v) + "]"
    equation = f"**{fmt(vector)} × Q = {fmt(row)}**\n\n" + t("embeddings.lookup_explained", position=index + 1)
    return equation, fig


@friendly_errors
def neighbours(word: str, topn: float, progress=gr.Progress()):
    glove = _glove(progress)
    if not (word or "").strip():
        raise UserInputError("embeddings.err.type_word")
    found = glove.most_similar([word], topn=int(topn))
    fig = bar([n.word for n in found], [n.score for n in found],
              t("embeddings.fig_neighbours", word=word.strip().lower()), value_title=t("embeddings.axis_cosine"))
    return fig, _neighbour_rows(found)


@friendly_errors
def analogy(a: str, b: str, c: str, topn: float, progress=gr.Progress()):
    """a − b + c: king − man + woman ≈ queen."""
    glove = _glove(progress)
    words = [(w or "").strip().lower() for w in (a, b, c)]
    if not all(words):
        raise UserInputError("embeddings.err.three_words")
    found = glove.most_similar([words[0], words[2]], [words[1]],
                               topn=whole_number(topn, t("embeddings.answers"), 1))  # NaN from an API client
    title = f"{words[0]} − {words[1]} + {words[2]} ≈ ?"
    fig = bar([n.word for n in found], [n.score for n in found], title, value_title=t("embeddings.axis_cosine"),
              highlight=[i == 0 for i in range(len(found))])
    return fig, t("embeddings.analogy_result", a=words[0], b=words[1], c=words[2], answer=found[0].word,
                  cosine=f"{found[0].score:.3f}")


@friendly_errors
def projection(words_text: str, neighbours_per_word: float, dims: str, progress=gr.Progress()):
    glove = _glove(progress)
    words = w2v.parse_words(words_text)
    result = w2v.project(glove, words, int(neighbours_per_word), 3 if dims == "3D" else 2)
    axes = [t("embeddings.axis_pc", n=i + 1, share=f"{share:.0%}") for i, share in enumerate(result.explained)]
    fig = scatter(result.coords, result.words, result.groups, t("embeddings.fig_projection"),
                  highlight=result.is_query, axis_titles=axes)
    note = t("embeddings.projection_note", points=len(result.words), dims=len(axes),
             share=f"{result.explained.sum():.0%}")
    return fig, "\n\n".join([note, *result.notes])


@friendly_errors
def static_vectors(word: str, first: str, second: str, progress=gr.Progress()):
    glove = _glove(progress)
    result = w2v.static_occurrences(glove, word, [first, second])
    labels = [t("embeddings.sentence_n", n=i + 1) for i in range(len(result.sentences))]
    vectors_fig = heatmap(result.vectors, [str(i + 1) for i in range(glove.dim)], labels,
                          t("embeddings.fig_static", word=result.word),
                          colorscale=DIVERGING_SCALE, zmid=0, x_title=t("embeddings.axis_dimension"), annotate=False,
                          height=300)
    found = glove.most_similar([result.word], topn=10)
    nb_fig = bar([n.word for n in found], [n.score for n in found], t("embeddings.fig_static_neighbours",
                                                                        word=result.word),
                 value_title=t("embeddings.axis_cosine"))
    summary = t("embeddings.static_summary", word=result.word, cosine=f"{result.cosine[0, 1]:.3f}")
    return summary, vectors_fig, nb_fig


@friendly_errors
@gpu_handler(duration=TRAINER_GPU_SECONDS)
def train(source: str, upload: str | None, architecture: str, dim: float, window: float, epochs: float,
          min_count: float, progress=gr.Progress(), request: gr.Request = None):
    """Train word2vec; the model is kept in this browser session's state (never written to disk). A run has a
    work budget and replaces this session's previous run (demo.server.handlers.training_run)."""
    if source == UPLOAD:
        if not upload:
            raise UserInputError("embeddings.err.no_upload")
        text = read_text_upload(upload)
    else:
        text = load_corpus("moby_dick")
    config = _config(architecture, dim, window, epochs, min_count)
    progress(0.0, desc=t("embeddings.progress_preparing"))
    with training_run(request) as budget:
        model = word2vec.train_word2vec(text, config, progress=lambda fraction, message: progress(fraction, desc=message),
                                   stop=budget.stop_reason)
    if model.stopped == jobs.REPLACED:
        raise stopped_error(model.stopped, budget.elapsed, model.loss_steps[-1], model.steps_planned)
    loss_name = t("embeddings.loss_name")
    fig = lines(model.loss_steps, {loss_name: model.losses}, t("embeddings.fig_loss", architecture=architecture),
                x_title=t("embeddings.axis_step", batch=f"{config.batch_size:,}"), y_title=t("embeddings.axis_loss"))
    summary = t("embeddings.train_summary", architecture=architecture, dim=config.dim, window=config.window,
                epochs=config.epochs, tokens=f"{model.tokens:,}", vocab=f"{len(model.vectors):,}",
                min_count=config.min_count, seconds=f"{model.seconds:.1f}", first=f"{model.losses[0]:.3f}",
                last=f"{model.losses[-1]:.3f}")
    if model.cut_tokens:
        summary += " " + t("embeddings.train_cut", limit=f"{word2vec.MAX_TRAIN_TOKENS:,}", cut=f"{model.cut_tokens:,}")
    if model.stopped:
        summary += " " + stopped_note(model.stopped, budget.elapsed, model.loss_steps[-1], model.steps_planned)
    return fig, summary, model


def _config(architecture: str, dim: float, window: float, epochs: float, min_count: float) -> word2vec.Word2VecConfig:
    return word2vec.Word2VecConfig(architecture="cbow" if architecture == CBOW else "skipgram", dim=int(dim),
                              window=int(window), epochs=int(epochs), min_count=int(min_count))


@friendly_errors
@gpu_handler
def before_training(architecture: str, dim: float, window: float, epochs: float, min_count: float, word: str,
                    topn: float):
    """The Train view before training: the very model train() starts from on Moby-Dick (its seed and
    initialisation), its loss at step 0, and its (random) neighbours next to GloVe's; kept as the session's model."""
    config = _config(architecture, dim, window, epochs, min_count)
    model = word2vec.untrained_word2vec(load_corpus("moby_dick"), config)
    fig = lines(model.loss_steps, {t("embeddings.before.loss_name"): model.losses},
                t("embeddings.before.fig_loss", architecture=architecture),
                x_title=t("embeddings.axis_step", batch=f"{config.batch_size:,}"), y_title=t("embeddings.axis_loss"))
    pairs = 1 + config.negatives
    summary = t("embeddings.before.summary", architecture=architecture, dim=config.dim, window=config.window,
                vocab=f"{len(model.vectors):,}", min_count=config.min_count, negatives=config.negatives, pairs=pairs,
                expected=sig4_text(pairs * np.log(2)), loss=sig4_text(model.losses[0]))
    return fig, summary, model, *compare_spaces(model, word, topn)


@friendly_errors
def compare_spaces(model: TrainedWord2Vec | None, word: str, topn: float, progress=gr.Progress()):
    """Neighbours of a word in the trained space and in GloVe, side by side."""
    if model is None:
        raise UserInputError("embeddings.err.train_first")
    if not (word or "").strip():
        raise UserInputError("embeddings.err.type_corpus_word")
    ours = _neighbour_rows(model.vectors.most_similar([word], topn=int(topn)))
    glove = _glove(progress)
    try:
        theirs, note = _neighbour_rows(glove.most_similar([word], topn=int(topn))), ""
    except w2v.UnknownWordError as exc:
        theirs, note = _neighbour_rows([]), str(exc)
    if not model.trained:
        note = " ".join(filter(None, [t("embeddings.before.neighbours_note"), note]))
    return ours, theirs, note


# ----------------------------------------------------------------------------------------------------------------
# Layout


P = presets.Preset
ONE_HOT_PRESETS = [P("one-hot-cosine", "king, queen, man, woman, apple", ("king, queen, man, woman, apple",), "§3"),
                   P("vehicles", "cat, dog, car, truck, banana", ("cat, dog, car, truck, banana",), "§3"),
                   P("cities", "paris, london, tokyo, happy, sad", ("paris, london, tokyo, happy, sad",), "§3")]
LOOKUP_PRESETS = [P("one-hot-times-q", label("embeddings.preset.one_hot_times_q"), (4,), "§2.2"),
                  P("word-1", label("embeddings.preset.word_1"), (1,), "§2.2")]
# The preset labels that are the input words themselves need no translation (GloVe's words are English).
NEIGHBOUR_PRESETS = [P("frog", "frog", ("frog", 10), "§4"), P("bank-neighbours", "bank", ("bank", 10), "§4"),
                     P("python", "python", ("python", 10), "§4"), P("beijing", "beijing", ("beijing", 10), "§4")]
ANALOGY_PRESETS = [P("king-queen", "king − man + woman", ("king", "man", "woman", 5), "§4"),
                   P("paris-berlin", "paris − france + germany", ("paris", "france", "germany", 5), "§4"),
                   P("walking-swimming", "walking − walk + swim", ("walking", "walk", "swim", 5), "§4"),
                   P("bigger-smaller", "bigger − big + small", ("bigger", "big", "small", 5), "§4")]
PROJECTION_PRESETS = [
    P("capitals", label("embeddings.preset.capitals"),
      ("king, queen, man, woman, paris, france, berlin, germany", 3, "2D"), "§4"),
    P("animals-vehicles-3d", label("embeddings.preset.animals_vehicles_3d"),
      ("cat, dog, horse, car, truck, train, red, blue", 4, "3D"), "§4"),
    P("days-numbers", label("embeddings.preset.days_numbers"), ("monday, january, one, two, apple, banana", 3, "2D"),
      "§4")]
STATIC_PRESETS = [
    P("static-bank", label("embeddings.preset.static_bank"),
      ("bank", "We sat on the river bank and watched the water.", "She opened a savings account at the bank."), "§4"),
    P("static-bat", label("embeddings.preset.static_bat"),
      ("bat", "The bat flew out of the cave at dusk.", "He swung the bat and hit the ball."), "§4")]
# The Train view before training (random initialisation): inputs (architecture, dim, window, epochs, min count, word,
# neighbours), the sliders' defaults.
BEFORE_TRAINING_PRESETS = [
    P("before-training", label("embeddings.before.preset_skipgram"), (SKIPGRAM, 50, 4, 3, 5, "whale", 10), "§4"),
    P("before-training-cbow", label("embeddings.before.preset_cbow"), (CBOW, 50, 4, 3, 5, "whale", 10), "§4")]
# (seed §, question, answer, view key, preset)
LESSON = [(section, label(f"embeddings.lesson.q{i}"), label(f"embeddings.lesson.a{i}"), view, slug)
          for i, (section, view, slug) in enumerate([("§2.2", "lookup", "one-hot-times-q"),
                                                     ("§3", "onehot", "one-hot-cosine"),
                                                     ("§4", "static", "static-bank")], 1)]


def build() -> None:
    gr.Markdown(label("embeddings.intro"))
    lesson_slot = gr.Column()
    with gr.Tabs(overflow_behavior="wrap"):
        with gr.Tab(label("embeddings.tab_onehot"), id="onehot") as onehot_tab:
            with gr.Row():
                with gr.Column(scale=1):
                    words = gr.Textbox("king, queen, man, woman, apple", label=label("embeddings.words"),
                                       max_length=MAX_LIST_CHARS)
                    compare_button = gr.Button(label("embeddings.compare_btn"), variant="primary")
                compare_md = gr.Markdown()
            with gr.Row():
                one_hot_plot = gr.Plot(show_label=False)
                one_hot_cos_plot = gr.Plot(show_label=False)
                dense_cos_plot = gr.Plot(show_label=False)
            compare_button.click(compare_one_hot, [words], [one_hot_plot, one_hot_cos_plot, dense_cos_plot, compare_md],
                                 api_name="embeddings_onehot")
            onehot_view = presets.View("embeddings", "onehot", [words],
                                       [one_hot_plot, one_hot_cos_plot, dense_cos_plot, compare_md], compare_one_hot,
                                       ONE_HOT_PRESETS, where=onehot_tab)
            onehot_view.buttons()

            gr.Markdown(label("embeddings.lookup_title"))
            with gr.Row():
                with gr.Column(scale=1):
                    word_number = gr.Slider(1, len(SEED_Q), value=4, step=1, label=label("embeddings.word_number"))
                    lookup_button = gr.Button(label("embeddings.lookup_btn"), variant="primary")
                    lookup_md = gr.Markdown()
                q_plot = gr.Plot(show_label=False)
            lookup_button.click(one_hot_lookup, [word_number], [lookup_md, q_plot], api_name="embeddings_lookup")
            lookup_view = presets.View("embeddings", "lookup", [word_number], [lookup_md, q_plot], one_hot_lookup,
                                       LOOKUP_PRESETS, where=onehot_tab)
            lookup_view.buttons()

        with gr.Tab(label("embeddings.tab_nnlm"), id="nnlm") as nnlm_tab:
            nnlm_inputs, nnlm_outputs = embeddings_nnlm.build()
            nnlm_view = presets.View("embeddings", "nnlm", nnlm_inputs, nnlm_outputs, embeddings_nnlm.train_and_predict,
                                     embeddings_nnlm.PRESETS, where=nnlm_tab)
            nnlm_view.buttons()

        with gr.Tab(label("embeddings.tab_glove"), id="glove") as glove_tab:
            gr.Markdown(label("embeddings.glove_note"))
            with gr.Row():
                with gr.Column(scale=1):
                    query = gr.Textbox("frog", label=label("embeddings.word"), max_length=MAX_WORD_CHARS)
                    topn = gr.Slider(1, 30, value=10, step=1, label=label("embeddings.neighbours"))
                    query_button = gr.Button(label("embeddings.neighbours_btn"), variant="primary")
                with gr.Column(scale=2):
                    neighbours_plot = gr.Plot(show_label=False)
                    neighbours_table = gr.Dataframe(interactive=False, label=label("embeddings.neighbours_table"),
                                                    buttons=TABLE_BUTTONS)
            query_button.click(neighbours, [query, topn], [neighbours_plot, neighbours_table],
                               api_name="embeddings_neighbours")
            query.submit(neighbours, [query, topn], [neighbours_plot, neighbours_table],
                         api_name="embeddings_neighbours_submit", api_visibility="undocumented")
            presets.View("embeddings", "neighbours", [query, topn], [neighbours_plot, neighbours_table], neighbours,
                         NEIGHBOUR_PRESETS, where=glove_tab).buttons()

            gr.Markdown(label("embeddings.analogy_title"))
            with gr.Row():
                with gr.Column(scale=1):
                    with gr.Row():
                        a = gr.Textbox("king", label="a", max_length=MAX_WORD_CHARS)
                        b = gr.Textbox("man", label="− b", max_length=MAX_WORD_CHARS)
                        c = gr.Textbox("woman", label="+ c", max_length=MAX_WORD_CHARS)
                    analogy_topn = gr.Slider(1, 20, value=5, step=1, label=label("embeddings.answers"))
                    analogy_button = gr.Button(label("embeddings.solve_btn"), variant="primary")
                    analogy_md = gr.Markdown()
                analogy_plot = gr.Plot(show_label=False)
            analogy_button.click(result_cache.cached(analogy, "embeddings_analogy", {}), [a, b, c, analogy_topn],
                                 [analogy_plot, analogy_md],
                                 api_name="embeddings_analogy")
            presets.View("embeddings", "analogy", [a, b, c, analogy_topn], [analogy_plot, analogy_md], analogy,
                         ANALOGY_PRESETS, where=glove_tab).buttons()

        with gr.Tab(label("embeddings.tab_projection"), id="projection") as projection_tab:
            gr.Markdown(label("embeddings.projection_intro"))
            with gr.Row():
                with gr.Column(scale=1):
                    projection_words = gr.Textbox("king, queen, man, woman, paris, france, berlin, germany",
                                                  label=label("embeddings.projection_words"), lines=3,
                                                  max_length=MAX_LIST_CHARS)
                    per_word = gr.Slider(0, 20, value=3, step=1, label=label("embeddings.per_word"))
                    dims = gr.Radio(["2D", "3D"], value="2D", label=label("embeddings.view"))
                    projection_button = gr.Button(label("embeddings.project_btn"), variant="primary")
                    projection_md = gr.Markdown()
                projection_plot = gr.Plot(show_label=False)
            projection_button.click(projection, [projection_words, per_word, dims], [projection_plot, projection_md],
                                    api_name="embeddings_projection")
            presets.View("embeddings", "projection", [projection_words, per_word, dims], [projection_plot, projection_md],
                         projection, PROJECTION_PRESETS, where=projection_tab).buttons()

        with gr.Tab(label("embeddings.tab_static"), id="static") as static_tab:
            gr.Markdown(label("embeddings.static_note"))
            with gr.Row():
                with gr.Column(scale=1):
                    static_word = gr.Textbox("bank", label=label("embeddings.word"), max_length=MAX_WORD_CHARS)
                    first = gr.Textbox("We sat on the river bank and watched the water.",
                                       label=label("embeddings.sentence_1"), max_length=MAX_SHORT_TEXT_CHARS)
                    second = gr.Textbox("She opened a savings account at the bank.", label=label("embeddings.sentence_2"),
                                        max_length=MAX_SHORT_TEXT_CHARS)
                    static_button = gr.Button(label("embeddings.static_btn"), variant="primary")
                    static_md = gr.Markdown()
                with gr.Column(scale=2):
                    static_plot = gr.Plot(show_label=False)
                    static_neighbours = gr.Plot(show_label=False)
            static_button.click(static_vectors, [static_word, first, second], [static_md, static_plot, static_neighbours],
                                api_name="embeddings_static")
            static_view = presets.View("embeddings", "static", [static_word, first, second],
                                       [static_md, static_plot, static_neighbours], static_vectors, STATIC_PRESETS,
                                       where=static_tab)
            static_view.buttons()

        with gr.Tab(label("embeddings.tab_train"), id="train") as train_tab:
            gr.Markdown(label("embeddings.train_note"))
            before_bar = gr.Column()
            model = gr.State(None)  # this session's TrainedWord2Vec; kept in memory only
            with gr.Row():
                with gr.Column(scale=1):
                    source = gr.Radio([(label("embeddings.corpus_moby"), MOBY),
                                       (label("embeddings.corpus_upload"), UPLOAD)], value=MOBY,
                                      label=label("embeddings.corpus"))
                    upload = gr.File(label=label("embeddings.upload"), file_types=[".txt"], type="filepath")
                    architecture = gr.Radio([SKIPGRAM, CBOW], value=SKIPGRAM, label=label("embeddings.architecture"))
                    with gr.Row():
                        dim = gr.Slider(10, 200, value=50, step=10, label=label("embeddings.dimensions"))
                        window = gr.Slider(1, 10, value=4, step=1, label=label("embeddings.window"))
                    with gr.Row():
                        epochs = gr.Slider(1, 10, value=3, step=1, label=label("embeddings.epochs"))
                        min_count = gr.Slider(1, 50, value=5, step=1, label=label("embeddings.min_count"))
                    train_button = gr.Button(label("embeddings.train_btn"), variant="primary")
                with gr.Column(scale=2):
                    loss_plot = gr.Plot(show_label=False)
                    train_md = gr.Markdown(label("embeddings.train_hint"))
            examples_table([[SKIPGRAM, 50, 4, 3, 5], [CBOW, 50, 4, 8, 5]], [architecture, dim, window, epochs, min_count],
                           label("embeddings.train_examples"), api_name="embeddings_train_example")
            trained = train_button.click(train, [source, upload, architecture, dim, window, epochs, min_count],
                                         [loss_plot, train_md, model], api_name="embeddings_train", **TRAIN_QUEUE)

            gr.Markdown(label("embeddings.compare_title"))
            with gr.Row():
                compare_word = gr.Textbox("whale", label=label("embeddings.word"), max_length=MAX_WORD_CHARS)
                compare_topn = gr.Slider(1, 30, value=10, step=1, label=label("embeddings.neighbours"))
                compare_button = gr.Button(label("embeddings.compare_neighbours_btn"), variant="primary")
            examples_table([["whale"], ["ship"], ["sea"], ["captain"], ["harpoon"]], [compare_word],
                           label("embeddings.compare_examples"), api_name="embeddings_compare_example")
            with gr.Row():
                ours_table = gr.Dataframe(headers=NEIGHBOUR_LABELS, interactive=False,
                                          label=label("embeddings.your_word2vec"), buttons=TABLE_BUTTONS)
                glove_table = gr.Dataframe(headers=NEIGHBOUR_LABELS, interactive=False, label="GloVe 6B 50d",
                                           buttons=TABLE_BUTTONS)
            spaces_md = gr.Markdown()
            compare_button.click(compare_spaces, [model, compare_word, compare_topn], [ours_table, glove_table, spaces_md],
                                 api_name="embeddings_compare")
            # The comparison follows the model: the untrained one on first open, the trained one after training.
            trained.success(compare_spaces, [model, compare_word, compare_topn], [ours_table, glove_table, spaces_md],
                            api_name="embeddings_compare_trained", api_visibility="undocumented")
            before = presets.View("embeddings", "train", [architecture, dim, window, epochs, min_count, compare_word,
                                                          compare_topn],
                                  [loss_plot, train_md, model, ours_table, glove_table, spaces_md], before_training,
                                  BEFORE_TRAINING_PRESETS, where=train_tab)
            with before_bar:
                before.buttons()

    views = {"lookup": lookup_view, "onehot": onehot_view, "static": static_view}
    with lesson_slot:
        lessons.lesson_table(LESSON, views)
