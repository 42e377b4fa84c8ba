"""torch's thread count is process-wide, and one helper sets it: core.loading.device.one_cpu_thread.

Before, four helpers each saved and restored the count on their own. Interleaved (trainer A saves 2 and sets 1,
trainer B saves 1, A restores 2, B restores 1) they left the whole process on one thread. These tests interleave two
trainers in both orders and check the count comes back, and walk the product's source so that a second setter
cannot creep back in."""
import ast
import threading
from pathlib import Path

import pytest
import torch

from core.embeddings import nnlm
from core.loading.device import one_cpu_thread

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60


@pytest.fixture
def two_threads():
    """Start from a known count above one, so that "left on one thread" is visible; put the old count back."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(before)


def _run(*targets):
    threads = [threading.Thread(target=target) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert not any(thread.is_alive() for thread in threads), "a trainer did not finish"


def _fresh_thread_count() -> int:
    """What a thread started now gets: torch keeps the count per OS thread and a new one takes the last count set."""
    count = []
    _run(lambda: count.append(torch.get_num_threads()))
    return count[0]


@pytest.mark.parametrize("where, inside", [(torch.device("cuda"), 2), (torch.device("mps"), 2),
                                           (torch.device("cpu"), 1), (None, 1)])
def test_one_cpu_thread_only_touches_cpu_work(two_threads, where, inside):
    with one_cpu_thread(where):
        seen = torch.get_num_threads()
    assert seen == inside and torch.get_num_threads() == two_threads


@pytest.mark.parametrize("first_out", ["a", "b"])
def test_interleaved_users_restore_the_count(two_threads, first_out):
    """A enters, B enters, then one leaves and the other; inside, each runs on one thread; afterwards both worker
    threads, the main thread and a new thread are back on two."""
    a_in, b_in, first_left, both_left = (threading.Event() for _ in range(4))
    seen = {}

    def user(name, mine, other):
        with one_cpu_thread(torch.device("cpu")):
            mine.set()
            assert other.wait(TIMEOUT)
            if name != first_out:
                assert first_left.wait(TIMEOUT)
            seen[name] = torch.get_num_threads()
        if name == first_out:
            first_left.set()
            assert both_left.wait(TIMEOUT)
        else:
            both_left.set()
        seen[name + " after"] = torch.get_num_threads()

    _run(lambda: user("a", a_in, b_in), lambda: user("b", b_in, a_in))
    assert (seen["a"], seen["b"]) == (1, 1)
    assert (seen["a after"], seen["b after"]) == (two_threads, two_threads)
    assert torch.get_num_threads() == two_threads
    assert _fresh_thread_count() == two_threads


def test_two_nnlm_trainers_interleaved_leave_the_count(two_threads):
    """Two real training runs overlap: the second starts while the first trains, and the first ends first."""
    first_training, second_training, first_done = threading.Event(), threading.Event(), threading.Event()
    inside, after = [], []

    def first_progress(fraction, message):
        inside.append(torch.get_num_threads())
        first_training.set()
        assert second_training.wait(TIMEOUT)

    def second_progress(fraction, message):
        inside.append(torch.get_num_threads())
        second_training.set()
        assert first_done.wait(TIMEOUT)

    def first():
        nnlm.train("toy_zh", context=1, dim=8, hidden=8, steps=50, seconds=60, progress=first_progress)
        first_done.set()
        after.append(torch.get_num_threads())

    def second():
        assert first_training.wait(TIMEOUT)
        nnlm.train("toy_zh", context=1, dim=8, hidden=8, steps=50, seconds=60, seed=1, progress=second_progress)
        after.append(torch.get_num_threads())

    _run(first, second)
    assert inside and set(inside) == {1}
    assert after == [two_threads, two_threads]
    assert torch.get_num_threads() == two_threads
    assert _fresh_thread_count() == two_threads


def test_the_count_is_set_in_one_place():
    """No module of the app but the device module calls torch.set_num_threads."""
    files = [*ROOT.joinpath("core").rglob("*.py"), *ROOT.joinpath("demo").rglob("*.py"), ROOT / "app.py"]
    assert len(files) > 80, "the walk found too few source files"
    setters = []
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "set_num_threads":
                setters.append(str(file.relative_to(ROOT)))
    assert len(setters) == 2 and {Path(p).name for p in setters} == {"device.py"}, setters
