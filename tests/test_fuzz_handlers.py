"""Bad input, generated: every event handler of the built app and the core entry points get random Unicode, empty
and huge strings, odd numbers and junk choices. No exception may reach the learner as a traceback.

A handler may return, or raise gr.Error with a message. A gr.Error that carries the errors.internal message means
an unexpected exception escaped inside the handler (friendly_errors caught it as a last resort): that fails.
Core functions may raise only UserInputError or ModelUnavailableError.

Inputs go through each component's own preprocess first, as in a real request, so the handler sees what Gradio
would hand it; a payload the component itself refuses (an out-of-range slider, a choice not in the list) is
Gradio's clean rejection and ends that example. Events wired with preprocess=False get the raw payloads, as
Gradio would hand them over, and must refuse bad ones themselves with a clear message.

PLM_FUZZ_EXAMPLES (default 6) sets the examples per handler; raise it for a longer hunt.
"""
from __future__ import annotations

import copy
import inspect
import logging
import os
import re

import gradio as gr
import pytest
from gradio.components.api_component import Api
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.checks import CHECKS
from core.text.errors import ModelUnavailableError, UserInputError
from demo.server.handlers import preprocess_payload
from demo.kit.i18n import text
from core.loading import resolve
from tests import app_events
from tests.conftest import run_async

EXAMPLES = int(os.environ.get("PLM_FUZZ_EXAMPLES", "6"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

# Trainers whose inputs are fuzzed all the same: a free text (the masked LM's corpus) or a short budget (the NNLM).
FUZZED_TRAINERS = {"mlm_train", "embeddings_nnlm"}
# Handlers whose fuzzing takes seconds to minutes (a model per example: generation, training steps, attributions):
# marked slow, so the fast lane (-m "not e2e and not slow") fuzzes the rest; the whole suite fuzzes them all.
SLOW_HANDLERS = {
    "transformer_gpt_generate_open", "transformer_gpt_generate_preset", "mlm_train", "mlm_train_open",
    "lstm_train_preset", "lstm_lesson", "lstm_train_open", "lstm_gradients", "lstm_generate_open",
    "mlm_why_masked_preset", "lstm_generate_preset", "mlm_why_masked_open", "transformer_why_gpt_preset",
    "lstm_gradients_open", "transformer_tokenizer_lab_open", "lstm_gradients_preset", "transformer_gpt_vs_bert_open",
    "classify_why_open", "classify_why_preset", "lstm_why_lstm_preset", "classify_finetune_open",
    "transformer_why_gpt_open", "transformer_gpt_vs_bert_preset", "lstm_why_lstm_open", "lstm_elmo_preset",
    "overview_ladder_open", "mlm_compare_preset", "overview_ladder_preset", "lstm_elmo_open", "mlm_compare_open",
    "mlm_bank_preset", "mlm_bank_open", "mlm_fill_preset", "mlm_fill_open", "attention_model_open",
    "lstm_elmo_layers_preset", "transformer_block_preset",
}
SPREAD = "test"  # each handler is a unit of work of its own (tests/conftest.py): the two workers share the fuzzing

INTERNAL = re.compile(re.escape(text("errors.internal", "en")).replace(r"\{name\}", ".*"))

NASTY_TEXT = [
    "", " ", "\n\n\t", "\x00", "\x00abc\x07\x1b[31m", "\ud800", "a\udfffb", "\ufeffBOM", "\u200b\u200c\u200d",
    "\u202eRTL override\u202c", "שלום עולם", "مرحبا بالعالم", "爱因斯坦在柏林发表演讲", "判断 单词 的 词性",
    "😀👍🏽👨‍👩‍👧 🇨🇳", "e\u0301\u0301\u0301", "[MASK]", "[MASK] [MASK] [MASK] " * 30, "[CLS] [SEP] [PAD] [UNK]",
    "<s> </s> <UNK>", "<script>alert(1)</script>", "{0} %s %n ${x}", "nan", "-1", "1e308", "../../etc/passwd",
    "word/", "/B-PER", "a/B-XYZ b/I-", ",,,,", "king, , ,queen", "1, 2, x", "\\", "'\"`",
    "a" * 100_000, "词 " * 30_000, "the whale " * 5_000, "ab\n" * 10_000,
]

text = st.one_of(st.sampled_from(NASTY_TEXT), st.text(max_size=300),
                 st.text(st.characters(codec="utf-8"), max_size=50).map(lambda s: s * 97))
numbers = st.one_of(st.none(), st.sampled_from([0, -1, 1, 2**31, -(2**63), 1e308, -1e308, 1e-308, 0.5, 7.25]),
                    st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True))
cells = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**9, 10**9), text, st.none())
matrix = st.lists(st.lists(cells, min_size=0, max_size=6), min_size=0, max_size=6)


