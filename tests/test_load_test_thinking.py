"""benchmarks/load_test.py's pure pieces for issue 56, without a server: the learners' pauses (--think), the ramp's
capacity rule, the command line's defaults, and the CPU readings."""
from __future__ import annotations

import statistics
from itertools import islice

import pytest

from benchmarks import load_test
from benchmarks.load_test import LOAD_EVENT, PAGE, Step, capacity, parse, pauses


def test_pauses_are_exponential_with_the_asked_mean_and_seeded_per_learner():
    drawn = list(islice(pauses(3, 8.0), 20_000))
    assert all(pause >= 0 for pause in drawn)
    assert statistics.fmean(drawn) == pytest.approx(8.0, rel=0.05)  # the standard error is 8/√20000 ≈ 0.7 %
    # exponential, not constant or uniform: the median is the mean × ln 2, and about 5 % of pauses exceed 3 means
    assert statistics.median(drawn) == pytest.approx(8.0 * 0.6931, rel=0.05)
    assert sum(pause > 24.0 for pause in drawn) / len(drawn) == pytest.approx(0.0498, abs=0.01)
    assert list(islice(pauses(3, 8.0), 50)) == drawn[:50]  # the same learner pauses the same in every run
    assert list(islice(pauses(4, 8.0), 50)) != drawn[:50]  # another learner does not
    assert list(islice(pauses(3, 8.0, seed=1), 50)) != drawn[:50]


def test_think_zero_means_no_pause_and_a_negative_think_is_refused():
    assert list(islice(pauses(0, 0.0), 100)) == [0.0] * 100
    with pytest.raises(ValueError):
        next(pauses(0, -1.0))


def test_pauses_leave_the_clicks_as_they_were():
    """The pause draw is apart from the click draw: a learner's clicks are the same with or without pauses."""
    names = ["ngram_counts", "ner_tag", "mlm_fill"]
    before = list(islice(load_test.clicks(5, names, 0.5), 12))
    list(islice(pauses(5, 8.0), 12))
    assert list(islice(load_test.clicks(5, names, 0.5), 12)) == before


def step(learners: int, p95: float, errors: int = 0, endpoints=("ner_tag", "mlm_fill")) -> Step:
    """A hand-made step: every endpoint and the page opens answered 20 times, the slowest at ``p95``."""
    times = [p95 / 2] * 10 + [p95] * 10  # the p95 of these 20 is ``p95``
    latencies = {name: list(times) for name in (PAGE, LOAD_EVENT, *endpoints)}
    return Step(learners, 45.0, latencies, {"ner_tag": ["EventFailed: x"] * errors} if errors else {},
                list(endpoints), server_cpu=60.0, client_cpu=9.0)


def test_a_step_passes_with_0_errors_and_every_p95_within_the_goal():
    assert step(32, 1.5).passes(2.0)
    assert step(32, 2.0).passes(2.0)  # ≤, not <
    assert not step(32, 2.01).passes(2.0)
    assert not step(32, 0.5, errors=1).passes(2.0)
    slow_page = step(32, 0.5)
    slow_page.latencies[PAGE] = [3.0] * 20  # the page open counts like any endpoint
    assert not slow_page.passes(2.0) and slow_page.worst() == (PAGE, 3.0)
    silent = step(32, 0.5)
    del silent.latencies["mlm_fill"]  # an endpoint nobody got an answer from cannot claim its p95
    assert not silent.passes(2.0) and silent.worst() == ("mlm_fill", float("inf"))


def test_a_steps_figures():
    made = step(64, 1.0)
    assert made.clicks == 40 and made.calls_per_second == pytest.approx(40 / 45)  # page opens are not clicks
    assert made.p95("ner_tag") == 1.0 and made.error_count == 0
    assert step(64, 1.0, errors=3).error_count == 3


@pytest.mark.parametrize("results, expected", [
    ([(32, 0.8, 0), (64, 1.2, 0), (128, 1.9, 0), (256, 4.5, 0)], 128),
    ([(32, 0.8, 0), (64, 1.2, 0), (128, 1.9, 2), (256, 4.5, 0)], 64),  # errors fail a step whatever its p95
    ([(32, 0.8, 0), (64, 2.5, 0), (128, 1.9, 0), (256, 4.5, 0)], 32),  # a pass above a failed step does not count
    ([(32, 2.1, 0), (64, 1.0, 0)], None),  # even the smallest class fails
    ([(256, 1.0, 0), (32, 0.5, 0), (128, 0.9, 0), (64, 0.7, 0)], 256),  # steps in any order
])
def test_the_capacity_is_the_largest_class_served_with_every_smaller_one(results, expected):
    assert capacity([step(n, p95, errors) for n, p95, errors in results], 2.0) == expected


def test_the_capacity_follows_the_p95_goal():
    steps = [step(32, 0.8), step(64, 1.2), step(128, 1.9)]
    assert capacity(steps, 1.0) == 32 and capacity(steps, 1.5) == 64 and capacity(steps, 2.0) == 128


def test_the_ramp_table_has_one_row_per_step_with_the_worst_endpoint():
    table = load_test.ramp_table([step(32, 0.8), step(64, 2.5, errors=1)], 2.0).splitlines()
    assert len(table) == 4
    assert table[2].startswith("| 32 | 0.9 | 0 | 1.33 | 0.20 | 0.80 (") and table[2].endswith("| yes |")
    assert table[3].startswith("| 64 | 0.9 | 1 |") and "2.50 (" in table[3] and table[3].endswith("| no |")


def test_the_command_line_keeps_older_runs_and_gives_the_classroom_a_pause():
    default = parse([])
    assert (default.think, default.users, default.seconds, default.steps) == (0.0, 32, 60, [32])
    classroom = parse(["--profile", "classroom"])
    assert (classroom.think, classroom.users, classroom.own_share) == (8.0, 64, 0.5)
    assert classroom.endpoints == list(load_test.CALLS) and not classroom.real_size
    stress = parse(["--profile", "classroom", "--think", "0", "--users", "64", "--seconds", "30"])
    assert (stress.think, stress.steps, stress.seconds) == (0.0, [64], 30)
    ramp = parse(["--profile", "classroom", "--ramp", "64", "32", "256", "128", "--seconds", "45", "--real-size"])
    assert (ramp.steps, ramp.seconds, ramp.think, ramp.real_size) == ([32, 64, 128, 256], 45, 8.0, True)
    assert parse(["--think", "2.5"]).think == 2.5
    assert parse(["--profile", "classroom", "--open-first"]).open_first and not parse([]).open_first


@pytest.mark.parametrize("argv", [["--think", "-1"], ["--ramp", "0", "32"], ["--ramp"],
                                  ["--real-size", "--url", "http://127.0.0.1:7860/"], ["--real-size", "--floor"]])
def test_the_command_line_refuses_what_cannot_run(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        parse(argv)
    assert stopped.value.code == 2


def test_cpu_readings_count_this_process_and_a_session_of_processes():
    import os

    before = load_test.client_cpu_seconds()
    sum(i * i for i in range(300_000))  # some CPU
    assert load_test.client_cpu_seconds() > before
    # this process's session holds this process: at least its CPU (/proc counts in clock ticks; the server is read
    # the same way, by the session id its start_new_session gives it)
    assert load_test.server_cpu_seconds(os.getsid(0)) >= load_test.client_cpu_seconds() - 0.05
    assert load_test.server_cpu_seconds(2 ** 22 + 12345) == 0  # no such session
