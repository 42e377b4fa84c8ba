"""Every response is bounded, schemas say what endpoints accept, mismatches are named, trainers keep their budget
(issue 33 §5). Raw HTTP against `python app.py --offline`, the way a script that ignores the browser's limits calls.
"""
from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from core.text.i18n import text
from core.text.limits import MAX_SCORED_TOKENS
from demo.attention.attention import SCORES
from tests import app_events

# The trainers run for up to their budget by design (minutes at the sliders' maxima); tests/test_trainer_budgets.py
# and the NNLM test below show each stops within its budget plus 5 s. Everything else is called here.
TRAINERS = app_events.trainers()  # derived from the built app (issue #50)
# One answer's bound. The largest measured at the caps is the 512-position encoding figure (~0.4 MB); 2 MB is what a
# classroom of 30 on a course server's 100 Mbit/s uplink can fetch at once in about 5 s. An error is one sentence.
ANSWER_BOUND, ERROR_BOUND = 2_000_000, 4_000
FILLER = "the white whale swam by the old ship "
LEAKS = re.compile(r"Traceback|object at 0x|File \"/|Error\(|Exception\(")
INTERNAL = re.compile(re.escape(text("errors.internal", "en")).replace(r"\{name\}", ".*"))


@pytest.fixture(scope="module")
def url(offline_app):
    """The worker's offline app (tests/conftest.py)."""
    return offline_app.url


def call(url: str, api: str, data: list) -> tuple[str, object, int]:
    """(kind of the last event: "complete" or "error", its data, bytes of the whole answer)."""
    with httpx.Client(timeout=300) as client:
        joined = client.post(url + f"gradio_api/call/{api}", json={"data": data})
        assert joined.status_code == 200, joined.text
        try:
            answer = client.get(url + f"gradio_api/call/{api}/{joined.json()['event_id']}")
        except httpx.RemoteProtocolError as dropped:  # the server could not write its answer
            return "dropped", str(dropped), 0
    events = [line for line in answer.text.splitlines() if line.startswith(("event:", "data:"))]
    assert not LEAKS.search(answer.text), (api, answer.text[:2000])
    return events[-2].split(": ", 1)[1], json.loads(events[-1].split(": ", 1)[1]), len(answer.content)


def ngram_score(sentence_a: str, sentence_b: str) -> list:
    return ["toy_zh", "", None, "characters", False, 2, False, "add_k", 1, sentence_a, sentence_b]


def test_the_ngram_score_answer_is_bounded_and_a_longer_sentence_is_refused(url):
    sentence = ("判断单词的词性" * 40)[:MAX_SCORED_TOKENS]  # characters are the tokens here
    kind, data, size = call(url, "ngram_score", ngram_score(sentence, sentence))
    assert kind == "complete"
    assert len(data[1]["data"]) == MAX_SCORED_TOKENS  # one factor (table row) per token
    assert size < 300_000, size  # 2,000 characters each used to come back as 0.9 MB
    kind, data, size = call(url, "ngram_score", ngram_score(sentence, sentence + "的"))
    assert kind == "error" and size < 2_000
    assert data["error"] == (f"Sentence B has {MAX_SCORED_TOKENS + 1} tokens; this view scores at most "
                             f"{MAX_SCORED_TOKENS} per sentence (each token is one factor, one table row and one bar). "
                             "Score a shorter sentence.")


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_a_choice_of_numbers_is_advertised_as_numbers_and_accepted_as_advertised(url):
    info = httpx.get(url + "gradio_api/info", timeout=60).json()
    parameters = {p["parameter_name"]: p for p in info["named_endpoints"]["/attention_multihead"]["parameters"]}
    assert parameters["d_model"]["type"] == {"type": "integer", "oneOf": [{"const": v} for v in (64, 128, 256, 512)]}
    assert parameters["d_model"]["python_type"]["type"] == "int"
    # every enum and const in every endpoint's inputs has the JSON type its schema declares
    json_type = {str: "string", int: "integer", float: "number", bool: "boolean"}
    for name, endpoint in info["named_endpoints"].items():
        for parameter in endpoint["parameters"]:
            schema = parameter["type"]
            values = schema.get("enum") or [choice["const"] for choice in schema.get("oneOf", []) if "const" in choice]
            if values and "type" in schema:
                declared = schema["type"]
                assert all(json_type[type(v)] == declared or (declared == "number" and type(v) is int)
                           for v in values), (name, parameter["parameter_name"], schema)

    kind, data, _ = call(url, "attention_multihead", ["i have a dream", 512, 8, False])
    assert kind == "complete" and "512" in data[0]
    kind, data, _ = call(url, "attention_multihead", ["i have a dream", "512", 8, False])
    assert kind == "error"
    assert "“d_model”" in data["error"] and "64, 128, 256, 512" in data["error"] and \
        data["error"].endswith("got “512”")  # text, in quotes: not the number 512


