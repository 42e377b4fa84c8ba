"""Word embeddings tab (issue #4): from one-hot vectors to GloVe and a word2vec trained here (seed §2.2–§4)."""
from __future__ import annotations

import gradio as gr
import numpy as np

from core import embeddings as w2v
from core import jobs
from core.corpora import load_corpus
from core.errors import UserInputError
from core.textio import read_text_upload
from demo import embeddings_nnlm, presets
from demo.common import TABLE_BUTTONS, TRAIN_QUEUE, friendly_errors, gpu_handler, stopped_note, training_run, whole_number
from demo.figures import DIVERGING_SCALE, HIGHLIGHT, bar, empty_figure, heatmap, lines, scatter

TITLE = "Word embeddings"

MOBY, UPLOAD = "Moby-Dick (bundled, 1.2 MB)", "My own .txt file"
SKIPGRAM, CBOW = "skip-gram", "CBOW"
NEIGHBOUR_HEADERS = ["rank", "word", "cosine"]

INTRO = """
### From one-hot vectors to dense word vectors
A one-hot vector has one 1 per word and is as long as the vocabulary, so two different words always have
cosine similarity **0**: it cannot say that *king* is closer to *queen* than to *apple*. A word embedding is a row of a
learned matrix **Q**: the one-hot vector times Q picks that row, **v = one-hot × Q**. Dense rows can be similar.
Cosine similarity: **cos(a, b) = a·b / (|a| |b|)**.
"""

GLOVE_NOTE = """
**GloVe 6B 50d**: 400,000 lower-case words from Wikipedia 2014 + Gigaword 5, 50 dimensions (Pennington et al., 2014).
Neighbours are ranked by cosine. An analogy *a − b + c* ranks words by cosine to unit(a) − unit(b) + unit(c),
leaving out the three input words (the same rule as gensim's `most_similar`).
"""

STATIC_NOTE = """
### One word, one vector
A static embedding is a lookup table: the row for *bank* is the same whether the sentence is about a river or
about money, so the cosine between the two occurrences is exactly **1**. One vector must serve both senses, and
the more frequent one (money) wins: the nearest neighbours are all about finance. Contextual models (ELMo, then
BERT in the later tabs) give each occurrence its own vector.
"""

TRAIN_NOTE = """
### Train your own word2vec (negative sampling)
**CBOW** predicts the middle word from the mean of its context vectors; **skip-gram** predicts each context word
from the middle word. Instead of a softmax over the vocabulary, each true pair (c, o) is pushed together and
k random "noise" words apart: **loss = −log σ(u_o·v_c) − Σₖ log σ(−u_k·v_c)** (noise drawn ∝ count^¾).
Frequent words (*the*, *of*) are randomly skipped, and words seen fewer than *min count* times are dropped.
The defaults train on Moby-Dick in well under a minute on a laptop CPU.
"""


# ----------------------------------------------------------------------------------------------------------------
# Handlers


def _glove(progress: gr.Progress | None = None) -> w2v.WordVectors:
    if progress is not None:
        progress(0.1, desc="Loading GloVe 6B 50d (400,000 words)…")
    return w2v.load_glove()


def _neighbour_rows(neighbours: list[w2v.Neighbour]) -> list[list]:
    return [[rank, n.word, round(n.score, 4)] for rank, n in enumerate(neighbours, 1)]


