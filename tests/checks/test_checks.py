"""The "Your turn" checks (issue #51): the registry, grading, bad input, and the texts in both languages.

What each check answers is compared with an independent computation in tests/checks/test_checks_answers.py (the models
shipped in assets/ and the packaged GloVe and MiniLM) and tests/checks/test_checks_hub.py (the Hub checkpoints, on tiny
random ones)."""
import ast
import re
from pathlib import Path

import pytest

from core.text import i18n
from core.checks import CHECKS, checks_for, get
from core.checks.base import KINDS, MAX_OWN_CHARS, TABS, Answer, Check, Setup, grade, own
from core.text.errors import UserInputError

# ----------------------------------------------------------------------------------------------------------------
# The registry


def test_every_tab_has_three_checks_and_there_are_36_in_all():
    assert len(CHECKS) >= 36
    for tab in TABS:
        assert len(checks_for(tab)) >= 3, tab
    assert {check.tab for check in CHECKS.values()} == set(TABS)


def test_checks_are_in_tab_order_with_unique_well_formed_slugs():
    source = (Path(__file__).resolve().parents[2] / "app.py").read_text(encoding="utf-8")
    order = re.search(r"^TABS = \[(.*)\]$", source, re.M).group(1).replace(" ", "").split(",")  # as the app shows
    assert list(TABS) == order
    tabs = [check.tab for check in CHECKS.values()]
    assert tabs == sorted(tabs, key=order.index)  # grouped by tab, in the app's order
    slugs = [check.slug for check in CHECKS.values()]
    assert len(slugs) == len(set(slugs)) and all(re.fullmatch(r"[a-z0-9-]+", s) for s in slugs)
    assert all(check.kind in KINDS and check.section for check in CHECKS.values())
    assert {check.kind for check in CHECKS.values()} == set(KINDS)  # every kind of prediction is used


def test_the_checks_the_issue_names_are_there():
    for slug in ["ngram-cixing", "ngram-add-one", "ngram-perplexity", "embeddings-neighbour", "embeddings-analogy",
                 "lstm-gradient", "attention-it", "attention-causal", "transformer-bert-params", "transformer-gpt-next",
                 "transformer-top-p", "mlm-char-fill", "mlm-hub-fill", "mlm-sides", "ner-bio", "ner-iobes",
                 "qa-start", "classify-class", "classify-finetune", "overview-ladder-best"]:
        assert slug in CHECKS
    whys = [slug for slug in CHECKS if slug.endswith("-why")]
    assert {get(slug).tab for slug in whys} >= {"lstm", "transformer", "mlm", "qa", "classify"}


def test_every_text_is_in_both_languages_with_the_same_fields():
    en, zh = i18n.table("en"), i18n.table("zh")
    for check in CHECKS.values():
        for key in (check.question_key, check.why_key, check.own_hint):
            assert key in en and key in zh, key
            assert en[key].strip() and zh[key].strip() and en[key] != zh[key]
        assert "§" in en[check.why_key] and "§" in zh[check.why_key]  # the why cites the seed
    ours = {k for k in en if k.startswith("checks.")}
    assert ours == {k for k in zh if k.startswith("checks.")}
    for key in ours:
        assert i18n.placeholders(en[key]) == i18n.placeholders(zh[key]), key


def test_option_labels_are_keys_in_both_languages():
    """The setups that need no model (the rest are read in tests/checks/test_checks_answers.py)."""
    for slug in ["attention-causal", "overview-ladder-best", "overview-ladder-order", "classify-finetune", "mlm-sides"]:
        setup = get(slug).setup(None)
        assert len(setup.option_labels) == len(setup.options) > 1
        for key in setup.option_labels:
            assert key in i18n.table("en") and key in i18n.table("zh"), key


def test_get_refuses_a_forged_slug_in_the_learners_language():
    for forged in ["nope", "ngram-cixing<script>", "", None, 3, "x" * 500]:
        with pytest.raises(UserInputError) as caught:
            get(forged)
        assert caught.value.key == "checks.unknown"
        assert len(caught.value.message("zh")) < 200 and "没有" in caught.value.message("zh")


# ----------------------------------------------------------------------------------------------------------------
# Grading, on checks whose answers are plain functions


def fixed(kind, value, scores=(), options=(), higher_wins=True, low=None, high=None, **check):
    calls = []

    def answer(own_text):
        calls.append(own_text)
        return Answer(value, scores, "test", higher_wins=higher_wins)

    made = Check("test-" + kind, "ngram", kind, "0", lambda own_text: Setup("text", "test", {}, options, low, high),
                 answer, **check)
    return made, calls


def test_choice_is_right_only_for_the_answer_and_ranks_the_pick():
    check, _ = fixed("choice", "b", (("a", 0.2), ("b", 0.5), ("c", 0.3)), ("a", "b", "c"))
    assert grade(check, "b").right and grade(check, "b").detail == {"rank": 1, "of": 3}
    wrong = grade(check, "a")
    assert not wrong.right and wrong.detail == {"rank": 3, "of": 3} and wrong.answer.value == "b"
    assert grade(check, "c").detail["rank"] == 2


def test_choice_where_the_lowest_score_wins_and_ties():
    check, _ = fixed("choice", "x", (("x", 1.5), ("y", 9.0)), ("x", "y"), higher_wins=False)
    assert grade(check, "x").right and grade(check, "y").detail == {"rank": 2, "of": 2}
    tie, _ = fixed("choice", "x", (("x", 1.0), ("y", 1.0)), ("x", "y"))
    assert grade(tie, "y").right  # a pick that ties the answer's score is right too