def payloads(component) -> st.SearchStrategy:
    """What a client could send for this component (before Gradio's preprocess)."""
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        values = [value for _, value in component.choices]
        return st.one_of(st.sampled_from(values), text, numbers) if values else st.one_of(text, numbers)
    if isinstance(component, gr.Checkbox):
        return st.booleans()
    if isinstance(component, gr.Slider):
        low, high = component.minimum, component.maximum
        return st.one_of(st.sampled_from([low, high]), st.floats(low, high), numbers)
    if isinstance(component, gr.Number):
        return numbers
    if isinstance(component, gr.Dataframe):
        return matrix.map(lambda data: {"headers": [str(i) for i in range(max(map(len, data), default=0))],
                                        "data": data})
    if isinstance(component, gr.Textbox):
        return text
    if isinstance(component, gr.HTML):  # a preset bar or a lesson box: a click sends a preset's slug or a step number
        # Only a bar's first preset (its default) among the real slugs: another may train for a minute by design
        # (the NNLM on Moby-Dick), and embeddings_nnlm_train, which it runs, is fuzzed itself.
        sent = [item["slug"] for item in component.props.get("items", [])[:1]]
        sent += [str(step["number"]) for step in component.props.get("steps", [])]
        return st.one_of(st.sampled_from(sent), text, numbers) if sent else st.one_of(text, numbers)
    if isinstance(component, gr.Dataset):  # an examples table: a click sends a row's index
        return st.one_of(st.integers(-len(component.raw_samples), len(component.raw_samples) + 2), text, numbers)
    if isinstance(component, Api):  # a gr.api endpoint's value (the checks): a real slug, or anything a client sends
        return st.one_of(st.sampled_from(sorted(CHECKS)), text, numbers)
    raise NotImplementedError(type(component).__name__)


def junk_file(tmp_path_factory):
    """Uploads: empty, binary, invalid UTF-8, huge-line, odd-Unicode text files (type="filepath")."""
    folder = tmp_path_factory.mktemp("uploads")
    files = {"empty.txt": b"", "binary.txt": b"\x00\x01\x02" * 100, "latin1.txt": "café".encode("latin-1"),
             "bom.txt": "\ufeff判断 单词 的 词性\n".encode(), "one_line.txt": b"x" * 200_000,
             "emoji.txt": "😀 👍🏽\n\u202e abc\n".encode()}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return st.one_of(st.none(), st.sampled_from([str(folder / name) for name in files]))


class LastFailure(logging.Handler):
    """Keeps the traceback friendly_errors logs for an unexpected exception, to name the real cause on failure."""

    text = ""

    def emit(self, record):
        self.text = logging.Formatter().formatException(record.exc_info) if record.exc_info else record.getMessage()


LAST_FAILURE = LastFailure()


@pytest.fixture(autouse=True, scope="module")
def quiet_handler_log():
    """The fuzzer provokes failures on purpose: keep their tracebacks out of the test log, but at hand."""
    logger = logging.getLogger("plm_explorer")
    logger.addHandler(LAST_FAILURE)
    logger.propagate = False
    yield
    logger.removeHandler(LAST_FAILURE)
    logger.propagate = True


def file_payload(path: str) -> dict:
    """An uploaded file as it reaches a handler wired with preprocess=False (FileData, dumped to a dict)."""
    return {"path": path, "orig_name": os.path.basename(path), "size": os.path.getsize(path),
            "meta": {"_type": "gradio.FileData"}}


