"""Each tab's main endpoint, driven through gradio_client against `python app.py --offline` (a real subprocess).

This is how a script or a notebook uses the app. Values are checked against the seed's worked examples
(/work/shared/seed-examples.md) or against a reference library on the same input, never against our own output.
"""
from __future__ import annotations

import json
import math

import pytest

import app


@pytest.fixture(scope="module")
def client(offline_app):
    """gradio_client on the worker's offline app (tests/conftest.py)."""
    from gradio_client import Client

    return Client(offline_app.url, verbose=False)


def figure(plot: dict) -> dict:
    """gr.Plot's API value is {"type": "plotly", "plot": <figure JSON>}."""
    assert plot["type"] == "plotly"
    return json.loads(plot["plot"])


def array(value) -> list:
    """A trace's x/y/z as a plain list: plotly ≥ 6 sends numpy arrays as {"dtype", "bdata" (base64), "shape"}."""
    if isinstance(value, dict) and "bdata" in value:
        import base64

        import numpy as np

        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        return flat.reshape([int(n) for n in str(shape).split(",")] if shape else -1).tolist()
    return list(value)


def rows(frame: dict) -> list[list]:
    return frame["data"]


def reference_tokenizer():
    """transformers' BERT tokenizer on the vocabulary the offline views use (MiniLM-L6 = bert-base-uncased's)."""
    import transformers

    from core.loading import resolve


    from core.loading.checkpoints import MINILM_ID

    return transformers.BertTokenizerFast.from_pretrained(str(resolve.resolve(MINILM_ID).directory))


# ----------------------------------------------------------------------------------------------------------------
# Every tab of app.TABS is usable from gradio_client: its endpoints are named after it


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_every_tab_has_documented_endpoints_named_after_it(client):
    named = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    for tab in (app.tab_id(module) for module in app.TABS):
        assert any(name.startswith(f"/{tab}_") for name in named), f"no documented /{tab}_* endpoint"


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_elmo_layers_weighted_sum_through_the_api(client):
    """ELMo (§7), a sub-tab of the RNN & LSTM tab: s = softmax(w) recomputed here by hand; the word vector h⁽⁰⁾ is
    read from the word's characters alone, so its cosine across the two sentences is exactly 1."""
    from demo.recurrent.elmo import MONEY, RIVER

    note, plot, table = client.predict("bank", RIVER, MONEY, 0.0, 1.0, 2.0, 1.5, api_name="/elmo_layers")
    z = sum(math.exp(w) for w in (0.0, 1.0, 2.0))
    assert [row[1] for row in rows(table)] == pytest.approx([1 / z, math.e / z, math.e ** 2 / z, 1.5], abs=1e-3)
    cosines = array(figure(plot)["data"][0]["y"])
    assert len(cosines) == 4 and cosines[0] == pytest.approx(1.0, abs=1e-6)
    assert "**bank**" in note


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_overview_ladder_through_the_api_equals_core(client):
    """The ladder scores one text through every rung; the API's totals are core.ladder.ladder's (whose rungs are checked
    against each tab's own model and a hand count in tests/ladder/test_ladder.py)."""
    from core.ladder import ladder

    text = "Call me Ishmael."
    summary, strip, totals, table = client.predict(text, api_name="/overview_score")
    expected = {score.rung.name: score.total_bits for score in ladder.score_text(text).scores}
    got = {row[0]: row[1] for row in rows(table)}
    assert got.keys() == expected.keys() and len(got) >= 13
    for name, bits in expected.items():
        assert got[name] == float(f"{bits:.4g}"), name  # 4 significant digits (demo.kit.widgets.sig4)
    assert len(figure(strip)["data"][0]["x"]) == len(text)  # one cell per character, aligned across rungs
    assert "16 characters" in summary


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_transformer_base_parameters_from_the_seed_shape(client):
    """Seed §11: N = 6 + 6 layers, d_model = 512, 8 heads, FFN 2048, a shared 37,000-token vocabulary. The total is
    checked independently in tests/transformer/test_transformer.py against torch.nn.Transformer's own module count."""
    summary, table, plot = client.predict(6, 6, 512, 8, 2048, 37000, True, api_name="/transformer_base_params")
    assert "63,082,496" in summary
    d, d_ff = 512, 2048
    per_layer = {(row[0], row[1]): str(row[3]).replace(",", "") for row in rows(table)}
    assert per_layer[("encoder layer", "self-attention")] == str(4 * d * d + 4 * d)  # W_Q, W_K, W_V, W_O + biases
    assert per_layer[("encoder layer", "FFN")] == str(2 * d * d_ff + d_ff + d)  # W1, b1, W2, b2
    assert figure(plot)["data"], "the bar chart has data"