@friendly_errors
def compare_one_hot(words_text: str, progress=gr.Progress()):
    """One-hot vectors of the words, their cosine matrix (all 0 off the diagonal), and GloVe's cosine matrix."""
    words = w2v.parse_words(words_text, limit=w2v.MAX_QUERY_WORDS)
    if len(words) < 2:
        raise UserInputError("Enter at least two different words to compare.")
    one_hots = np.stack([w2v.one_hot(i, len(words)) for i in range(len(words))])  # (N, N): vocabulary = these words
    one_hot_fig = heatmap(one_hots, [f"{i + 1}" for i in range(len(words))], words, "One-hot vectors",
                          x_title="position in the vocabulary", y_title="word", value_format=".0f")
    one_hot_cos = heatmap(w2v.cosine_matrix(one_hots), words, words, "One-hot: cosine similarity",
                          zmin=-1, zmax=1, colorscale=DIVERGING_SCALE, zmid=0)
    glove = _glove(progress)
    try:
        dense = np.stack([glove.vector(w) for w in words])  # (N, 50)
    except w2v.UnknownWordError as exc:
        return one_hot_fig, one_hot_cos, empty_figure("GloVe has no vector for one of these words"), str(exc)
    cosines = w2v.cosine_matrix(dense)  # (N, N)
    dense_cos = heatmap(cosines, words, words, "GloVe 50d: cosine similarity",
                        zmin=-1, zmax=1, colorscale=DIVERGING_SCALE, zmid=0)
    pairs = [(float(cosines[i, j]), words[i], words[j]) for i in range(len(words)) for j in range(i + 1, len(words))]
    best = max(pairs)
    summary = (f"One-hot: every pair has cosine **0**. GloVe: cosines range from **{min(pairs)[0]:.2f}** to "
               f"**{best[0]:.2f}** (*{best[1]}* and *{best[2]}* are the closest pair).")
    return one_hot_fig, one_hot_cos, dense_cos, summary


@friendly_errors
def one_hot_lookup(word_number: float):
    """The seed's lookup: the one-hot vector of word n times the 5×3 matrix Q is row n of Q."""
    size = len(w2v.SEED_Q)
    if word_number is None or int(word_number) != word_number:
        raise UserInputError(f"Pick a whole word number from 1 to {size}.")
    index = int(word_number) - 1
    vector = w2v.one_hot(index, size)
    row = w2v.lookup(vector, w2v.SEED_Q)
    fig = heatmap(w2v.SEED_Q, ["dim 1", "dim 2", "dim 3"], [f"word {i + 1}" for i in range(size)],
                  "Q (5 words × 3 dimensions): the lookup picks one row", value_format=".0f", height=360)
    fig.add_shape(type="rect", x0=-0.5, x1=2.5, y0=index - 0.5, y1=index + 0.5,
                  line=dict(color=HIGHLIGHT, width=4))
    fmt = lambda v: "[" + " ".join(f"{x:g}" for x in v) + "]"  # noqa: E731
    equation = (f"**{fmt(vector)} × Q = {fmt(row)}**\n\nEvery entry of the product is Σᵢ onehotᵢ·Qᵢⱼ; only the 1 "
                f"in position {index + 1} survives, so the product is row {index + 1} of Q. That is why an embedding "
                "layer is implemented as a table lookup, not a matrix product.")
    return equation, fig


@friendly_errors
def neighbours(word: str, topn: float, progress=gr.Progress()):
    glove = _glove(progress)
    if not (word or "").strip():
        raise UserInputError("Type a word, for example: frog.")
    found = glove.most_similar([word], topn=int(topn))
    fig = bar([n.word for n in found], [n.score for n in found], f"Nearest neighbours of '{word.strip().lower()}' "
              "in GloVe 6B 50d", value_title="cosine similarity")
    return fig, _neighbour_rows(found)


@friendly_errors
def analogy(a: str, b: str, c: str, topn: float, progress=gr.Progress()):
    """a − b + c: king − man + woman ≈ queen."""
    glove = _glove(progress)
    words = [(w or "").strip().lower() for w in (a, b, c)]
    if not all(words):
        raise UserInputError("Fill in all three words, for example: king − man + woman.")
    found = glove.most_similar([words[0], words[2]], [words[1]],
                               topn=whole_number(topn, "the number of neighbours", 1))  # NaN from an API client
    title = f"{words[0]} − {words[1]} + {words[2]} ≈ ?"
    fig = bar([n.word for n in found], [n.score for n in found], title, value_title="cosine similarity",
              highlight=[i == 0 for i in range(len(found))])
    return fig, f"**{words[0]} − {words[1]} + {words[2]} ≈ {found[0].word}** (cosine {found[0].score:.3f})"


@friendly_errors
def projection(words_text: str, neighbours_per_word: float, dims: str, progress=gr.Progress()):
    glove = _glove(progress)
    words = w2v.parse_words(words_text)
    result = w2v.project(glove, words, int(neighbours_per_word), 3 if dims == "3D" else 2)
    axes = [f"PC{i + 1} ({share:.0%} of variance)" for i, share in enumerate(result.explained)]
    fig = scatter(result.coords, result.words, result.groups, "GloVe 50d → PCA: words and their neighbours",
                  highlight=result.is_query, axis_titles=axes)
    note = (f"{len(result.words)} points. PCA keeps the {len(axes)} directions of largest variance "
            f"({result.explained.sum():.0%} of it); distances in the plot only approximate the 50-d cosines.")
    return fig, "\n\n".join([note, *result.notes])


