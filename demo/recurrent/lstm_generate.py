"""RNN & LSTM tab, "Generate" sub-tab: both models continue one prompt with the same sampling settings and seed,
through core/text/sampling.py, with the same controls and next-token figure as every tab that generates (issue #36)."""
from __future__ import annotations

import gradio as gr

from core.text.errors import ModelUnavailableError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_GENERATE, MAX_LIST_CHARS
from demo.kit import presets, sampling
from demo.server.handlers import friendly_errors, gpu_handler, number_in_range
from demo.kit.i18n import label, t

lstm = lazy_import("core.recurrent.lstm")  # imports torch: loaded on first use (core/loading/lazy.py)

# prompt, tokens, temperature, top-k, top-p, seed
EXAMPLES = [
    ["Call me Ishmael. ", 200, 0.8, 0, 1.0, 0],
    ["The whale ", 200, 0.5, 0, 1.0, 1],
    ['"Hast seen the White Whale?" ', 300, 1.0, 0, 1.0, 2],
    ["Captain Ahab", 200, 0.3, 0, 1.0, 3],
    ["Call me Ishmael. ", 200, 1.0, 5, 1.0, 0],
    ["Call me Ishmael. ", 200, 1.0, 0, 0.8, 0],
]
SLUGS = ["generate-1", "generate-2", "generate-3", "generate-4", "generate-top-k", "generate-top-p"]
PRESETS = [presets.Preset(slug, f"“{row[0].strip()}” " + sampling.describe_plain(*row[2:5]), tuple(row), "§6")
           for slug, row in zip(SLUGS, EXAMPLES)]


def shipped():
    try:
        return lstm.shipped_models()
    except FileNotFoundError as exc:
        raise ModelUnavailableError("lstm.weights_missing") from exc


def _shown(token: str) -> str:
    return "␣" if token == " " else token


@friendly_errors
@gpu_handler
def generate_both(prompt: str, length: float, temperature: float, top_k: float, top_p: float, seed: float,
                  state=None):
    """Sample a continuation from each model with the same settings and seed; each model's first-step cut."""
    models = state if state is not None else shipped()
    unknown = lstm.encode_prompt(models.vocab, prompt)[2]
    sep = "" if models.vocab.level == "char" else " "
    length = int(number_in_range(length, t("lstm.length_name"), 1, MAX_GENERATE))
    settings = sampling.settings(temperature, top_k, top_p, seed)
    texts, figures, cuts = [], [], []
    for name, model in (("RNN", models.rnn), ("LSTM", models.lstm)):
        draws = lstm.generate_steps(model, models.vocab, prompt, length, settings)
        texts.append(lstm.clean_text(prompt) + sep + models.vocab.decode([draw.token for draw in draws]))
        figures.append(sampling.figure(draws[0].cut, _shown, "sampling.fig_first_step_of", model=name))
        cuts.append(sampling.summary(draws[0].cut, name, notes=name == "LSTM"))
    note = t("lstm.generated", settings=sampling.describe(settings)) + "  \n" + "  \n".join(cuts)
    if unknown:
        note += "\n\n" + t("lstm.unknown_note", count=len(unknown), chars=lstm.name_tokens(unknown))
    if state is None:
        note += sampling.result_link("lstm", PRESETS, (prompt, length, temperature, top_k, top_p, seed), 5)
    return texts[0], texts[1], note, figures[0], figures[1]


def generate_shipped(prompt: str, length: float, temperature: float, top_k: float, top_p: float, seed: float):
    """Presets always run on the shipped checkpoints (a session's retrained pair is used by the button)."""
    return generate_both(prompt, length, temperature, top_k, top_p, seed, None)


def build_tab(models: gr.State) -> presets.View:
    """The sub-tab, built inside the RNN & LSTM tab's gr.Tabs; ``models`` is the session's pair (None: shipped)."""
    with gr.Tab(label("lstm.tab_generate"), id="generate") as tab:
        with gr.Row():
            prompt = gr.Textbox(label=label("lstm.prompt"), value=EXAMPLES[0][0], scale=3, max_length=MAX_LIST_CHARS)
            length = gr.Slider(1, MAX_GENERATE, value=EXAMPLES[0][1], step=1, label=label("lstm.tokens_to_generate"))
        temperature, top_k, top_p, seed = sampling.controls(*EXAMPLES[0][2:], max_top_k=80)
        button = gr.Button(label("lstm.generate_both"), variant="primary")
        bar = gr.Column()
        note = gr.Markdown()
        with gr.Row():
            rnn_out = gr.Textbox(label=label("lstm.vanilla_rnn"), lines=8)
            lstm_out = gr.Textbox(label="LSTM", lines=8)
        with gr.Row():
            rnn_plot = gr.Plot(show_label=False)
            lstm_plot = gr.Plot(show_label=False)
        inputs = [prompt, length, temperature, top_k, top_p, seed]
        outputs = [rnn_out, lstm_out, note, rnn_plot, lstm_plot]
        button.click(generate_both, [*inputs, models], outputs, api_name="lstm_generate")
        view = presets.View("lstm", "generate", inputs, outputs, generate_shipped, PRESETS, where=tab, seed=seed)
        with bar:
            view.buttons()
    return view
