"""Shared test fixtures. The repository root is on sys.path via rootdir conftest placement."""
import atexit
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Hermetic: a fresh, empty Hugging Face cache for this test session, set before anything imports huggingface_hub,
# so no machine's real cache changes a result. Tests never reach the real Hub: loading code is exercised with
# checkpoints written into tmp_path, packaged weights, and tests/hub_server.py (a local Hub API on 127.0.0.1).
_HF_HOME = tempfile.mkdtemp(prefix="plm-hf-home-")
atexit.register(shutil.rmtree, _HF_HOME, ignore_errors=True)
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_HUB_CACHE"] = os.path.join(_HF_HOME, "hub")
os.environ.pop("HF_ENDPOINT", None)
# and a fresh data folder: the class store's default file (core/classroom/store.default_location) lands there
os.environ["XDG_DATA_HOME"] = os.path.join(_HF_HOME, "data")
os.environ["HF_HUB_OFFLINE"] = "1"  # overridden, not defaulted: a developer's own setting must not leak in
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# One OpenMP thread in each test worker: the suite runs two workers, each beside its own app and Chromium, on two
# cores. With torch's default of a thread per core, every op's threads spin at a barrier waiting for a core someone
# else holds: three processes computing every preset took 96-156 s each that way, 24 s each on one thread. Set before
# anything imports torch. The apps the tests start keep torch's default, as a learner's would (tests/live_app.app_env
# takes it out again); a test that wants more threads sets them itself.
if "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = os.environ["PLM_TESTS_SET_OMP"] = "1"

import pytest  # noqa: E402


def work_unit(item) -> str:
    """The unit of work ``item`` belongs to: pytest-xdist hands each unit whole to one worker, which runs its tests
    together and in order.

    By default a module is one unit, so each module-scoped fixture is made once per run, not once per worker. A
    module may spread its tests wider with ``SPREAD``: ``SPREAD = "test"`` makes each test a unit of its own (its
    costly fixtures are session-scoped: made at most once per worker); ``SPREAD = "<parameter>"`` makes one unit per
    value of that parameter (``"lang"``: the zh tests may run on one worker while the en tests run on the other).
    A test marked with an ``xdist_group`` of its own keeps that group."""
    own = item.get_closest_marker("xdist_group")
    if own is not None:
        return str(own.args[0] if own.args else own.kwargs.get("name", "default"))
    module = item.nodeid.split("::", 1)[0]
    spread = getattr(item.module, "SPREAD", None)
    if spread == "test":
        return item.nodeid
    callspec = getattr(item, "callspec", None)
    if spread and callspec is not None and spread in callspec.params:
        return f"{module}-{callspec.params[spread]}"
    return module


# Seconds each test took (setup, call and teardown) in the last whole run that recorded them: tests/durations.tsv,
# written by ``PLM_RECORD_DURATIONS=1 python -m pytest`` (pytest's own report durations, summed per test id). They
# decide two things, and nothing a test asserts:
# - the order in which the units of work go to the two workers: longest first, so that both end together;
# - the fast lane (``-m "not e2e and not slow"``): a test measured at SLOW_SECONDS or more is marked ``slow``, except
#   the quickest test of each module, so that the lane still runs every module that is not all browser tests.
# A test not yet measured counts as PER_TEST for its markers, and is never marked slow by this rule.
DURATIONS_FILE = os.path.join(ROOT, "tests", "durations.tsv")
SLOW_SECONDS = 1.0
PER_TEST = {"e2e": 10.0, "slow": 10.0, "": 0.5}


def read_durations(path: str = DURATIONS_FILE) -> dict[str, float]:
    try:
        with open(path, encoding="utf-8") as lines:
            rows = [line.rstrip("\n").split("\t") for line in lines if "\t" in line and not line.startswith("#")]
    except FileNotFoundError:
        return {}
    return {test_id: float(seconds) for test_id, seconds in rows}


DURATIONS = read_durations()


def plain_id(nodeid: str) -> str:
    """A test id without the ``@<group>`` that in_group adds for pytest-xdist."""
    head, bracket, tail = nodeid.rpartition("]")
    return head + bracket + tail.split("@", 1)[0] if bracket else nodeid.split("@", 1)[0]


def measured(item) -> float:
    return DURATIONS.get(plain_id(item.nodeid), PER_TEST["e2e" if item.get_closest_marker("e2e") else
                                                       "slow" if item.get_closest_marker("slow") else ""])


def estimate(unit: str, items: list) -> float:
    return sum(measured(item) for item in items)


def mark_measured_slow(items: list) -> None:
    """Mark ``slow`` the tests measured at SLOW_SECONDS or more, keeping each module's quickest test in the lane."""
    by_module: dict[str, list] = {}
    for item in items:
        by_module.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    for module_items in by_module.values():
        lane = [item for item in module_items if not item.get_closest_marker("e2e")]
        if not lane:
            continue
        quickest = min(lane, key=measured)
        for item in lane:
            seconds = DURATIONS.get(plain_id(item.nodeid))
            if item is not quickest and seconds is not None and seconds >= SLOW_SECONDS:
                item.add_marker(pytest.mark.slow)


