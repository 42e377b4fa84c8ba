"""State links (issue #54 §5, demo/kit/state_links.py): for every view of the built app, a link made from changed inputs
restores exactly those inputs; hostile values in every parameter open the defaults with one message; a link never
passes 2,000 characters and a refusal says how much text fits. Slide captions and notes read the same components."""
from __future__ import annotations

import json
import math
import warnings
from urllib.parse import parse_qsl, urlsplit

import gradio as gr
import pytest

from core.text.errors import UserInputError
from core.text.i18n import text
from demo.kit import teacher as kit
from demo.kit import state_links
from demo.kit.state_links import BrokenLink, LINK_LIMIT, linked, plain
from tests.app_events import built_app, views


def other_value(component, default):
    """A valid value of ``component`` that differs from ``default``, chosen from the component's own settings."""
    if isinstance(component, gr.Checkbox):
        return not default
    if isinstance(component, gr.Slider):
        return component.maximum if default != component.maximum else component.minimum
    if isinstance(component, gr.Number):
        value = (default or 0) + 1
        return value if component.maximum is None or value <= component.maximum else component.minimum
    if isinstance(component, (gr.Radio, gr.Dropdown)):
        choices = state_links._choices(component)
        others = [c for c in choices if c != default]
        if getattr(component, "allow_custom_value", False):
            return "my-org/my-own-model"
        return others[-1]
    if isinstance(component, gr.Dataframe):
        rows = [list(row) for row in plain(default)]
        rows[0][-1] = rows[0][-1] + 1 if isinstance(rows[0][-1], (int, float)) else str(rows[0][-1]) + "x"
        return rows
    return "A learner's own text, 我的句子"


def every_view():
    return [pytest.param(view, id=f"{view.tab}/{view.key}") for view in views()]


def query_of(link: str) -> dict:
    return dict(parse_qsl(urlsplit(link).query))


@pytest.mark.parametrize("view", every_view())
def test_a_link_restores_every_changed_input(view):
    defaults = state_links.defaults(view)
    values = [other_value(c, d) if linked(c) else d for c, d in zip(view.inputs, defaults)]
    link = state_links.state_link(view, values, "zh")
    assert len(link) + state_links.ADDRESS_ALLOWANCE <= LINK_LIMIT
    query = query_of(link)
    assert (query["tab"], query["view"], query["lang"]) == (view.tab, view.key, "zh")
    restored = state_links.restore(view, query.get("in"))
    for component, value, default, back in zip(view.inputs, values, defaults, restored):
        assert plain(back) == plain(value if linked(component) else default)
    # nothing changed: a short link, and the defaults come back
    plain_link = state_links.state_link(view, defaults, "en")
    assert "in" not in query_of(plain_link)
    assert [plain(v) for v in state_links.restore(view, query_of(plain_link).get("in"))] == \
           [plain(v) for v in defaults]


def hostile(component, default) -> list:
    """Values a forged link may carry for ``component``: each must be refused."""
    values = [{"a": 1}, [[["deep"]]], None]
    if isinstance(component, gr.Checkbox):
        return values + ["true", 1]
    if isinstance(component, (gr.Slider, gr.Number)):
        out = values + ["5", True, float("nan"), float("inf")]
        if getattr(component, "maximum", None) is not None:
            out.append(component.maximum + 1e9)
        if getattr(component, "minimum", None) is not None:
            out.append(component.minimum - 1e9)
        return out
    if isinstance(component, (gr.Radio, gr.Dropdown)) and not getattr(component, "allow_custom_value", False):
        return values + ["<script>alert(1)</script>", 3.5]
    if isinstance(component, gr.Dataframe):
        return values + [[], [[1, 2], [3]], [["x" * 100]], [[float("inf")]], "1,2"]
    return values + [7, "bad\x00text", "x" * ((getattr(component, "max_length", None) or LINK_LIMIT) + 1)]


@pytest.mark.parametrize("view", every_view())
def test_hostile_values_in_every_input_are_refused(view):
    defaults = state_links.defaults(view)
    for index, (component, default) in enumerate(zip(view.inputs, defaults)):
        if not linked(component):
            with pytest.raises(BrokenLink):
                state_links.restore(view, json.dumps({str(index): "x"}))
            continue
        for value in hostile(component, default):
            with pytest.raises(BrokenLink):
                state_links.restore(view, json.dumps({str(index): value}, allow_nan=True))


@pytest.mark.parametrize("raw", ["{", "[1,2]", '"text"', "null", '{"999":1}', '{"-1":1}', '{"__proto__":1}',
                                 '{"0x1":1}', "[" * 5000 + "]" * 5000, "NaN"])
