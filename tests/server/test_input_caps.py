"""Every free-text input has a cap, and no message repeats more than 80 characters of what the learner typed
(issue #31, required point 6).

The caps live in core/text/limits.py; each gr.Textbox declares one as its max_length, and the server refuses a longer
value from any client before a handler runs (demo/server/serving.py: check_caps, called from guard_api). Calls go through
the built app's own ``process_api`` (what Gradio's routes call for the browser and for API clients alike), so the
messages checked are what a client receives. Echoes are cut in one place, LearnerError's fields (core/text/errors.py).
"""
from __future__ import annotations

import json

import gradio as gr
import pytest
from gradio.components.api_component import Api
from gradio.state_holder import SessionState
from gradio.utils import error_payload

from core.text import limits
from core.text.errors import UserInputError, echo
from core.text.i18n import text, using_language
from demo.server.handlers import component_name
from demo.server.serving import TOO_LONG, cap_of
from tests import app_events
from tests.conftest import run_async
from core.loading import resolve

# Trainers train for up to minutes by design (tests/app_events.py finds them in the built app): their caps are
# checked, but they are not run with a long token, except these, whose free text is refused before they train.
RUN_WITH_A_LONG_TOKEN = {"mlm_train", "embeddings_nnlm"}

# The caps a box may declare: one list, so a box cannot invent its own.
CAPS = {limits.MAX_WORD_CHARS, limits.MAX_LIST_CHARS, limits.MAX_SHORT_TEXT_CHARS, limits.MAX_TEXT_CHARS,
        limits.MAX_LONG_TEXT_CHARS}

# Textboxes that no event reads: the program writes them and the learner only reads them (label key or label).
OUTPUT_ONLY = {
    "lstm.vanilla_rnn": "the vanilla RNN's generated text",
    "LSTM": "the LSTM's generated text, beside it",
    "gpt.prompt_and_generated": "the GPT's prompt and what it generated",
}

# Input components that take no free text from the page, and why each is safe from an oversized value.
NOT_FREE_TEXT = {
    gr.Slider: "a number the component bounds",
    gr.Number: "a number; handlers check its range (demo.server.handlers.number_in_range)",
    gr.Checkbox: "a boolean",
    gr.Radio: "one of its choices; Gradio refuses any other value",
    gr.State: "the session's own value; no client sends it",
    gr.File: "an upload, capped at MAX_UPLOAD_BYTES by core.text.textio",
    gr.Dataset: "an example picker: the page sends the example's index",
    gr.HTML: "a preset bar or lesson box: a click sends a preset's slug or a step number; an unknown one is refused "
             "with the slug cut (presets.unknown)",
    gr.Dataframe: "a grid of numbers; its size is capped (attention.matrix_too_big) and a bad cell is echoed cut",
    Api: "a value of a gr.api endpoint (checks_list, check_setup, check_answer): core.checks refuses a slug not in "
         "CHECKS (checks.unknown, echoed cut), own text over MAX_OWN_CHARS (checks.own_too_long) and a prediction "
         "of the wrong kind before any model runs (tests/checks/test_checks.py)",
}

LONG_TEXT = ("whale " * 20_000)[:110_000]  # a 110,000-character paste
TOKEN = "q" * 50_000  # one 50,000-character token
ECHO_RUN = "q" * (limits.MAX_ECHO_CHARS + 1)  # more of the token than any message may repeat


@pytest.fixture(scope="module")
def app():
    import app as app_module

    resolve.set_offline(True)
    return app_module.build_app()


def our_events(app) -> list:
    return [dep for dep in app.fns.values()
            if dep.fn is not None and dep.fn.__module__.split(".")[0] in ("demo", "app")]


def capped_inputs(app) -> list[tuple]:
    """(event, input index, cap) for every free-text input of every event of the app."""
    return [(dep, index, cap_of(component)) for dep in our_events(app)
            for index, component in enumerate(dep.inputs) if cap_of(component) is not None]


def name_of(component) -> str:
    label = component.label
    return str(getattr(label, "key", label))


def call(app, dep, inputs: list, lang: str = "en"):
    """The event through process_api, as a client in ``lang`` calls it: (outputs, None) or (None, the message)."""
    request = gr.Request(headers={"accept-language": "zh-CN,zh" if lang == "zh" else "en-US,en"})
    if dep.batch:  # the queue hands a batch=True event one list per parameter (here a batch of one request)
        inputs = [[value] for value in inputs]
    try:
        result = run_async(app.process_api(dep, inputs, state=SessionState(app), request=request))
    except Exception as exc:  # noqa: BLE001 - what the client is told
        return None, str(error_payload(exc, show_error=True)["error"])
    return result["data"], None