class RecordDurations:
    """``PLM_RECORD_DURATIONS=1``: at the end of the run, tests/durations.tsv holds each test's seconds (the sum of
    its setup, call and teardown, as pytest reports them; on pytest-xdist the controller receives every report)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report):
        test_id = plain_id(report.nodeid)
        self.seconds[test_id] = self.seconds.get(test_id, 0.0) + report.duration

    def pytest_sessionfinish(self, session):
        if os.environ.get("PYTEST_XDIST_WORKER") or not self.seconds:
            return
        with open(DURATIONS_FILE, "w", encoding="utf-8") as out:
            out.write("# test id\tseconds (setup + call + teardown), written by PLM_RECORD_DURATIONS=1 python -m pytest\n")
            out.writelines(f"{test_id}\t{seconds:.2f}\n" for test_id, seconds in sorted(self.seconds.items()))


def pytest_configure(config):
    if os.environ.get("PLM_RECORD_DURATIONS") == "1" and not os.environ.get("PYTEST_XDIST_WORKER"):
        config.pluginmanager.register(RecordDurations(), "plm-record-durations")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook (its plugin registers after this file)
def pytest_collection_modifyitems(config, items):
    """pytest-xdist runs the suite on two workers (pyproject: ``-n 2 --dist loadgroup --no-loadscope-reorder``).
    Each test is put in its unit of work (work_unit) as an xdist_group; in a worker the units are ordered longest
    first, each unit's tests kept in their order, and the workers take them in that order. The browser tests share
    one app and one Chromium per worker (tests/e2e/conftest.py)."""
    units: dict[str, list] = {}
    for item in items:
        unit = work_unit(item)
        if unit != item.nodeid and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(unit))
        units.setdefault(unit, []).append(item)
    mark_measured_slow(items)
    if os.environ.get("PYTEST_XDIST_WORKER") and config.getvalue("loadgroup"):
        for unit, unit_items in units.items():
            for item in unit_items:
                if unit != item.nodeid:
                    in_group(item, unit)
        ordered = sorted(units.items(), key=lambda unit: -estimate(*unit))
        items[:] = [item for _, unit_items in ordered for item in unit_items]


def in_group(item, group: str) -> None:
    """Give ``item`` the id ``<id>@<group>``, from which pytest-xdist's loadgroup scheduler reads the group. xdist
    3.8 writes it to ``item._nodeid``, which pytest 9.2 no longer reads (its node ids are structured: ``item._id``),
    so without this every group is ignored and each test goes to any worker (pytest-dev/pytest-xdist#1386)."""
    from _pytest.nodeid import NodeId

    if "@" not in item.nodeid.rsplit("]", 1)[-1]:
        item._id = NodeId.parse(f"{item.nodeid}@{group}")


@pytest.fixture(scope="session")
def offline_app():
    """`python app.py --offline --device cpu`, the way a learner starts it, on a free port: one per test worker, shared
    by every module that talks to the offline app over HTTP (API clients, raw HTTP, the browser tests' `served_app`),
    so it starts once and has served other tests' requests by the time most tests reach it."""
    from tests.live_app import app_env, running_app

    with running_app("--offline", "--device", "cpu", env=app_env(HF_HUB_OFFLINE="1")) as app:
        yield app


@pytest.fixture(scope="session")
def postgres_cluster():
    """A temporary PostgreSQL server (Debian's pg_virtualenv), one per test worker: tests/postgres.py."""
    from tests.postgres import start_or_skip

    cluster = start_or_skip()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny recurrent models run fastest on one thread, and it spares a shared machine's cores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """Write a tiny random Hugging Face checkpoint with transformers (test-only reference), plus a real tokenizer.

    ``tiny_checkpoint("BertForQuestionAnswering", num_labels=2)`` returns the folder. The vocabulary is
    bert-base-uncased's (30,522 WordPiece entries, from the packaged MiniLM), so real text tokenises normally;
    the weights are random (seeded), so predictions are meaningless but exactly comparable with transformers.
    Folders are cached per (class, overrides) for the session.
    """
    import torch
    import transformers

    from core.loading import resolve


    from core.loading.checkpoints import MINILM_ID

    made = {}

    def make(class_name: str, seed: int = 0, **overrides):
        key = (class_name, seed, repr(sorted(overrides.items())))  # overrides may hold dicts (id2label)
        if key in made:
            return made[key]
        folder = tmp_path_factory.mktemp(class_name.lower())
        torch.manual_seed(seed)
        if class_name.startswith("DistilBert"):
            config = transformers.DistilBertConfig(vocab_size=30522, dim=32, n_layers=2, n_heads=4, hidden_dim=37,
                                                   max_position_embeddings=512, **overrides)
        else:
            config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                             num_attention_heads=4, intermediate_size=37, **overrides)
        getattr(transformers, class_name)(config).eval().save_pretrained(folder)
        transformers.BertTokenizerFast.from_pretrained(str(resolve.resolve(MINILM_ID).directory)).save_pretrained(folder)
        made[key] = folder
        return folder

    return make


TINY_BPE_TEXTS = [
    "The weather today is very good, so we went out to play the outdoor game.",
    "The weather today is very bad, so we had to cancel the outdoor game.",
    "Call me Ishmael. Some years ago, never mind how long precisely, I went to sea.",
    "Attention is all you need: queries, keys and values, softmax and a weighted sum.",
]


@pytest.fixture(scope="session")
def tiny_gpt2_checkpoint(tmp_path_factory):
    """A tiny random GPT2LMHeadModel written by transformers (test-only reference) into a temporary folder.

    ``tiny_gpt2_checkpoint("bpe")`` pairs it with a byte-level BPE tokenizer.json trained here with ``tokenizers``
    (as gpt2/distilgpt2 ship); ``tiny_gpt2_checkpoint("wordpiece")`` with bert-base-uncased's vocab.txt only (as
    uer/gpt2-chinese-cluecorpussmall ships a BERT vocabulary). Weights are random (seeded). Cached per session.
    """
    import shutil

    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from core.loading import resolve


    from core.loading.checkpoints import MINILM_ID

    made = {}

    def make(tokenizer: str = "bpe", seed: int = 0, **overrides):
        key = (tokenizer, seed, repr(sorted(overrides.items())))
        if key in made:
            return made[key]
        folder = tmp_path_factory.mktemp(f"gpt2_{tokenizer}")
        if tokenizer == "bpe":
            bpe = Tokenizer(models.BPE())
            bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            bpe.decoder = decoders.ByteLevel()
            bpe.train_from_iterator(TINY_BPE_TEXTS * 5, trainers.BpeTrainer(
                vocab_size=400, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                show_progress=False))
            bpe.save(str(folder / "tokenizer.json"))
            vocab_size, eos = bpe.get_vocab_size(), bpe.token_to_id("<|endoftext|>")
        elif tokenizer == "wordpiece":
            shutil.copy(resolve.resolve(MINILM_ID).directory / "vocab.txt", folder / "vocab.txt")
            vocab_size, eos = 30522, 102
        else:
            raise ValueError(tokenizer)
        torch.manual_seed(seed)
        config = transformers.GPT2Config(vocab_size=vocab_size, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                         bos_token_id=eos, eos_token_id=eos, **overrides)
        transformers.GPT2LMHeadModel(config).eval().save_pretrained(folder)
        made[key] = folder
        return folder

    return make


def run_async(coroutine):
    """asyncio.run in a thread of its own: the browser tests' Playwright (sync API) keeps an event loop running in the
    main thread for the whole session, and asyncio.run refuses to start beside it."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(autouse=True)