@friendly_errors
def static_vectors(word: str, first: str, second: str, progress=gr.Progress()):
    glove = _glove(progress)
    result = w2v.static_occurrences(glove, word, [first, second])
    labels = [f"sentence {i + 1}" for i in range(len(result.sentences))]
    vectors_fig = heatmap(result.vectors, [str(i + 1) for i in range(glove.dim)], labels,
                          f"GloVe vector of '{result.word}' in each sentence (50 dimensions)",
                          colorscale=DIVERGING_SCALE, zmid=0, x_title="dimension", annotate=False, height=300)
    found = glove.most_similar([result.word], topn=10)
    nb_fig = bar([n.word for n in found], [n.score for n in found],
                 f"Neighbours of '{result.word}' (one list for every sense)", value_title="cosine similarity")
    summary = (f"cos(*{result.word}* in sentence 1, *{result.word}* in sentence 2) = **{result.cosine[0, 1]:.3f}**: "
               "the same row of the table, whatever the context.")
    return summary, vectors_fig, nb_fig


@friendly_errors
@gpu_handler
def train(source: str, upload: str | None, architecture: str, dim: float, window: float, epochs: float,
          min_count: float, progress=gr.Progress(), request: gr.Request = None):
    """Train word2vec; the model is kept in this browser session's state (never written to disk). A run has a
    work budget and replaces this session's previous run (demo.common.training_run)."""
    if source == UPLOAD:
        if not upload:
            raise UserInputError("Choose a .txt file to upload, or pick the bundled Moby-Dick corpus.")
        text = read_text_upload(upload)
    else:
        text = load_corpus("moby_dick")
    config = w2v.Word2VecConfig(architecture="cbow" if architecture == CBOW else "skipgram", dim=int(dim),
                                window=int(window), epochs=int(epochs), min_count=int(min_count))
    progress(0.0, desc="Preparing the corpus…")
    with training_run(request) as budget:
        model = w2v.train_word2vec(text, config, progress=lambda fraction, message: progress(fraction, desc=message),
                                   stop=budget.stop_reason)
    if model.stopped == jobs.REPLACED:
        raise UserInputError(stopped_note(model.stopped, budget.elapsed, model.loss_steps[-1], model.steps_planned))
    fig = lines(model.loss_steps, {"negative-sampling loss": model.losses}, f"{architecture} training loss",
                x_title=f"step (batch of {config.batch_size:,} examples)", y_title="loss")
    summary = (f"Trained **{architecture}** ({config.dim}d, window {config.window}, {config.epochs} epochs) on "
               f"{model.tokens:,} tokens, vocabulary {len(model.vectors):,} words (min count {config.min_count}), "
               f"in {model.seconds:.1f} s. Loss {model.losses[0]:.3f} → {model.losses[-1]:.3f}.")
    if model.cut_tokens:
        summary += (f" The text was longer than {w2v.MAX_TRAIN_TOKENS:,} tokens: the last "
                    f"{model.cut_tokens:,} were left out to keep training short.")
    if model.stopped:
        summary += " " + stopped_note(model.stopped, budget.elapsed, model.loss_steps[-1], model.steps_planned)
    return fig, summary, model


@friendly_errors
def compare_spaces(model: w2v.TrainedWord2Vec | None, word: str, topn: float, progress=gr.Progress()):
    """Neighbours of a word in the trained space and in GloVe, side by side."""
    if model is None:
        raise UserInputError("Train a model first (the Train button above), then compare.")
    if not (word or "").strip():
        raise UserInputError("Type a word from the corpus, for example: whale.")
    ours = _neighbour_rows(model.vectors.most_similar([word], topn=int(topn)))
    glove = _glove(progress)
    try:
        theirs, note = _neighbour_rows(glove.most_similar([word], topn=int(topn))), ""
    except w2v.UnknownWordError as exc:
        theirs, note = [], str(exc)
    return ours, theirs, note


# ----------------------------------------------------------------------------------------------------------------
# Layout


