"""A class's spread and its right / close shares (issue #55 §3), on checks with a fixed setup and answer: the counts
are worked out by hand here, the histogram against numpy's, and right is the learner's own verdict
(core/checks/base.grade) for every kind."""
from __future__ import annotations

import math

import numpy as np
import pytest

from core.checks.base import Answer, Check, Setup, grade
from core.classroom import guard
from core.classroom.tally import BINS, tally


def fixed(kind: str, setup: Setup, answer: Answer, **extra) -> Check:
    return Check(f"t-{kind}", "ngram", kind, "1.1", lambda own: setup, lambda own: answer, **extra)


def test_choice_counts_each_option_and_right_follows_the_verdict():
    setup = Setup("x", "m", {}, options=("a", "b", "c"))
    answer = Answer("b", scores=(("a", 0.2), ("b", 0.5), ("c", 0.3)))
    check = fixed("choice", setup, answer)
    predictions = ["a", "b", "b", "c", "b"]
    t = tally(check, setup, predictions, answer)
    assert t["counts"] == [1, 3, 1] and t["answered"] == 5
    assert t["right"] == 3 == sum(grade(check, p).right for p in predictions)
    assert t["close"] == 1  # "c" ranks second (0.3), "a" third
    assert tally(check, setup, predictions)["answered"] == 5 and "right" not in tally(check, setup, predictions)


def test_number_histogram_matches_numpy_and_close_is_within_twice_the_tolerance():
    setup = Setup("x", "m", {}, low=0.0, high=1.0)
    answer = Answer(0.5)
    check = fixed("number", setup, answer, tolerance=0.1)
    predictions = [0.0, 0.05, 0.5, 0.52, 0.58, 0.62, 0.99, 1.0, 0.3]
    t = tally(check, setup, predictions, answer)
    counts, edges = np.histogram(predictions, bins=BINS, range=(0.0, 1.0))
    assert t["counts"] == counts.tolist()
    assert t["edges"] == pytest.approx(edges.tolist())
    assert t["right"] == 2        # 0.5, 0.52 (within 10 %)
    assert t["close"] == 1        # 0.58 (16 %), not 0.62 (24 %)
    assert t["answer_bin"] == 5   # 0.5 falls in [0.5, 0.6)
    assert t["median"] == 0.52


def test_number_without_a_range_bins_the_predictions_and_the_answer():
    setup = Setup("x", "m", {})
    answer = Answer(1000.0)
    check = fixed("number", setup, answer)
    predictions = [10.0, 200.0, 990.0]
    t = tally(check, setup, predictions, answer)
    counts, _ = np.histogram(predictions, bins=BINS, range=(10.0, 1000.0))
    assert t["counts"] == counts.tolist() and t["answer_bin"] == BINS - 1


def test_token_counts_each_position_even_when_a_token_repeats():
    setup = Setup("the cat the", "m", {}, options=("the", "cat", "the"))
    answer = Answer(1, scores=(("the", 0.1), ("cat", 0.7), ("the", 0.2)))
    check = fixed("token", setup, answer)
    t = tally(check, setup, [0, 2, 2, 1], answer)
    assert t["counts"] == [1, 1, 2]
    assert (t["right"], t["close"]) == (1, 2)  # index 2 (0.2) ranks second


def test_order_counts_places_and_one_swap_is_close():
    setup = Setup("x", "m", {}, options=("a", "b", "c", "d"))
    answer = Answer(("a", "b", "c", "d"))
    check = fixed("order", setup, answer)
    predictions = [["a", "b", "c", "d"], ["b", "a", "c", "d"], ["d", "c", "b", "a"]]
    t = tally(check, setup, predictions, answer)
    assert t["places"] == [[1, 1, 0, 1], [1, 1, 1, 0], [0, 1, 2, 0], [1, 0, 0, 2]]
    assert (t["right"], t["close"]) == (1, 1)


def test_guessing_a_live_code_at_the_rate_limit_is_under_one_percent_in_ten_minutes():
    """docs/TEACHERS.md's arithmetic, from the code's constants: with 100 live classes, a guesser at the global
    failed-join limit, whatever the number of addresses, finds one in 10 minutes with probability < 1 %."""
    space = len(guard.CODE_ALPHABET) ** guard.CODE_LENGTH
    tries = guard.FAILED_JOINS_PER_MINUTE * 10
    chance = 1 - (1 - 100 / space) ** tries
    assert space == guard.CODE_SPACE == 887_503_681
    assert chance == pytest.approx(guard.guess_probability(100, 10))
    assert chance <= tries * 100 / space < 0.01  # the union bound docs/TEACHERS.md states: 3.4e-4
    assert math.isclose(tries * 100 / space, 3000 * 100 / 887_503_681)


def test_codes_and_secrets_come_from_the_whole_alphabet_and_limits_admit_a_class_behind_one_address():
    codes = {guard.new_code() for _ in range(2000)}
    assert len(codes) == 2000 and all(guard.CODE.fullmatch(c) for c in codes)
    assert set("".join(codes)) == set(guard.CODE_ALPHABET)
    secret = guard.new_secret()
    assert guard.TOKEN.fullmatch(secret) and len(secret) >= 43  # 256 bits
    assert guard.same_secret(secret, guard.digest(secret)) and not guard.same_secret(secret + "x", guard.digest(secret))
    # 200 students behind one NAT address: each may join twice and answer ten times within a minute
    assert guard.JOINS_PER_ADDRESS[0] >= 2 * 200 and guard.ANSWERS_PER_ADDRESS[0] >= 10 * 200


def test_the_limiter_forgets_events_older_than_its_window():
    now = [0.0]
    limiter = guard.Limiter(3, 60, clock=lambda: now[0])
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("b")
    now[0] = 59.9
    assert not limiter.allow("a")
    now[0] = 60.0
    assert limiter.allow("a")