SCORE = next(iter(SCORES))  # scaled dot product


def matrix(rows: list[list[float]]) -> dict:
    return {"headers": [f"d{j + 1}" for j in range(len(rows[0]))], "data": rows}


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_token_names_that_do_not_match_the_rows_are_refused_with_the_counts(url):
    Q = K = V = matrix([[1.0, 0.0], [0.0, 1.0]])
    steps = lambda names: [names, "Q, K, V given", Q, K, V, matrix([[0.0]]), matrix([[0.0]]), matrix([[0.0]]),  # noqa: E731
                           matrix([[0.0]]), SCORE, False]
    kind, data, _ = call(url, "attention_steps", steps("alpha beta gamma"))
    assert kind == "error"
    assert data["error"].startswith("3 token names for 2 query rows (Q) and 2 key rows (K)")
    kind, data, _ = call(url, "attention_steps", steps("alpha beta"))
    assert kind == "complete", data
    figure = json.loads(data[3]["plot"])  # the softmax: its key axis carries the names typed
    assert list(figure["data"][0]["x"]) == ["alpha", "beta"]
    kind, data, _ = call(url, "attention_steps", steps(""))  # an empty box numbers them
    assert kind == "complete" and list(json.loads(data[3]["plot"])["data"][0]["x"]) == ["k1", "k2"]


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_the_nnlm_at_its_sliders_maxima_stops_within_its_budget(url):
    budget = 5  # the slider's minimum; 120 s at its maximum works the same way and takes 2 minutes
    kind, data, _ = call(url, "embeddings_nnlm", ["moby_dick", 4, 128, 256, 5000, budget, "the white"])
    assert kind == "complete", data
    steps, seconds = re.search(r"([\d,]+) steps in ([\d.]+) s", data[0]).groups()
    assert int(steps.replace(",", "")) < 5000  # the budget, not the step count, ended it
    assert float(seconds) <= budget + 5  # the trainer's own clock, from the call to its return


# ----------------------------------------------------------------------------------------------------------------
# Every endpoint, at its caps


def endpoints(url: str) -> list[tuple[str, list[dict]]]:
    """(api name, input components) of every event a client can call by name: public, undocumented and private
    alike (Gradio answers /gradio_api/call/<name> for all three). An event with the inputs and outputs of one
    already listed is the same handler on another trigger (a Submit key, a _download step's twin) and is skipped."""
    config = httpx.get(url + "config", timeout=60).json()
    components = {c["id"]: c for c in config["components"]}
    seen, found = set(), []
    for dep in config["dependencies"]:
        key = (tuple(dep["inputs"]), tuple(dep["outputs"]))
        if dep["backend_fn"] and dep["api_name"] not in TRAINERS and key not in seen:
            seen.add(key)
            found.append((dep["api_name"], [components[i] for i in dep["inputs"]]))
    return found


def at_caps(component: dict, shrink: int) -> object:
    """The component's value at its cap: text repeated to ``max_length // 4**shrink`` characters (at shrink 4, the
    box's own default, which is valid by design), numbers at their maxima, choices at their defaults."""
    kind, props = component["type"], component["props"]
    if kind == "textbox":
        default = props.get("value") or FILLER
        length = props["max_length"] // 4 ** shrink if shrink < 4 else len(default)
        return ((default + " ") * (length // (len(default) + 1) + 1))[:length]
    if kind in ("slider", "number"):
        return props["maximum"] if props.get("maximum") is not None else props.get("value")
    if kind in ("dropdown", "radio"):
        return props.get("value") if props.get("value") is not None else (props["choices"] or [[None, None]])[0][1]
    if kind == "html":  # a preset bar sends a preset's slug; a lesson box, a step number
        bar = props.get("props") or {}
        return (bar.get("items") or [{"slug": ""}])[0]["slug"] if "items" in bar else str(len(bar.get("steps", [1])))
    if kind == "dataset":
        return 0
    return props.get("value")  # a checkbox, a table (its default), a file (none)


def largest_answer(url: str, api: str, inputs: list[dict]) -> tuple[str, int, list]:
    """(api, size of its first complete answer or 0, the refusals before it) for the endpoint at its caps."""
    sent = [c for c in inputs if c["type"] != "state"]  # a session's State is the server's; clients omit it
    refusals = []
    for shrink in range(5) if any(c["type"] == "textbox" for c in sent) else [0]:
        kind, data, size = call(url, api, [at_caps(c, shrink) for c in sent])
        if kind == "complete":
            return api, size, refusals
        refusals.append((shrink, kind, size, data))
    return api, 0, refusals


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_every_endpoint_at_its_caps_answers_within_the_bound(url):
    """Each endpoint with its text at the box's cap and its numbers at their maxima. A refusal is bounded by being one
    sentence; then the text shrinks (1/4, 1/16, 1/64, the box's default) until the view accepts it, so the largest
    answer it actually gives is measured too. Four clients at a time, as a class would call."""
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda endpoint: largest_answer(url, *endpoint), endpoints(url)))
    for api, size, refusals in answers:
        assert size < ANSWER_BOUND, (api, size)
        for shrink, kind, length, data in refusals:
            assert kind == "error", (api, shrink, kind, data)  # not a dropped connection
            assert length < ERROR_BOUND and data["error"].strip(), (api, shrink, data)
            assert not INTERNAL.fullmatch(data["error"]), (api, shrink, data["error"])
    sizes = {api: size for api, size, _ in answers if size}
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:6]
    print(f"\n{len(sizes)} of {len(answers)} endpoints answered; largest: {largest}; "
          f"refused every size: {[api for api, size, _ in answers if not size]}")
    assert len(sizes) > 0.8 * len(answers)  # most views answer: the sweep did not just collect refusals


