"""PLM Explorer: from n-grams to BERT, one live model per tab.

    python app.py                      # http://127.0.0.1:7860
    python app.py --offline            # never touch the network (bundled models only)
    python app.py --device cpu --port 8000 --host 0.0.0.0
"""
from __future__ import annotations

import argparse
import logging
import os

# No usage analytics or telemetry calls: the app must run with the network unreachable.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# Gradio rebuilds a pandas summary of up to 10,000 past events after *every* event (its monitoring page); under
# load that was ~7% of the server's CPU (py-spy), so refresh it every 1,000 events instead.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")

import gradio as gr  # noqa: E402

from core import registry  # noqa: E402
from core.device import CHOICES as DEVICE_CHOICES, device_label, set_device
from core.limits import MAX_UPLOAD_BYTES
from demo import attention, embeddings, figures, lstm, mlm, ner, ngram, presets, qa

# The history, in order: statistics → static vectors → recurrence → attention → BERT and its tasks.
TABS = [ngram, embeddings, lstm, attention, mlm, ner, qa]

INTRO = (
    "# PLM Explorer\n"
    "How language models evolved, from counting word pairs to BERT. Each tab runs a real model on your text; "
    "go left to right to follow the history."
)

# System fonts only: a Google-hosted font would make every page load reach out to the internet.
THEME = gr.themes.Soft(primary_hue="blue", neutral_hue="slate",
                       font=["Inter", "Noto Sans", "ui-sans-serif", "system-ui", "sans-serif"],
                       font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "monospace"])
CSS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets", "style.css")


def tab_id(module) -> str:
    """A tab's id in URLs (?tab=attention) and gr.Tabs: its demo module's name."""
    return module.__name__.rsplit(".", 1)[-1]


def app_status() -> str:
    """Where models run and which checkpoints this process has loaded (and from where)."""
    lines = [f"- device: **{device_label()}**", f"- network: **{'offline' if registry.is_offline() else 'online'}**"]
    lines += [f"- {badge}" for badge in registry.loaded_models()] or ["- no BERT-family model loaded yet"]
    return "\n".join(lines)


def build_app() -> gr.Blocks:
    """The whole UI: one gr.Tab per demo module. Importing this builds nothing; call it."""
    with gr.Blocks(title="PLM Explorer") as app:
        gr.Markdown(INTRO)
        gr.Markdown(f"<span class='badge'>device: {device_label()} · "
                    f"{'offline' if registry.is_offline() else 'online'}</span>")
        collector = presets.Registry()
        with gr.Tabs() as tabs:
            for module in TABS:
                with gr.Tab(module.TITLE, id=tab_id(module)) as tab, collector.tab(tab_id(module), tab):
                    module.build()
        # Content on first open: each tab computes its default preset when selected; ?tab=…&preset=… deep-links.
        collector.wire(app, tabs)
        with gr.Accordion("Status: device and loaded models", open=False):
            status = gr.Markdown()
            gr.Button("Refresh", size="sm").click(app_status, outputs=status, api_name="app_status")
    # A slow tab (BERT on CPU) must not starve the quick ones: each event gets its own small concurrency
    # budget, and the queue bounds how much work can pile up.
    app.queue(default_concurrency_limit=4, max_size=256)
    return app


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="interface to bind (0.0.0.0 to serve the network)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)))
    parser.add_argument("--offline", action="store_true",
                        help="never touch the network: bundled and cached models only")
    parser.add_argument("--device", choices=DEVICE_CHOICES, default=os.environ.get("PLM_DEVICE", "auto"),
                        help="where models run (default: cuda > mps > cpu)")
    parser.add_argument("--share", action="store_true", help="create a public gradio.live link (off by default)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.offline:
        registry.set_offline(True)
    set_device(args.device)
    app = build_app()
    app.launch(
        server_name=args.host,
        server_port=args.port,
        share=args.share,
        theme=THEME,
        css_paths=[CSS_PATH],
        head=figures.SVG_EXPORT_HEAD,  # adds "download as SVG" beside the slide-size PNG camera on every figure
        max_file_size=MAX_UPLOAD_BYTES,
        show_error=True,
    )


if __name__ == "__main__":
    main()