P = presets.Preset
ONE_HOT_PRESETS = [P("one-hot-cosine", "king, queen, man, woman, apple", ("king, queen, man, woman, apple",), "§3"),
                   P("vehicles", "cat, dog, car, truck, banana", ("cat, dog, car, truck, banana",), "§3"),
                   P("cities", "paris, london, tokyo, happy, sad", ("paris, london, tokyo, happy, sad",), "§3")]
LOOKUP_PRESETS = [P("one-hot-times-q", "Seed: [0 0 0 1 0] × Q = [10 12 19]", (4,), "§2.2"),
                  P("word-1", "word 1: [1 0 0 0 0] × Q", (1,), "§2.2")]
NEIGHBOUR_PRESETS = [P("frog", "frog", ("frog", 10), "§4"), P("bank-neighbours", "bank", ("bank", 10), "§4"),
                     P("python", "python", ("python", 10), "§4"), P("beijing", "beijing", ("beijing", 10), "§4")]
ANALOGY_PRESETS = [P("king-queen", "king − man + woman", ("king", "man", "woman", 5), "§4"),
                   P("paris-berlin", "paris − france + germany", ("paris", "france", "germany", 5), "§4"),
                   P("walking-swimming", "walking − walk + swim", ("walking", "walk", "swim", 5), "§4"),
                   P("bigger-smaller", "bigger − big + small", ("bigger", "big", "small", 5), "§4")]
PROJECTION_PRESETS = [
    P("capitals", "royals and capitals, 2D", ("king, queen, man, woman, paris, france, berlin, germany", 3, "2D"),
      "§4"),
    P("animals-vehicles-3d", "animals, vehicles, colours, 3D", ("cat, dog, horse, car, truck, train, red, blue", 4,
                                                                 "3D"), "§4"),
    P("days-numbers", "days, numbers, fruit", ("monday, january, one, two, apple, banana", 3, "2D"), "§4")]
STATIC_PRESETS = [
    P("static-bank", "bank: river vs money", ("bank", "We sat on the river bank and watched the water.",
                                              "She opened a savings account at the bank."), "§4"),
    P("static-bat", "bat: animal vs sport", ("bat", "The bat flew out of the cave at dusk.",
                                             "He swung the bat and hit the ball."), "§4")]
# (seed §, question, answer, view key, preset)
LESSON = [
    ("§2.2", "Multiply the one-hot vector of word 4, [0 0 0 1 0], by the 5 × 3 matrix Q. What comes out?",
     "[10 12 19]: row 4 of Q. Only the single 1 survives the sum, so an embedding layer is a table lookup.",
     "lookup", "one-hot-times-q"),
    ("§3", "What is the cosine similarity of one-hot “king” and “queen”? And of their GloVe vectors?",
     "One-hot: exactly 0, like every pair of different words. GloVe: clearly positive (about 0.78), higher than "
     "king–apple: dense vectors can express similarity.", "onehot", "one-hot-cosine"),
    ("§4", "A static embedding gives “bank” one vector. Does it differ between a river sentence and a money "
     "sentence?", "No: the cosine of the two occurrences is exactly 1, and its neighbours are all about finance, "
     "the more frequent sense. Contextual models (ELMo, BERT) fix this; compare with the BERT masked LM tab.",
     "static", "static-bank"),
]


