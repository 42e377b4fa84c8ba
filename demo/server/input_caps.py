"""The cap on every free-text input, checked on the server for every client.

A gr.Textbox's ``max_length`` (one of the caps in core/text/limits.py) only stops typing in the browser; a script calling
the API sends what it likes. ``check_caps`` runs before any handler (demo/server/serving.py calls it on every event's raw
values), so a value over its box's cap is refused with one message that names the box and the cap and repeats
none of the text. A checkpoint picker takes a typed Hub id too (allow_custom_value), so it has a cap as well.
"""
from __future__ import annotations

import gradio as gr

from core.text.errors import UserInputError
from core.text.limits import MAX_CUSTOM_CHOICE_CHARS
from demo.server.handlers import component_name

TOO_LONG = "common.too_long_input"  # the message (assets/i18n/*.yaml)


def cap_of(component) -> int | None:
    """The most characters a component takes as typed text, or None when it takes no free text."""
    if isinstance(component, gr.Textbox):
        return component.max_length
    if isinstance(component, gr.Dropdown) and component.allow_custom_value and not component.multiselect:
        return MAX_CUSTOM_CHOICE_CHARS
    return None


def check_caps(components, payloads) -> None:
    """Raise UserInputError (TOO_LONG) for the first text payload longer than its component's cap."""
    for component, payload in zip(components, payloads):
        cap = cap_of(component)
        if cap is not None and isinstance(payload, str) and len(payload) > cap:
            raise UserInputError(TOO_LONG, name=component_name(component), limit=f"{cap:,}",
                                 chars=f"{len(payload):,}")