def test_number_is_right_within_its_tolerance_and_reports_the_distance():
    check, _ = fixed("number", 200.0, low=0, high=1000, tolerance=0.1)
    verdict = grade(check, 215)
    assert verdict.right and verdict.detail["abs_error"] == pytest.approx(15) and \
        verdict.detail["rel_error"] == pytest.approx(0.075)
    assert not grade(check, "230").right  # a number typed in a box arrives as text
    zero, _ = fixed("number", 0.0, low=-1, high=1, tolerance=0.1, abs_tolerance=0.01)
    assert grade(zero, 0.005).right and not grade(zero, 0.05).right


def test_token_ranks_by_position_even_when_tokens_repeat():
    check, _ = fixed("token", 2, (("the", 0.1), ("cat", 0.3), ("the", 0.6)), ("the", "cat", "the"))
    assert grade(check, 2).right and grade(check, "2").right
    first = grade(check, 0)
    assert not first.right and first.detail == {"rank": 3, "of": 3}  # the same word, another place


def test_order_counts_the_positions_right():
    check, _ = fixed("order", ("b", "a", "c"), options=("a", "b", "c"))
    assert grade(check, ["b", "a", "c"]).right
    verdict = grade(check, '["a", "b", "c"]')  # as JSON text, as a form sends it
    assert not verdict.right and verdict.detail == {"positions_right": 1, "of": 3}


@pytest.mark.parametrize("kind, prediction, key", [
    ("number", 1001, "checks.bad_number"), ("number", -0.5, "checks.bad_number"),
    ("number", float("nan"), "checks.bad_number"), ("number", "lots", "checks.not_a_number"),
    ("number", None, "checks.not_a_number"),
    ("choice", "d", "checks.unknown_option"), ("choice", None, "checks.unknown_option"),
    ("choice", ["a"], "checks.unknown_option"),
    ("token", 3, "checks.bad_token"), ("token", -1, "checks.bad_token"), ("token", "1.5", "checks.bad_token"),
    ("token", True, "checks.bad_token"), ("token", "x", "checks.bad_token"),
    ("order", ["a", "b"], "checks.bad_order"), ("order", ["a", "a", "b"], "checks.bad_order"),
    ("order", "a, b, c", "checks.bad_order"), ("order", ["a", "b", "d"], "checks.bad_order"),
])
def test_bad_predictions_are_refused_before_the_model_runs(kind, prediction, key):
    value = {"number": 5.0, "choice": "a", "token": 0, "order": ("a", "b", "c")}[kind]
    check, calls = fixed(kind, value, options=() if kind == "number" else ("a", "b", "c"), low=0, high=1000)
    with pytest.raises(UserInputError) as caught:
        grade(check, prediction)
    assert caught.value.key == key and calls == []
    for lang in ("en", "zh"):  # a message in the learner's language, never a traceback
        assert caught.value.message(lang) and "{" not in caught.value.message(lang)


@pytest.mark.parametrize("own_text, key", [("", "checks.own_empty"), ("   \n\t", "checks.own_empty"),
                                           ("x" * (MAX_OWN_CHARS + 1), "checks.own_too_long")])
def test_empty_or_over_long_own_text_is_refused(own_text, key):
    with pytest.raises(UserInputError) as caught:
        grade(get("ngram-cixing"), "词性", own_text)
    assert caught.value.key == key
    assert own("  my corpus \n", "default") == "my corpus" and own(None, "default") == "default"


def test_own_text_on_a_check_without_one_is_refused():
    with pytest.raises(UserInputError) as caught:
        grade(get("attention-thinking"), 0.5, "my text")
    assert caught.value.key == "checks.no_own_text"


def test_a_missing_checkpoint_gives_its_id_and_no_answer():
    def answer(own_text):
        return Answer(None, model="org/model", missing="org/model")

    check = Check("test-missing", "ner", "choice", "14", lambda own_text: Setup("t", "org/model", {}), answer)
    verdict = grade(check, "anything")
    assert not verdict.right and verdict.detail == {"missing": "org/model"} and verdict.answer.value is None


def test_real_checks_grade_and_follow_their_own_text():
    """Two n-gram checks end to end (cheap); their answers are checked by hand in test_checks_answers.py."""
    assert grade(get("ngram-cixing"), "词性").right
    assert not grade(get("ngram-cixing"), "磁性").right
    with pytest.raises(UserInputError) as caught:
        grade(get("ngram-perplexity"), "a", "only one line")
    assert caught.value.key == "checks.two_lines"


def test_every_setting_name_and_worded_value_is_in_both_languages():
    """Setup.settings are shown in the learner's language: every name given to base.shown(...) and every Say(...)
    value in core/checks/ is a key of both tables (read from the source, so setups that need a model count too)."""
    en, zh = i18n.table("en"), i18n.table("zh")
    folder = Path(__file__).resolve().parents[2] / "core" / "checks"
    paths = sorted(folder.glob("*.py"))
    assert len(paths) >= 12, f"read {len(paths)} files of core/checks/"
    source = "\n".join(path.read_text(encoding="utf-8") for path in paths)
    calls = [node for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "shown"]
    names = {keyword.arg for call in calls for keyword in call.keywords if keyword.arg}
    names |= set(param_count_names())
    values = set(re.findall(r'Say\("(\w+)"\)', source))
    assert {"layer", "smoothing", "method"} <= names and {"integrated_gradients", "on", "yes"} <= values
    for key in [f"checks.setting.{n}" for n in names] + [f"checks.value.{v}" for v in values]:
        assert key in en and key in zh, key


def param_count_names():
    from core.transformer import param_count

    return [key for key in param_count.TRANSFORMER_BASE if key != "name"]  # the Transformer base's shape, as shown