# ----------------------------------------------------------------------------------------------------------------
# Schemas say the types accepted; mismatches get a clear error

TYPE_REFUSED = re.compile("^(The value given for “|This endpoint takes )")


def refused_as(data) -> str:
    return data.get("error") or "" if isinstance(data, dict) else ""


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_every_endpoint_accepts_the_example_values_its_schema_advertises(url):
    """/gradio_api/info gives each parameter a type and an example_input (what gradio_client and the API page show a
    caller). Sent as advertised, no value may be refused for its type. An upload's example is a file on github.com,
    which this offline server cannot fetch: an upload is sent as none (the parameter is optional everywhere)."""
    info = httpx.get(url + "gradio_api/info", timeout=60).json()["named_endpoints"]

    def example_call(item):
        name, endpoint = item
        data = [None if p["component"] == "File" else p["example_input"] for p in endpoint["parameters"]]
        return name, *call(url, name.lstrip("/"), data)[:2]

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(example_call, [(n, e) for n, e in info.items() if n.lstrip("/") not in TRAINERS]))
    assert len(answers) > 100
    for name, kind, data in answers:
        assert kind in ("complete", "error"), (name, kind, data)
        assert not TYPE_REFUSED.match(refused_as(data)), (name, data)
        assert not INTERNAL.fullmatch(refused_as(data)), (name, data)


WRONG_TYPE = {"textbox": 12345, "slider": "many", "number": "many", "checkbox": "yes", "dropdown": {"a": 1},
              "radio": ["a"], "dataframe": "a table"}


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_mismatched_inputs_get_a_clear_error_naming_the_parameter(url):
    """Every endpoint, over raw HTTP: a value too many, then a value of the wrong type in its first typed input.
    Each is refused before the handler with a sentence that names what was expected; none is a traceback."""
    def mismatches(endpoint):
        api, inputs = endpoint
        sent = [c for c in inputs if c["type"] != "state"]
        values = [at_caps(c, 4) for c in sent]
        # more values than the event has inputs, its States counted (a client may send a slot for each State)
        found = [(api, "arity", *call(url, api, values + ["extra"] * (len(inputs) - len(sent) + 1))[:2])]
        typed = [i for i, c in enumerate(sent) if c["type"] in WRONG_TYPE]
        if typed:
            wrong = values[:typed[0]] + [WRONG_TYPE[sent[typed[0]]["type"]]] + values[typed[0] + 1:]
            found.append((api, sent[typed[0]]["type"], *call(url, api, wrong)[:2]))
        return found

    # The tabs' _open, _preset, _lesson and _download events share four handlers (and one guard): one of each.
    shared, spot = set(), []
    for api, inputs in endpoints(url):
        suffix = next((s for s in ("_open", "_preset", "_lesson", "_download") if api.endswith(s)), api)
        if suffix not in shared:
            shared.add(suffix)
            spot.append((api, inputs))
    with ThreadPoolExecutor(4) as pool:
        answers = [answer for found in pool.map(mismatches, spot) for answer in found]
    assert len(answers) > 100
    for api, what, kind, data in answers:
        assert kind == "error", (api, what, data)
        message = refused_as(data)
        if what == "arity":
            assert re.fullmatch(r"This endpoint takes \d+ values \(.*\); the request sent \d+\.", message), (api, data)
        else:
            assert message.startswith("The value given for “") and "expected " in message, (api, what, data)