def test_ngram_counts_reproduce_the_seed(client):
    """Seed §2.1 on the toy corpus: P(词性 | 的) = 2/3 by MLE, and (2+1)/(3+12) = 0.2 with add-one."""
    summary, formula, table, plot = client.predict(own_text="", upload=None, smoothing="mle", context="的",
                                                   word="词性", api_name="/ngram_counts")
    assert "|V| = 12" in summary
    assert "2 / 3" in formula
    counts = {row[0]: row[1:] for row in rows(table)}
    assert counts["词性"][:2] == [2, 3] and math.isclose(counts["词性"][2], 2 / 3, rel_tol=1e-4)
    bars = figure(plot)["data"][0]
    assert math.isclose(dict(zip(array(bars["y"]), array(bars["x"])))["词性"], 2 / 3, rel_tol=1e-4)

    _, formula, table, _ = client.predict(own_text="", upload=None, smoothing="add_k", k=1, context="的", word="词性",
                                          api_name="/ngram_counts")
    assert "= 3 / 15 = **0.2**" in formula  # the seed's exact value, not 0.2000 (issue #31: 4 significant digits)
    assert math.isclose({row[0]: row[-1] for row in rows(table)}["词性"], 0.2, rel_tol=1e-4)


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_ngram_counts_read_an_uploaded_file_and_refuse_unknown_choices(client, tmp_path):
    """The n-gram events preprocess their inputs in the handler (preprocess=False): an upload still arrives as a
    file, and a value that is not one of a radio's choices is still refused with a message."""
    from gradio_client import handle_file

    from demo.ngram.ngram import OWN

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c\na b c\na b d\n", encoding="utf-8")  # b is followed by c twice, by d once
    _, formula, table, _ = client.predict(corpus=OWN, own_text="", upload=handle_file(str(corpus)), smoothing="mle",
                                          context="b", word="c", api_name="/ngram_counts")
    assert "2 / 3" in formula
    # |V| = {a, b, c, d}; a and b never follow b
    assert {row[0]: row[1] for row in rows(table)} == {"c": 2, "d": 1, "(each of 2 unseen tokens)": 0}

    with pytest.raises(Exception, match="“smoothing” could not be used: expected one of .*got “no-such-smoothing”"):
        client.predict(own_text="", upload=None, smoothing="no-such-smoothing", context="的", word="词性",
                       api_name="/ngram_counts")


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_embeddings_analogy_finds_queen(client):
    """GloVe 6B 50d's best-known analogy: king − man + woman ≈ queen."""
    plot, text = client.predict(a="king", b="man", c="woman", topn=5, api_name="/embeddings_analogy")
    bars = figure(plot)["data"][0]
    words = array(bars["y"] if bars.get("orientation") == "h" else bars["x"])
    assert words[0] == "queen"
    assert "queen" in text
    assert not {"king", "man", "woman"} & set(words)  # the input words are left out, as gensim's most_similar does


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_embeddings_lookup_is_the_seed_product(client):
    """Seed §3: [0 0 0 1 0] × Q = [10 12 19]."""
    text, _ = client.predict(word_number=4, api_name="/embeddings_lookup")
    assert "10" in text and "12" in text and "19" in text


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_lstm_generate_continues_the_prompt_and_is_seeded(client):
    prompt = "Call me Ishmael. "
    first = client.predict(prompt=prompt, length=40, temperature=0.8, top_k=5, top_p=0.9, seed=3,
                           api_name="/lstm_generate")
    again = client.predict(prompt=prompt, length=40, temperature=0.8, top_k=5, top_p=0.9, seed=3,
                           api_name="/lstm_generate")
    rnn_text, lstm_text, note, *_ = first
    for text in (rnn_text, lstm_text):
        assert text.startswith(prompt.strip()) and len(text) > len(prompt)
    assert first[:2] == again[:2]  # same seed, same text
    assert "top-k 5 · top-p 0.9 · seed 3" in note


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_attention_steps_reproduce_thinking_machines(client):
    """Seed §9: q1·k1 = 112, q1·k2 = 96; ÷ √64 → 14, 12; softmax → 1/(1+e⁻²) = 0.8808."""
    preset = client.predict("thinking-machines", api_name="/attention_steps_preset")  # the preset bar's event
    assert preset[-5][:200] == client.predict(*preset[:11], api_name="/attention_steps")[0][:200]
    arithmetic, scores, scaled, probs, _ = preset[-5:]  # its inputs (11), its note, then the step view's results
    assert "112" in arithmetic and "96" in arithmetic
    assert array(figure(scores)["data"][0]["z"])[0] == pytest.approx([112, 96])
    assert array(figure(scaled)["data"][0]["z"])[0] == pytest.approx([14, 12])
    expected = 1 / (1 + math.exp(-2))
    assert array(figure(probs)["data"][0]["z"])[0] == pytest.approx([expected, 1 - expected], abs=1e-4)


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_mlm_inputs_match_the_reference_tokenizer(client):
    """Offline, the input view runs on MiniLM's vocabulary (bert-base-uncased's); transformers gives the same ids."""
    notice, _, table, *plots = client.predict(model_id="bert-base-uncased", text="my dog is cute",
                                              pair="he likes playing", api_name="/mlm_inputs")
    assert "not available" in notice or "offline" in notice  # it says which model it could not load, and why
    encoded = reference_tokenizer()("my dog is cute", "he likes playing")
    assert [row[2] for row in rows(table)] == encoded["input_ids"]
    assert [row[3] for row in rows(table)] == encoded["token_type_ids"]
    assert all(figure(p)["data"] for p in plots)


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_ner_offline_still_tokenises_and_says_how_to_get_the_model(client):
    text = "My name is Wolfgang and I live in Berlin"
    out = client.predict(text=text, model_id="dslim/bert-base-NER", strategy="first", api_name="/ner_tag")
    note, tokens = out[0], out[-1]
    assert "dslim/bert-base-NER" in note and "hf download" in note
    expected = reference_tokenizer()(text, add_special_tokens=False)
    assert [row[2] for row in rows(tokens)] == expected["input_ids"]


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_ner_converts_the_seed_bio_line_to_iobes(client):
    """Seed §14: 爱 B-PER, 因 I-PER, 斯坦 E-PER, 在 O, 柏林 S-LOC, 发表 O, 演讲 O."""
    table, _ = client.predict(line="爱/B-PER 因/I-PER 斯坦/I-PER 在/O 柏林/B-LOC 发表/O 演讲/O", api_name="/ner_convert")
    assert [row[2] for row in rows(table)] == ["B-PER", "I-PER", "E-PER", "O", "S-LOC", "O", "O"]


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_qa_layout_is_cls_question_sep_context_sep(client):
    question, context = "What causes precipitation to fall?", "Precipitation falls under gravity."
    layout, note, table = client.predict(model_id="distilbert-base-cased-distilled-squad", question=question,
                                         context=context, doc_stride=128, max_seq_len=384, api_name="/qa_layout")
    encoded = reference_tokenizer()(question, context)
    reference = reference_tokenizer().convert_ids_to_tokens(encoded["input_ids"])
    assert [row[2] for row in rows(table)] == reference
    assert [row[3] for row in rows(table)] == encoded["token_type_ids"]
    assert "not available" in note  # offline: it says whose tokenizer it used instead


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_classify_offline_shows_the_pair_layout_and_how_to_get_the_model(client):
    a, b = "I like you very much.", "I am very fond of you."
    summary, probs, vector, logits, layout, note, table = client.predict(
        model_id="textattack/bert-base-uncased-MRPC", task="sentence pair", text_a=a, text_b=b, max_length=128,
        api_name="/classify_run")
    encoded = reference_tokenizer()(a, b)
    assert [row[1] for row in rows(table)] == reference_tokenizer().convert_ids_to_tokens(encoded["input_ids"])
    assert [row[2] for row in rows(table)] == encoded["token_type_ids"]
    assert "hf download textattack/bert-base-uncased-MRPC" in summary