def test_broken_in_parameters_are_refused(raw):
    view = views()[0]
    with pytest.raises(BrokenLink):
        state_links.restore(view, raw)


def test_a_long_text_is_refused_with_how_much_fits():
    view = next(v for v in views() if v.tab == "mlm" and any(isinstance(c, gr.Textbox) for c in v.inputs))
    index = next(i for i, c in enumerate(view.inputs) if isinstance(c, gr.Textbox))
    values = list(state_links.defaults(view))
    values[index] = "很长的句子" * 200
    with pytest.raises(UserInputError) as refused:
        state_links.state_link(view, values, "zh")
    assert refused.value.key == "deck.link_too_long"
    fits = refused.value.fields["chars"]
    assert 50 < fits < 1000
    for lang in ("en", "zh"):
        assert str(LINK_LIMIT) in refused.value.message(lang).replace(",", "")
    values[index] = values[index][:fits]  # what the message says fits, fits
    assert len(state_links.state_link(view, values, "zh")) + state_links.ADDRESS_ALLOWANCE <= LINK_LIMIT


def test_a_link_opens_its_view_computed_with_its_inputs():
    registry = built_app().preset_registry
    view = next(v for v in views() if (v.tab, v.key) == ("attention", "steps"))
    index = next(i for i, c in enumerate(view.inputs) if isinstance(c, gr.Textbox))
    values = list(state_links.defaults(view))
    values[index] = "cats dogs"  # two tokens: one per row of the preset's Q
    link = state_links.state_link(view, values, "en")
    updates = registry.deep_link(query_of(link), "overview")
    assert updates[view.inputs[index]] == "cats dogs"
    assert updates[view.done] is True
    assert updates[view.switcher].selected == view.where.id
    # the same view's handler, called directly with those inputs, gives the same first result
    expected = view.fn(*values)
    first = expected[0] if isinstance(expected, tuple) else expected
    assert updates[view.outputs[0]] == first


@pytest.mark.parametrize("query", [
    {"tab": "attention", "view": "steps", "in": '{"0": {"evil": true}}'},
    {"tab": "attention", "view": "steps", "in": "%%%"},
    {"tab": "attention", "view": "<img src=x onerror=alert(1)>"},
])
def test_a_forged_link_opens_the_defaults_with_one_message(query):
    registry = built_app().preset_registry
    view = next(v for v in views() if (v.tab, v.key) == ("attention", "steps"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        updates = registry.deep_link(query, "overview")
    messages = [str(w.message) for w in caught if "link" in str(w.message).lower()]
    assert len(messages) == 1
    assert messages[0].startswith(text("deck.link_broken", "en", detail="").split("(")[0])
    defaults = state_links.defaults(view)
    if query["view"] == "steps":
        assert [plain(updates[c]) for c in view.inputs] == [plain(d) for d in defaults]


def test_a_caption_says_input_model_changed_settings_and_seed():
    view = next(v for v in views() if v.seed_index is not None and any(hasattr(c, "checkpoint_task")
                                                                       for c in v.inputs))
    values = list(state_links.defaults(view))
    values[view.seed_index] = 1234
    slider = next(i for i, c in enumerate(view.inputs) if isinstance(c, gr.Slider) and i != view.seed_index)
    values[slider] = other_value(view.inputs[slider], values[slider])
    text_index = next(i for i, c in enumerate(view.inputs) if isinstance(c, gr.Textbox))
    values[text_index] = "鲸" * 300
    caption = state_links.caption(view, values, "zh")
    assert "鲸" * 199 + "…" in caption and "鲸" * 201 not in caption  # the input, cut at 200 characters
    model = next(v for c, v in zip(view.inputs, values) if hasattr(c, "checkpoint_task"))
    assert text("deck.caption_model", "zh", value="") in caption and model in caption
    setting = state_links.words(view.inputs[slider].label, "zh")
    assert f"{setting} = " in caption
    assert text("deck.caption_seed", "zh", value=1234) in caption
    untouched = state_links.caption(view, state_links.defaults(view), "en")
    assert text("deck.caption_defaults", "en") in untouched


def test_notes_say_what_the_tour_says_and_the_section():
    built_app()
    from demo.kit import tour

    stop = next(s for s in tour.STOPS if s.key == "thinking_machines")
    view = next(v for v in views() if (v.tab, v.key) == ("attention", "steps"))
    notes = state_links.notes(view, "zh", stop.preset, guide=kit._GUIDE)
    said = state_links.markdown_to_text(tour.words(stop, "zh")[1])
    assert said in notes
    assert text("deck.notes_section", "zh", section=view.presets[stop.preset].section.lstrip("§")) in notes
    assert not math.isnan(len(notes))
