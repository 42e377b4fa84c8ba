"""How the app serves many learners: every event's way in (serving: admission, API guard, input caps, language),
handler wrappers (handlers: errors, GPU), downloads, the result cache with batches, the light first page, and
Gradio's per-block work done once (gradio_inside). The one place that reaches into Gradio beyond its public API
(tests/test_import_graph.py); tests/server/test_gradio_internals.py names each such use.
"""

__all__ = [
    "serving", "downloads", "result_cache", "first_page", "handlers", "gradio_inside",
]
