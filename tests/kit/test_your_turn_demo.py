""""Your turn" (issue #51), the UI's side: demo/kit/your_turn.py's endpoints, called as handlers and through
gradio_client against the built app, and the block each tab gets.

Whether each check's answer is the model's (counts by hand, the reference library, the formula) is core's test
(tests/checks/test_checks*.py); here the answer is read from the check itself, and what is asserted is what the learner and
an API client get: the verdict beside the prediction, the rank or the distance, the figure with the pick marked, the
explanation with its §, the download card for a missing checkpoint, and a clear message that keeps the prediction.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import gradio as gr
import pytest

from core import checks as registry
from core.checks.base import Answer, Check, Setup
from core.text.i18n import text
from demo.server import downloads
from demo.kit import static_html, your_turn

EN = SimpleNamespace(headers={"accept-language": "en-US"})
ZH = SimpleNamespace(headers={"accept-language": "zh-CN,zh;q=0.9"})
SLUGS = list(registry.CHECKS)


def predictions(check: Check) -> tuple[object, object]:
    """A right and a wrong prediction for ``check``, from its own setup and the model's answer (read now); for a
    check whose checkpoint is not on this machine, twice a valid one (its answer is the download card)."""
    setup, answer = check.setup(None), check.answer(None)
    if answer.missing:
        first = setup.options[0] if setup.options else None  # a missing tokenizer may leave no options to show
        valid = {"number": setup.low, "order": list(setup.options), "token": 0}.get(check.kind, first)
        return valid, valid
    if check.kind == "number":
        far = setup.low if abs(answer.value - setup.low) > abs(setup.high - answer.value) else setup.high
        return answer.value, far
    if check.kind == "order":
        return list(answer.value), list(reversed(answer.value))
    scores = dict(answer.scores)
    best = answer.value if check.kind == "choice" else setup.options[answer.value]
    sign = 1 if answer.higher_wins else -1
    worse = [i for i, option in enumerate(setup.options)
             if option in scores and sign * scores[option] < sign * scores[best]]
    wrong = worse[-1] if worse else next(i for i, option in enumerate(setup.options) if option != best)
    return answer.value, (setup.options[wrong] if check.kind == "choice" else wrong)


def test_every_tab_with_checks_lists_them_with_a_question_in_both_languages():
    for lang in ("en", "zh"):
        listed = your_turn.checks_list(lang, request=EN)
        assert [c["slug"] for c in listed] == SLUGS
        for item in listed:
            check = registry.get(item["slug"])
            assert item["tab"] == check.tab and item["kind"] == check.kind and item["section"] == f"§{check.section}"
            assert item["question"] == text(check.question_key, lang) and "checks." not in item["question"]
    assert your_turn.checks_list("", request=ZH)[0]["question"] == text(registry.get(SLUGS[0]).question_key, "zh")


@pytest.mark.parametrize("slug", SLUGS)
def test_a_right_and_a_wrong_prediction_get_the_models_answer_beside_them(slug):
    check = registry.get(slug)
    right, wrong = predictions(check)
    got = your_turn.check_answer(slug, right, request=EN)
    if check.answer(None).missing:  # offline, without the checkpoint: the view's card, never an answer
        assert got["missing"] and got["answer"] is None and got["right"] is None
        assert f"hf download {got['missing']}" in got["card"]
        return
    assert got["right"] is True and got["missing"] is None
    assert got["answer_text"] and got["answer_text"] in got["verdict"]
    assert got["explanation"] == text(check.why_key, "en") and "§" in got["explanation"]
    missed = your_turn.check_answer(slug, wrong, request=ZH)
    assert missed["right"] is False
    assert missed["answer_text"] in missed["verdict"] and missed["explanation"] == text(check.why_key, "zh")
    if check.kind == "number":  # how far off, in the learner's language
        off = abs(float(wrong) - float(check.answer(None).value))
        assert math.isclose(missed["detail"]["abs_error"], off, rel_tol=1e-9)
        assert "相差" in missed["verdict"]
    elif check.kind in ("choice", "token"):
        assert missed["detail"]["rank"] > 1 and f"排第 {missed['detail']['rank']}" in missed["verdict"]
    if check.kind != "order":  # the figure marks the model's answer ✓ and the learner's pick ◆
        assert "✓" in got["figure"] and "◆" in got["figure"] and "◆" in missed["figure"]


def test_the_seeds_bigram_answer_is_shown_with_its_rank_and_its_bars():
    # by hand on the seed's toy corpus: 的 is followed by 词性 twice, 磁铁 once, 磁性 never: P = 2/3 and 0
    wrong = your_turn.check_answer("ngram-cixing", "磁性", request=EN)
    assert wrong["right"] is False and wrong["answer"] == "词性" and wrong["detail"] == {"rank": 2, "of": 2}
    assert wrong["verdict"] == "You picked 磁性; the model's answer is 词性. Your pick ranks 2 of 2."
    assert 'data-mark="词性 ✓"' in wrong["figure"] and 'data-mark="磁性 ◆"' in wrong["figure"]
    assert 'data-value="0.6666666666666666"' in wrong["figure"]
    assert "static-export" not in wrong["figure"]  # no PNG/SVG button without the script that drives it


def test_the_setup_shows_the_input_without_the_result_and_follows_the_learners_text():
    setup = your_turn.check_setup("ngram-cixing", None, request=EN)
    assert setup["options"] == ["词性", "磁性"] and "的" in setup["text"] and setup["on_own_text"] is False
    assert setup["model"] and setup["settings"] and setup["own_text"] is True
    assert "0.6667" not in str(setup) and "2/3" not in str(setup)
    own = your_turn.check_setup("ngram-cixing", "我 的 磁性 很 强\n你 的 磁性", request=EN)
    assert own["text"] == "我 的 磁性 很 强\n你 的 磁性" and own["on_own_text"] is True
    # "Try it on your own text": the same question answered on it, live
    got = your_turn.check_answer("ngram-cixing", "磁性", "我 的 磁性 很 强\n你 的 磁性", request=EN)
    assert got["right"] is True and got["answer"] == "磁性"


@pytest.mark.parametrize("request_, words", [(EN, "outside the range"), (ZH, "范围")])
def test_bad_input_gets_a_message_in_the_learners_language(request_, words):
    with pytest.raises(gr.Error) as number:
        your_turn.check_answer("ngram-add-one", 7, request=request_)
    assert words in number.value.message and "Traceback" not in number.value.message
    for bad in (("ngram-add-one", 0.1, ""), ("ngram-add-one", 0.1, "字" * 5000), ("ngram-cixing", "北京", None),
                ("no-such-check", "x", None)):
        with pytest.raises(gr.Error) as error:
            your_turn.check_answer(*bad, request=request_)
        message = error.value.message
        assert message and "Error" not in message and "checks." not in message
        if request_ is ZH:
            assert any("\u4e00" <= ch <= "\u9fff" for ch in message.replace("北京", "").replace("字", "")), message


def test_a_checkpoint_not_on_this_machine_shows_the_views_download_card(monkeypatch):
    setup = Setup("Einstein lived in Bern.", "dslim/bert-base-NER", {}, ("Einstein", "lived", "in", "Bern", "."))
    missing = Check("ner-test-missing", "ner", "token", "14.4", lambda own: setup,
                    lambda own: Answer(None, missing="dslim/bert-base-NER"))
    monkeypatch.setitem(registry.CHECKS, missing.slug, missing)
    got = your_turn.check_answer(missing.slug, 0, request=EN)
    assert got["missing"] == "dslim/bert-base-NER" and got["right"] is None and got["answer"] is None
    with downloads.using_language("en"):
        card = downloads.missing_model_card("dslim/bert-base-NER", "your_turn.card_shows")
    assert got["card"] == static_html.markdown(card) and "hf download dslim/bert-base-NER" in got["card"]


def test_every_tab_with_checks_gets_one_block_and_the_overviews_holds_the_map():
    import app

    built = app.build_app()
    boxes = [b for b in built.blocks.values() if "your-turn-box" in (getattr(b, "elem_classes", None) or [])]
    tabs_with_checks = [tab for tab in registry.base.TABS if registry.checks_for(tab)]
    assert sorted(box.props["tab"] for box in boxes) == sorted(tabs_with_checks)
    maps = [box for box in boxes if 'class="yt-map"' in box.html_template]
    assert [box.props["tab"] for box in maps] == ["overview"]
    names = {fn.api_name for fn in built.fns.values()}
    assert {"checks_list", "check_setup", "check_answer"} <= names


@pytest.fixture(scope="module")
def client():
    from gradio_client import Client

    with gr.Blocks() as blocks:
        your_turn.register_api()  # what app.build_app registers
    blocks.queue().launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        yield Client(blocks.local_url, verbose=False, headers={"Accept-Language": "zh-CN"})
    finally:
        blocks.close()


def test_gradio_client_lists_and_answers_checks(client):
    listed = client.predict("en", api_name="/checks_list")
    assert [c["slug"] for c in listed] == SLUGS and listed[0]["question"] == text(registry.get(SLUGS[0]).question_key)
    got = client.predict("ngram-cixing", "词性", None, api_name="/check_answer")
    assert got["right"] is True and got["answer"] == "词性" and "§2.1" in got["explanation"]
    assert "你选了" in got["verdict"]  # the caller's language (Accept-Language: zh-CN)
    setup = client.predict("ngram-add-one", None, api_name="/check_setup")
    assert setup["kind"] == "number" and setup["low"] == 0.0 and setup["high"] == 1.0


def test_gradio_client_gets_the_message_for_a_number_out_of_range(client):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as error:
        client.predict("ngram-add-one", 3, None, api_name="/check_answer")
    assert "范围" in str(error.value)