# ----------------------------------------------------------------------------------------------------------------
# What a script that gets the HTTP API wrong is told, on the live app (demo/server/serving.py KnownCalls, REFUSALS)


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_a_malformed_body_an_unknown_call_and_an_upload_too_big_are_answered_in_the_learners_words(offline_app):
    """Before: pydantic's English list echoing the body (422); a stream cut mid-answer for an event id no call
    returned; Gradio's English plain text for an upload over 5 MB (413)."""
    import httpx

    from core.text.i18n import text

    url, zh = offline_app.url, {"accept-language": "zh-CN"}
    with httpx.Client(timeout=60) as client:
        for body in ('{"data": {"x": 1}}', '{"data": null}', "{}", "{not json"):
            for route in ("gradio_api/call/overview_score", "gradio_api/queue/join"):
                answer = client.post(url + route, content=body, headers={**zh, "content-type": "application/json"})
                assert answer.status_code == 422 and answer.json() == {"detail": text("common.api_malformed_body",
                                                                                      "zh")}, (route, answer.text)
        answer = client.post(url + "gradio_api/call/overview_score", content="{}")
        assert answer.json()["detail"].startswith("The request's body could not be read")  # no Accept-Language
        answer = client.get(url + "gradio_api/call/overview_score/not-an-event-id", headers=zh)
        assert answer.status_code == 404 and "“not-an-event-id”" in answer.json()["error"]
        event = client.post(url + "gradio_api/call/overview_score", json={"data": ["the cat sat"]}).json()["event_id"]
        streamed = client.get(url + f"gradio_api/call/overview_score/{event}").text  # a call it started: its answer
        assert "event: complete" in streamed, streamed[:500]
        # The API page's curl snippet: named values to /call/v2/<name>, then the answer from /call/<name>/<event_id>.
        event = client.post(url + "gradio_api/call/v2/overview_score", json={"text": "the cat sat"}).json()["event_id"]
        streamed = client.get(url + f"gradio_api/call/overview_score/{event}").text
        assert "event: complete" in streamed, streamed[:500]
        answer = client.post(url + "gradio_api/upload", headers=zh, files={"files": ("big.txt", b"a" * 5_300_000)})
        assert answer.status_code == 413 and answer.json() == {"detail": "文件超过了这个应用 5 MB 的上限。请上传更小的文件。"}
        answer = client.post(url + "gradio_api/upload", files={"files": ("small.txt", b"the cat sat")})
        assert answer.status_code == 200 and len(answer.json()) == 1  # one file's handle, as before