def build() -> None:
    gr.Markdown(INTRO)
    lesson_slot = gr.Column()
    with gr.Tab("One-hot vs dense", id="onehot") as onehot_tab:
        with gr.Row():
            with gr.Column(scale=1):
                words = gr.Textbox("king, queen, man, woman, apple", label="Words (spaces or commas, up to 20)")
                compare_button = gr.Button("Compare", variant="primary")
            compare_md = gr.Markdown()
        with gr.Row():
            one_hot_plot = gr.Plot(label="One-hot vectors", show_label=False)
            one_hot_cos_plot = gr.Plot(label="One-hot cosine", show_label=False)
            dense_cos_plot = gr.Plot(label="GloVe cosine", show_label=False)
        compare_button.click(compare_one_hot, [words], [one_hot_plot, one_hot_cos_plot, dense_cos_plot, compare_md],
                             api_name="embeddings_onehot")
        onehot_view = presets.View("embeddings", "onehot", [words],
                                   [one_hot_plot, one_hot_cos_plot, dense_cos_plot, compare_md], compare_one_hot,
                                   ONE_HOT_PRESETS, where=onehot_tab)
        onehot_view.buttons()

        gr.Markdown("#### The lookup is a matrix product (the seed's example)")
        with gr.Row():
            with gr.Column(scale=1):
                word_number = gr.Slider(1, len(w2v.SEED_Q), value=4, step=1, label="Word number (its one-hot vector)")
                lookup_button = gr.Button("Multiply one-hot × Q", variant="primary")
                lookup_md = gr.Markdown()
            q_plot = gr.Plot(label="Q", show_label=False)
        lookup_button.click(one_hot_lookup, [word_number], [lookup_md, q_plot], api_name="embeddings_lookup")
        lookup_view = presets.View("embeddings", "lookup", [word_number], [lookup_md, q_plot], one_hot_lookup,
                                   LOOKUP_PRESETS, where=onehot_tab)
        lookup_view.buttons()

    with gr.Tab("Neural LM (NNLM)", id="nnlm") as nnlm_tab:
        nnlm_inputs, nnlm_outputs = embeddings_nnlm.build()
        nnlm_view = presets.View("embeddings", "nnlm", nnlm_inputs, nnlm_outputs, embeddings_nnlm.train_and_predict,
                                 embeddings_nnlm.PRESETS, where=nnlm_tab)
        nnlm_view.buttons()

    with gr.Tab("GloVe: neighbours & analogies", id="glove") as glove_tab:
        gr.Markdown(GLOVE_NOTE)
        with gr.Row():
            with gr.Column(scale=1):
                query = gr.Textbox("frog", label="Word")
                topn = gr.Slider(1, 30, value=10, step=1, label="Neighbours")
                query_button = gr.Button("Find neighbours", variant="primary")
            with gr.Column(scale=2):
                neighbours_plot = gr.Plot(label="Nearest neighbours", show_label=False)
                neighbours_table = gr.Dataframe(headers=NEIGHBOUR_HEADERS, interactive=False, label="Neighbours",
                    buttons=TABLE_BUTTONS)
        query_button.click(neighbours, [query, topn], [neighbours_plot, neighbours_table],
                           api_name="embeddings_neighbours")
        query.submit(neighbours, [query, topn], [neighbours_plot, neighbours_table],
                     api_name="embeddings_neighbours_submit", api_visibility="undocumented")
        presets.View("embeddings", "neighbours", [query, topn], [neighbours_plot, neighbours_table], neighbours,
                     NEIGHBOUR_PRESETS, where=glove_tab).buttons()

        gr.Markdown("#### Analogies: a − b + c")
        with gr.Row():
            with gr.Column(scale=1):
                with gr.Row():
                    a = gr.Textbox("king", label="a")
                    b = gr.Textbox("man", label="− b")
                    c = gr.Textbox("woman", label="+ c")
                analogy_topn = gr.Slider(1, 20, value=5, step=1, label="Answers")
                analogy_button = gr.Button("Solve", variant="primary")
                analogy_md = gr.Markdown()
            analogy_plot = gr.Plot(label="Analogy", show_label=False)
        analogy_button.click(analogy, [a, b, c, analogy_topn], [analogy_plot, analogy_md],
                             api_name="embeddings_analogy")
        presets.View("embeddings", "analogy", [a, b, c, analogy_topn], [analogy_plot, analogy_md], analogy,
                     ANALOGY_PRESETS, where=glove_tab).buttons()

    with gr.Tab("Projection", id="projection") as projection_tab:
        gr.Markdown("Pick words; each one brings its nearest GloVe neighbours. PCA flattens the 50 dimensions to the "
                    "2 or 3 that vary most. Drag to rotate the 3D view; click a legend entry to hide a group.")
        with gr.Row():
            with gr.Column(scale=1):
                projection_words = gr.Textbox("king, queen, man, woman, paris, france, berlin, germany",
                                              label=f"Words (up to {w2v.MAX_PROJECTION_WORDS})", lines=3)
                per_word = gr.Slider(0, 20, value=3, step=1, label="Neighbours per word")
                dims = gr.Radio(["2D", "3D"], value="2D", label="View")
                projection_button = gr.Button("Project", variant="primary")
                projection_md = gr.Markdown()
            projection_plot = gr.Plot(label="PCA projection", show_label=False)
        projection_button.click(projection, [projection_words, per_word, dims], [projection_plot, projection_md],
                                api_name="embeddings_projection")
        presets.View("embeddings", "projection", [projection_words, per_word, dims], [projection_plot, projection_md],
                     projection, PROJECTION_PRESETS, where=projection_tab).buttons()

    with gr.Tab("One vector per word", id="static") as static_tab:
        gr.Markdown(STATIC_NOTE)
        with gr.Row():
            with gr.Column(scale=1):
                static_word = gr.Textbox("bank", label="Word")
                first = gr.Textbox("We sat on the river bank and watched the water.", label="Sentence 1")
                second = gr.Textbox("She opened a savings account at the bank.", label="Sentence 2")
                static_button = gr.Button("Look up both", variant="primary")
                static_md = gr.Markdown()
            with gr.Column(scale=2):
                static_plot = gr.Plot(label="The vector in each sentence", show_label=False)
                static_neighbours = gr.Plot(label="Neighbours", show_label=False)
        static_button.click(static_vectors, [static_word, first, second], [static_md, static_plot, static_neighbours],
                            api_name="embeddings_static")
        static_view = presets.View("embeddings", "static", [static_word, first, second],
                                   [static_md, static_plot, static_neighbours], static_vectors, STATIC_PRESETS,
                                   where=static_tab)
        static_view.buttons()

    with gr.Tab("Train word2vec", id="train"):
        gr.Markdown(TRAIN_NOTE)
        model = gr.State(None)  # this session's TrainedWord2Vec; kept in memory only
        with gr.Row():
            with gr.Column(scale=1):
                source = gr.Radio([MOBY, UPLOAD], value=MOBY, label="Corpus")
                upload = gr.File(label="Plain UTF-8 text (≤ 5 MB)", file_types=[".txt"], type="filepath")
                architecture = gr.Radio([SKIPGRAM, CBOW], value=SKIPGRAM, label="Architecture")
                with gr.Row():
                    dim = gr.Slider(10, 200, value=50, step=10, label="Dimensions")
                    window = gr.Slider(1, 10, value=4, step=1, label="Window (each side)")
                with gr.Row():
                    epochs = gr.Slider(1, 10, value=3, step=1, label="Epochs")
                    min_count = gr.Slider(1, 50, value=5, step=1, label="Min count")
                train_button = gr.Button("Train", variant="primary")
            with gr.Column(scale=2):
                loss_plot = gr.Plot(empty_figure("Press Train to see the loss fall"), label="Loss", show_label=False)
                train_md = gr.Markdown()
        gr.Examples([[SKIPGRAM, 50, 4, 3, 5], [CBOW, 50, 4, 8, 5]],
                    inputs=[architecture, dim, window, epochs, min_count],
                    label="Presets for Moby-Dick (skip-gram: ~30 s on 2 CPU cores)")
        train_button.click(train, [source, upload, architecture, dim, window, epochs, min_count],
                           [loss_plot, train_md, model], api_name="embeddings_train", **TRAIN_QUEUE)

        gr.Markdown("#### Your vectors next to GloVe")
        with gr.Row():
            compare_word = gr.Textbox("whale", label="Word")
            compare_topn = gr.Slider(1, 30, value=10, step=1, label="Neighbours")
            compare_button = gr.Button("Compare neighbours", variant="primary")
        gr.Examples([["whale"], ["ship"], ["sea"], ["captain"], ["harpoon"]], inputs=[compare_word])
        with gr.Row():
            ours_table = gr.Dataframe(headers=NEIGHBOUR_HEADERS, interactive=False, label="Your word2vec",
                buttons=TABLE_BUTTONS)
            glove_table = gr.Dataframe(headers=NEIGHBOUR_HEADERS, interactive=False, label="GloVe 6B 50d",
                buttons=TABLE_BUTTONS)
        spaces_md = gr.Markdown()
        compare_button.click(compare_spaces, [model, compare_word, compare_topn], [ours_table, glove_table, spaces_md],
                             api_name="embeddings_compare")

    views = {"lookup": lookup_view, "onehot": onehot_view, "static": static_view}
    with lesson_slot:
        presets.lesson_table(LESSON, views)