def check_outcome(call) -> None:
    try:
        result = call()
        if inspect.iscoroutine(result):  # an async handler (the download steps): run it as Gradio would
            result = run_async(result)
        if inspect.isgenerator(result):
            for _ in result:
                pass
    except gr.Error as error:
        cause = "\n".join(LAST_FAILURE.text.splitlines()[-4:])
        assert not INTERNAL.fullmatch(str(error.message)), f"an unexpected exception escaped:\n{cause}"
        assert str(error.message).strip(), "a gr.Error without a message tells the learner nothing"


# ----------------------------------------------------------------------------------------------------------------
# Every handler of the built app


def built_app() -> gr.Blocks:
    """The app, built once per test session, offline (fuzzing must never try a download)."""
    global _BLOCKS
    if _BLOCKS is None:
        import app

        resolve.set_offline(True)
        _BLOCKS = app.build_app()
    return _BLOCKS


_BLOCKS = None


def long_running() -> set[str]:
    """The other trainers (tests/app_events.py finds them in the built app): they train for up to minutes by design,
    their inputs are sliders and radios that Gradio bounds, and their bad-input paths are covered by their tabs' own
    tests."""
    trainers = app_events.trainers(built_app())
    assert FUZZED_TRAINERS <= trainers, FUZZED_TRAINERS - trainers
    return trainers - FUZZED_TRAINERS


def handler_names() -> list[str]:
    """The app's own event handlers (Gradio's internal ones, e.g. gr.Examples' loaders, are Gradio's business).
    One entry per distinct (function, inputs): a handler wired to two events is fuzzed once."""
    seen, names = set(), []
    trainers = long_running()
    for dep in built_app().fns.values():
        key = (id(dep.fn), tuple(id(c) for c in dep.inputs))
        if (dep.fn is not None and dep.fn.__module__.split(".")[0] in ("demo", "app")
                and dep.api_name not in trainers and key not in seen):
            seen.add(key)
            names.append(dep.api_name)
    return names


HANDLERS = handler_names()


def test_the_fuzzer_covers_every_tab():
    prefixes = {name.split("_")[0] for name in HANDLERS}
    import app

    assert {module.__name__.rsplit(".", 1)[-1] for module in app.TABS} <= prefixes | {"app"}
    assert SLOW_HANDLERS <= set(HANDLERS)  # each slow-marked name is a handler that is fuzzed


@pytest.mark.parametrize("api_name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_HANDLERS else name
                                      for name in HANDLERS])
def test_handler_survives_bad_input(api_name, tmp_path_factory):
    dep = next(dep for dep in built_app().fns.values() if dep.api_name == api_name)
    strategies = []
    for component in dep.inputs:
        if isinstance(component, gr.State):
            strategies.append(st.just(component.value).map(copy.deepcopy))  # the session's initial state
        elif isinstance(component, gr.File):
            strategies.append(junk_file(tmp_path_factory))  # a server-side path, as Gradio hands it over
        else:
            strategies.append(payloads(component))

    @FUZZ
    @given(st.tuples(*strategies))
    def run(values):
        args = []
        for component, value in zip(dep.inputs, values):
            if isinstance(component, gr.State):
                args.append(value)
                continue
            if isinstance(component, gr.File):
                # With preprocess=False the handler gets the FileData payload and preprocesses it itself.
                args.append(value if dep.preprocess or value is None else file_payload(value))
                continue
            if not dep.preprocess:  # demo.server.handlers.preprocess_in_handler: the handler runs Gradio's preprocess
                args.append(value)
                continue
            try:
                args.append(preprocess_payload(component, value))
            except Exception:  # noqa: BLE001 - Gradio refused the payload before our handler runs
                return
        reached.append(args)  # Gradio accepted every payload: this example reaches the handler
        if dep.batch:  # batch=True handlers take a list per input (Gradio gathers requests) and return lists
            check_outcome(lambda: dep.fn(*[[arg] for arg in args]))
        else:
            check_outcome(lambda: dep.fn(*args))

    reached: list = []
    run()
    # Proof that the fuzzer exercised the handler, not only Gradio's refusals of its payloads.
    assert reached, f"no generated example got past Gradio's preprocess to {api_name}"


# ----------------------------------------------------------------------------------------------------------------
# Core entry points: only our two error types may escape


