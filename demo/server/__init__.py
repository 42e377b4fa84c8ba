"""How the app serves many learners: admission and queue rules, handler wrappers (errors, GPU, language),
input caps, downloads, the result cache, batching and the light first page. The one place that reaches into Gradio
beyond its public API (tests/test_import_graph.py); tests/server/test_gradio_internals.py names each such use.
"""

__all__ = [
    "admission", "serving", "downloads", "result_cache", "batching", "first_page", "handlers", "gradio_inside",
]