def default_inputs(dep) -> list:
    """The values the page holds before the learner types anything (a session's State is the app's own)."""
    return [None if isinstance(component, gr.State) else component.value for component in dep.inputs]


# ----------------------------------------------------------------------------------------------------------------
# Every free-text input has a cap


def test_every_text_input_declares_a_cap(app):
    inputs = {component._id for dep in app.fns.values() if dep.fn is not None for component in dep.inputs}
    boxes = [block for block in app.blocks.values() if isinstance(block, gr.Textbox)]
    uncapped = [name_of(box) for box in boxes if box._id in inputs and not box.max_length]
    assert not uncapped, f"text boxes with no max_length: {uncapped}"
    from demo.kit.presets import QUERY_LIMIT

    odd = {name_of(box): box.max_length for box in boxes if box._id in inputs}
    odd = {name: cap for name, cap in odd.items() if cap not in CAPS | {QUERY_LIMIT}}
    assert not odd, f"caps not declared in core/text/limits.py: {odd}"
    read_only = sorted(name_of(box) for box in boxes if box._id not in inputs)
    assert read_only == sorted(OUTPUT_ONLY), "a Textbox no event reads: add it to OUTPUT_ONLY, saying why"
    assert all(not box.interactive for box in boxes if box._id not in inputs)
    # The page gets each cap (the browser stops typing there).
    sent = {c["id"]: c["props"].get("max_length") for c in app.get_config_file()["components"]}
    assert all(sent[box._id] == box.max_length for box in boxes if box._id in inputs)
    # Every other kind of input is on the list of those that take no free text (a new gr.Code or gr.TextArea input
    # would need a cap first); a dropdown that takes typed values has the custom-choice cap.
    kinds = {type(component) for dep in our_events(app) for component in dep.inputs}
    unknown = {kind.__name__ for kind in kinds - {gr.Textbox, gr.Dropdown} - set(NOT_FREE_TEXT)}
    assert not unknown, f"input kinds with no cap and no reason here: {unknown}"
    typed = [c for dep in our_events(app) for c in dep.inputs if isinstance(c, gr.Dropdown) and c.allow_custom_value]
    assert typed and all(cap_of(c) == limits.MAX_CUSTOM_CHOICE_CHARS for c in typed)


def test_every_value_the_app_puts_in_a_box_fits_its_cap(app):
    """A preset, an example or a box's first value over its cap would be refused when the learner runs it."""
    too_long = []
    for box in (b for b in app.blocks.values() if isinstance(b, gr.Textbox) and b.max_length):
        if isinstance(box.value, str) and len(box.value) > box.max_length:
            too_long.append((name_of(box), "initial value", len(box.value)))
    for tab, entry in app.preset_registry.tabs.items():
        for view in entry.views:
            for preset in view.presets.values():
                if preset.values is None:
                    continue
                for component, value in zip(view.inputs, preset.resolved()):
                    cap = cap_of(component)
                    if cap is not None and isinstance(value, str) and len(value) > cap:
                        too_long.append((f"{tab}/{preset.slug}", name_of(component), len(value)))
    for dataset in (b for b in app.blocks.values() if isinstance(b, gr.Dataset)):
        for sample in dataset.raw_samples:
            for component, value in zip(dataset._components, sample):
                cap = cap_of(component)
                if cap is not None and isinstance(value, str) and len(value) > cap:
                    too_long.append(("example", name_of(component), len(value)))
    assert not too_long, too_long


# ----------------------------------------------------------------------------------------------------------------
# Oversized text is refused with the cap's message, in the learner's language


@pytest.mark.parametrize("sent", [LONG_TEXT, TOKEN], ids=["110k-text", "50k-token"])
def test_text_over_its_cap_gets_the_cap_message_from_every_event(app, sent):
    refused = 0
    for dep, index, cap in capped_inputs(app):
        if len(sent) <= cap:  # only the long boxes take a 50k token: the next test runs those
            continue
        inputs = [None] * len(dep.inputs)  # the cap is checked before any other value is read
        inputs[index] = sent
        outputs, message = call(app, dep, inputs)
        with using_language("en"):
            expected = text(TOO_LONG, name=component_name(dep.inputs[index]), limit=f"{cap:,}",
                            chars=f"{len(sent):,}")
        assert outputs is None and message == expected, (dep.api_name, index, message)
        refused += 1
    assert refused >= 120  # every text input of every event (145 pairs on 2026-11-26)


