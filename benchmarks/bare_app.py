"""The reference start of benchmarks/bench_startup.py (issue #38 §4): a bare Gradio app with one plot and one table,
started the way app.py starts, answering the same first event (``/ngram_counts``, its two inputs) with a bigram
count of its text. What app.py adds to a start is its cold start minus this one's, measured in the same run.

    python benchmarks/bare_app.py --port 7861 [--collector-like-app]
"""
from __future__ import annotations

import argparse
import gc
import sys
from collections import Counter

# --collector-like-app: started as app.py starts (the cyclic collector off until the app is built, then frozen and
# back on), so bench_startup can also say what app.py adds beyond a bare app given the same settings.
LIKE_APP = "--collector-like-app" in sys.argv
if LIKE_APP:
    gc.disable()

import gradio as gr  # noqa: E402
import plotly.graph_objects as go  # noqa: E402


def counts(own_text: str, upload):
    words = (own_text or "the cat sat on the mat the end").split()
    pairs = Counter(zip(words, words[1:])).most_common(10)
    labels = [f"{a} {b}" for (a, b), _ in pairs]
    figure = go.Figure(go.Bar(x=labels, y=[n for _, n in pairs]))
    return figure, [[label, n] for label, (_, n) in zip(labels, pairs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=7861)
    parser.add_argument("--collector-like-app", action="store_true",
                        help="start as app.py does: the cyclic collector off until the app is built")
    args, _ = parser.parse_known_args()  # app.py's other flags (--offline, --device) mean nothing here
    with gr.Blocks() as demo:
        own_text, upload = gr.Textbox(), gr.File()
        button = gr.Button("Show counts")
        plot, table = gr.Plot(), gr.Dataframe(headers=["bigram", "count"])
        button.click(counts, [own_text, upload], [plot, table], api_name="ngram_counts")
    if LIKE_APP:
        gc.freeze()
        gc.enable()
    demo.launch(server_name="127.0.0.1", server_port=args.port)


if __name__ == "__main__":
    main()