ALLOWED = (UserInputError, ModelUnavailableError)


def core_calls():
    from core.attention import attention
    from core.tasks import classify, finetune, ner, qa
    from core.embeddings import embeddings
    from core.recurrent import lstm
    from core.mlm import mlm
    from core.ngram import ngram
    from core.transformer import param_count, transformer
    from core.text import textio, tokenizer
    from core.loading import resolve

    from core.loading.checkpoints import MINILM_ID

    wordpiece = tokenizer.WordPieceTokenizer.from_directory(resolve.resolve(MINILM_ID).directory)
    return {
        "textio.decode_text": (textio.decode_text, st.tuples(st.one_of(
            st.binary(max_size=2000), text.map(lambda s: s.encode("utf-8", "surrogatepass"))))),
        "textio.normalize_text": (textio.normalize_text, st.tuples(text)),
        "tokenizer.word_tokens": (tokenizer.word_tokens, st.tuples(text, st.booleans())),
        "tokenizer.char_tokens": (tokenizer.char_tokens, st.tuples(text, st.booleans())),
        "WordPieceTokenizer.encode": (wordpiece.encode, st.tuples(text, st.one_of(st.none(), text),
                                                                  st.one_of(st.none(), st.integers(-5, 600)))),
        "ngram.tokenize_sentences": (ngram.tokenize_sentences, st.tuples(text, st.sampled_from(["word", "char"]),
                                                                         st.booleans())),
        "embeddings.parse_words": (embeddings.parse_words, st.tuples(text, st.one_of(st.none(), st.integers(-3, 50)))),
        "lstm.clean_text": (lstm.clean_text, st.tuples(text)),
        "attention.split_words": (attention.split_words, st.tuples(text)),
        "attention.as_matrix": (attention.as_matrix, st.tuples(matrix, st.just("Q"))),
        "attention.positional_encoding": (attention.positional_encoding,
                                          st.tuples(st.integers(-5, 600), st.integers(-5, 1100))),
        "attention.permutation_demo": (attention.permutation_demo, st.tuples(text, st.integers(-10, 10**6))),
        "mlm.clean_text": (mlm.clean_text, st.tuples(st.one_of(st.none(), text))),
        "ner.parse_word_tags": (ner.parse_word_tags, st.tuples(text)),
        "qa.input_layout": (qa.input_layout, st.tuples(text, text, st.sampled_from([MINILM_ID, "", "\x00", "../x"]),
                                                       st.one_of(st.none(), st.integers(-5, 600)),
                                                       st.one_of(st.none(), st.integers(-5, 600)))),
        "transformer.pick_token": (transformer.pick_token, st.tuples(st.just(["[CLS]", "bank", "[SEP]"]),
                                                                     st.one_of(text, numbers))),
        "transformer.walk": (transformer.walk, st.tuples(text, st.sampled_from([MINILM_ID, "", "\x00", "../x"]),
                                                         st.one_of(st.none(), text, numbers))),
        "param_count.transformer_shape": (param_count.transformer_shape, st.tuples(st.fixed_dictionaries(
            {"name": text, **{key: numbers for key in param_count.MAX_SHAPE}}))),
        "classify.input_layout": (classify.input_layout, st.tuples(
            text, st.one_of(st.none(), text), st.sampled_from([MINILM_ID, "", "\x00", "../x"]),
            st.one_of(st.none(), st.integers(-5, 600)), st.booleans())),
        "finetune.parse_labelled": (finetune.parse_labelled, st.tuples(st.one_of(st.none(), text))),
        "finetune.check_sentence": (finetune.check_sentence, st.tuples(st.one_of(st.none(), text))),
    }


CORE = core_calls()


@pytest.mark.parametrize("name", sorted(CORE))
def test_core_entry_point_raises_only_our_errors(name):
    fn, arguments = CORE[name]

    calls: list = []

    @FUZZ
    @given(arguments)
    def run(args):
        calls.append(args)
        try:
            fn(*args)
        except ALLOWED as error:
            assert str(error).strip()

    run()
    assert len(calls) >= min(EXAMPLES, 2), f"{name} was called {len(calls)} times"