def test_the_cap_message_is_in_the_learners_language(app):
    dep = next(dep for dep in our_events(app) if dep.api_name == "embeddings_onehot")
    _, message = call(app, dep, [LONG_TEXT], lang="zh")
    assert message == text(TOO_LONG, "zh", name=text("embeddings.words", "zh"), limit=f"{limits.MAX_LIST_CHARS:,}",
                           chars="110,000")
    assert "最多接受 500 个字符" in message


# ----------------------------------------------------------------------------------------------------------------
# Within the cap: what a message repeats is cut to 80 characters, and the page stays bounded


def test_the_longest_token_a_box_takes_is_echoed_cut_and_the_output_stays_bounded(app):
    """Each free-text input once (its first event), holding one token as long as its cap allows (at most 50,000
    characters), the other inputs at their first values: a message repeats at most 80 characters of it, and the
    outputs hold at most twice the token plus 40,000 characters (a 110,000-character word list once drew a page
    28,562 px tall)."""
    seen, ran, echoed = set(), 0, 0
    trainers = app_events.trainers(app)
    assert RUN_WITH_A_LONG_TOKEN <= trainers, RUN_WITH_A_LONG_TOKEN - trainers
    long_running = trainers - RUN_WITH_A_LONG_TOKEN
    for dep, index, cap in capped_inputs(app):
        component = dep.inputs[index]
        if component._id in seen or dep.api_name in long_running:
            continue
        seen.add(component._id)
        token = TOKEN[:cap]
        inputs = default_inputs(dep)
        inputs[index] = token
        outputs, message = call(app, dep, inputs)
        if message is not None:
            assert ECHO_RUN not in message and len(message) < 400, (dep.api_name, index, message)
            echoed += "q" * (limits.MAX_ECHO_CHARS - 1) + "…" in message
        else:
            size = len(json.dumps(outputs, default=str, ensure_ascii=False))
            assert size <= 2 * len(token) + 40_000, (dep.api_name, index, size)
        ran += 1
    assert ran >= 60, ran  # 71 free-text inputs (typed checkpoint ids included) on 2026-11-26
    assert echoed >= 10, echoed  # the messages that name the token do repeat its first 79 characters


def test_ner_bio_to_iobes_repeats_at_most_80_characters_of_a_long_token(app):
    """The issue's case: a 50k-character token once filled the screen with the conversion's error toast."""
    dep = next(dep for dep in our_events(app) if dep.api_name == "ner_convert")
    token = "q" * (limits.MAX_SHORT_TEXT_CHARS - 10)
    _, message = call(app, dep, [token])
    assert message == text("ner.no_tag", "en", item="q" * 79 + "…")
    _, message = call(app, dep, [f"{token}/X-PER"], lang="zh")
    assert message == text("ner.not_bio", "zh", tag="X-PER", word="q" * 79 + "…")
    _, message = call(app, dep, ["Einstein/B-PER " + token])  # over the cap: refused before the handler
    assert message is not None and ECHO_RUN not in message and len(message) < 200


def test_a_choice_refused_by_gradio_is_repeated_cut(app):
    """Gradio's own refusal of a value not among a list's choices quotes the value: it is cut like ours."""
    dep = next(dep for dep in our_events(app) if dep.api_name == "lstm_inspect")
    index = next(i for i, c in enumerate(dep.inputs) if isinstance(c, gr.Dropdown) and not c.allow_custom_value)
    inputs = default_inputs(dep)
    inputs[index] = TOKEN
    _, message = call(app, dep, inputs)
    assert message is not None and "q" * 79 + "…" in message and ECHO_RUN not in message, message


def test_every_message_field_is_cut_in_one_place():
    error = UserInputError("ner.not_bio", tag="B-" + "x" * 5_000, word="词" * 100)
    for lang in ("en", "zh"):
        message = error.message(lang)
        assert "B-" + "x" * 77 + "…" in message and "x" * 78 not in message  # 80 characters in all
        assert "词" * 79 + "…" in message and "词" * 80 not in message
    assert echo("a" * 80) == "a" * 80 and echo("a" * 81) == "a" * 79 + "…"
    # Lists the app assembles (choices, one line per problem) are not cut.
    choices = ", ".join(f"choice-{n}" for n in range(30))
    assert choices in UserInputError("presets.unknown", slug="x", choices=choices).message("en")
