"""Every response is bounded, schemas say what endpoints accept, mismatches are named, trainers keep their budget
(issue 33 §5). Raw HTTP against `python app.py --offline`, the way a script that ignores the browser's limits calls.
"""
from __future__ import annotations

import json
import re

import httpx
import pytest

from core.limits import MAX_SCORED_TOKENS
from demo.attention import SCORES
from tests.live_app import app_env, running_app


@pytest.fixture(scope="module")
def url():
    with running_app("--offline", "--device", "cpu", env=app_env(HF_HUB_OFFLINE="1")) as app:
        yield app.url


def call(url: str, api: str, data: list) -> tuple[str, object, int]:
    """(kind of the last event: "complete" or "error", its data, bytes of the whole answer)."""
    with httpx.Client(timeout=300) as client:
        joined = client.post(url + f"gradio_api/call/{api}", json={"data": data})
        assert joined.status_code == 200, joined.text
        answer = client.get(url + f"gradio_api/call/{api}/{joined.json()['event_id']}")
    events = [line for line in answer.text.splitlines() if line.startswith(("event:", "data:"))]
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
    assert "“d_model”" in data["error"] and "64, 128, 256, 512" in data["error"] and "str" in data["error"]


SCORE = next(iter(SCORES))  # scaled dot product


def matrix(rows: list[list[float]]) -> dict:
    return {"headers": [f"d{j + 1}" for j in range(len(rows[0]))], "data": rows}


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


def test_the_nnlm_at_its_sliders_maxima_stops_within_its_budget(url):
    budget = 5  # the slider's minimum; 120 s at its maximum works the same way and takes 2 minutes
    kind, data, _ = call(url, "embeddings_nnlm", ["moby_dick", 4, 128, 256, 5000, budget, "the white"])
    assert kind == "complete", data
    steps, seconds = re.search(r"([\d,]+) steps in ([\d.]+) s", data[0]).groups()
    assert int(steps.replace(",", "")) < 5000  # the budget, not the step count, ended it
    assert float(seconds) <= budget + 5  # the trainer's own clock, from the call to its return
