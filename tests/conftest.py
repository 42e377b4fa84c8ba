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


# Seconds a unit of work takes, roughly (pytest --durations, setup included: the browser units from the durations
# issue 49 quotes, a fast 2-core machine; the fuzzer's from a run at load ~20, divided by 8). Only the order in which
# the units are handed to the workers depends on these figures: longest first, so that the two workers end together.
# A unit not listed is estimated from its tests' markers (PER_TEST).
E2E = "tests/e2e/"
MEASURED: dict[str, float] = {
    E2E + "test_figure_margins.py": 130,  # computes every preset, then draws each figure twice
    E2E + "test_learner_path_browser.py": 110,  # the lesson steps in both languages, and another learner's session
    **{f"{E2E}test_learner_path_browser.py-{tab}": 90 for tab in  # one tab's preset links, in both languages
       ["overview", "ngram", "embeddings", "lstm", "attention", "transformer", "mlm", "ner", "qa", "classify"]},
    E2E + "test_accessibility.py": 80,
    "tests/test_space_simulated.py": 150,  # the app as a ZeroGPU Space, every tab's events and presets over HTTP
    **{f"{E2E}test_your_turn_browser.py-{tab}": 40 for tab in  # one tab's checks, right and wrong, in both languages
       ["overview", "ngram", "embeddings", "lstm", "attention", "transformer", "mlm", "ner", "qa", "classify"]},
    E2E + "test_i18n_acceptance.py-zh": 60,
    E2E + "test_i18n_acceptance.py-en": 60,
    E2E + "test_browser.py": 60,
    "tests/test_bounded_responses.py": 60,
    **{f"{E2E}test_tour_browser.py::test_the_tour_walks_every_stop_and_remembers_where_it_was[{locale}]": 47
       for locale in ("en-US", "zh-CN")},
    E2E + "test_first_open.py::test_every_tab_and_subtab_shows_its_default_before_any_click": 45,
    # the fuzzer's slowest handlers (measured 2026-11-28 at load ~20, divided by 8)
    **{f"tests/test_fuzz_handlers.py::test_handler_survives_bad_input[{name}]": seconds for name, seconds in [
        ("transformer_gpt_generate_open", 85), ("transformer_gpt_generate_preset", 26), ("mlm_train", 22),
        ("mlm_train_open", 17)]},
}
PER_TEST = {"e2e": 10.0, "slow": 10.0, "": 0.5}


def estimate(unit: str, items: list) -> float:
    if unit in MEASURED:
        return MEASURED[unit]
    return sum(PER_TEST["e2e" if item.get_closest_marker("e2e") else "slow" if item.get_closest_marker("slow")
                        else ""] for item in items)


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

    from core import resolve


    from core.checkpoints import MINILM_ID

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

    from core import resolve


    from core.checkpoints import MINILM_ID

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
    """demo.preset_records keeps each preset's result for the process (first paint) and which views a session asked for
    (the open-event race); a test that changes what the server can load (tiny checkpoints, offline, monkeypatched
    corpora) must not see another test's result or requests."""
    records = sys.modules.get("demo.preset_records")
    if records is not None:
        records.RESULTS.clear()
        records.ASKED.clear()  # requests without a session (tests, API clients) share one record
        records.OPENED.clear()
    cache = sys.modules.get("demo.result_cache")
    if cache is not None:  # the model views' shared results (issue #38)
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
