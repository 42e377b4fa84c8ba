"""What every tab shares to show things: figures, presets and lessons, the tour, translations, "Your turn",
the sampling controls, the widgets (checkpoint picker, CSV buttons, number display) and the HTML drawn at build.
Imports core and the server's handler wrappers, never a chapter.
"""

__all__ = [
    "figures", "figure_head", "text_size", "token_figures", "presets", "preset_bar", "preset_records", "lessons",
    "tour", "i18n", "your_turn", "classroom", "teacher", "state_links", "deck", "sampling", "static_html",
    "scripts", "widgets",
]