def fresh_preset_results():
    """demo.server.result_cache keeps each preset's result (first paint) and the model views' shared results (issue #38);
    demo.kit.preset_records which views a session asked for (the open-event race). A test that changes what the server
    can load (tiny checkpoints, offline, monkeypatched corpora) must not see another test's result or requests."""
    records = sys.modules.get("demo.kit.preset_records")
    if records is not None:
        records.ASKED.clear()  # requests without a session (tests, API clients) share one record
        records.OPENED.clear()
    cache = sys.modules.get("demo.server.result_cache")
    if cache is not None:
        cache.RESULTS.clear()
    yield


@pytest.fixture
def server(monkeypatch, tmp_path):
    """A fresh local Hub (tests/hub_server.py) with an empty HF cache, online, a 2 s deadline for every Hub call;
    everything restored afterwards. ``server.add_repo(id, folder)`` serves a checkpoint under a Hub id."""
    from tests import chinese_checkpoints

    hub_server = chinese_checkpoints.serve(monkeypatch, tmp_path, {}, timeout=2.0)
    yield hub_server
    chinese_checkpoints.stop(hub_server)


@pytest.fixture(scope="module")
def mlm_folder(tiny_checkpoint):
    """A tiny random BertForMaskedLM (tiny_checkpoint)."""
    return tiny_checkpoint("BertForMaskedLM")


CONLL_LABELS = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]


@pytest.fixture(scope="session")
def conll_ner_checkpoint(tiny_checkpoint, tmp_path_factory):
    """A tiny random BertForTokenClassification with the CoNLL-03 label names (dslim/bert-base-NER's set)."""
    import json
    import shutil

    folder = tmp_path_factory.mktemp("ner_conll")
    shutil.copytree(tiny_checkpoint("BertForTokenClassification", num_labels=9), folder, dirs_exist_ok=True)
    config = json.loads((folder / "config.json").read_text())
    config.update(id2label={str(i): label for i, label in enumerate(CONLL_LABELS)},
                  label2id={label: i for i, label in enumerate(CONLL_LABELS)})
    (folder / "config.json").write_text(json.dumps(config))
    return folder
