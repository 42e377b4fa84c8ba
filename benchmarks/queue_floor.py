"""Gradio's floor under the classroom profile (issue #38 §3): an app with the load test's events and nothing in them.

Every event of benchmarks/load_test.py's CALLS is here under its own api_name, taking the parameters the load test
sets (the app's other inputs keep their defaults), with its download step (``<name>_download``, undocumented, on an
unlimited "download" group) and app.py's queue settings (4 per event, the BERT views on one group of 16, Gradio's
event summary refreshed every 1,000 events). Each handler returns a short string at once: no model, no figure. A
classroom run against it measures what Gradio's queue protocol alone costs per click on this machine, and its p95
is the best a Gradio app with these events can reach here with the same learners on the same cores.

    python benchmarks/load_test.py --profile classroom --floor      # starts this app instead of app.py
    python benchmarks/queue_floor.py --port 7861                     # on its own
"""
from __future__ import annotations

import argparse
import inspect
import os
import sys
from pathlib import Path

# app.py's settings for Gradio's queue: its pandas summary of past events refreshed every 1,000 events, not after each
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: benchmarks.load_test, demo
from benchmarks.load_clicks import CALLS, DOWNLOAD_FIRST  # noqa: E402
from demo.server.downloads import BERT_QUEUE, DOWNLOAD_QUEUE  # noqa: E402 - the app's own groups


def answering(parameters: list[str]):
    """A handler with these parameter names (so gradio_client and the browser client pass the same arguments)."""
    def handler(*values):
        return f"{len(values)} inputs"

    handler.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in parameters])
    return handler


def build() -> gr.Blocks:
    with gr.Blocks() as demo:
        demo.queue(default_concurrency_limit=4)
        out = gr.Textbox()
        language = gr.Textbox(visible=False)
        demo.load(lambda: "en", None, language, api_name="app_language")
        for name, kwargs in CALLS.items():
            inputs = [gr.Textbox() for _ in kwargs]
            button = gr.Button(name)
            if name not in DOWNLOAD_FIRST:
                button.click(answering(list(kwargs)), inputs, out, api_name=name)
                continue
            sources = [inputs[list(kwargs).index(key)] for key in DOWNLOAD_FIRST[name]]
            download = button.click(answering(DOWNLOAD_FIRST[name]), sources, None, api_name=f"{name}_download",
                                    api_visibility="undocumented", **DOWNLOAD_QUEUE)
            download.then(answering(list(kwargs)), inputs, out, api_name=name, **BERT_QUEUE)
    return demo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=7861)
    args, _ = parser.parse_known_args()  # app.py's other flags (--offline, --device) mean nothing here
    build().launch(server_name="127.0.0.1", server_port=args.port)


if __name__ == "__main__":
    main()
