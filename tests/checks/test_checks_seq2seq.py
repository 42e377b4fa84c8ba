"""The encoder–decoder's "Your turn" checks (issue #52, core/checks/seq2seq.py) against an independent computation:
one full forward pass of the shipped model (core/nets/seq2seq.py's Transformer on the source and the whole target,
not the view's step-by-step decoding), and again on the model with noise added to its weights, so that an answer
written into the code cannot pass. Bad own text gets the view's messages in both languages."""
import pytest
import torch

from core.seq2seq import seq2seq
from core.checks import get
from core.checks.base import grade
from core.text.errors import UserInputError
from core.text.i18n import using_language
from tests.checks_reference import answer, noisy_copy

SEQ2SEQ = {"seq2seq-first-word", "seq2seq-cross-source"}  # the checks this file answers against full passes

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def ids_of(vocab, text):
    return [vocab.source_ids.get(t, vocab.folded.get(seq2seq.fold(t), seq2seq.UNK)) for t in seq2seq.split_source(text)]


@torch.inference_mode()
def reference_first_word(text):
    model, vocab = seq2seq.shipped()
    logits = model(torch.tensor([ids_of(vocab, text)]), torch.tensor([[seq2seq.BOS]])).logits[0, -1]
    logits[seq2seq.EOS] = -float("inf")  # the options are words
    return vocab.target[int(logits.argmax())]


@torch.inference_mode()
def reference_cross_source(text):
    """Greedy output by argmax of full forward passes, then the last layer's cross-attention (mean of the heads) of
    the row that writes the last word."""
    model, vocab = seq2seq.shipped()
    src, out = torch.tensor([ids_of(vocab, text)]), [seq2seq.BOS]
    while len(out) <= seq2seq.MAX_OUTPUT_WORDS:
        nxt = int(model(src, torch.tensor([out])).logits[0, -1].argmax())
        if nxt == seq2seq.EOS:
            break
        out.append(nxt)
    cross = model(src, torch.tensor([out])).cross_attentions[-1][0].mean(0)  # (T, S): row t writes word t + 1
    return int(cross[len(out) - 2].argmax())


@pytest.fixture
def noisy_model(tmp_path, monkeypatch):
    """The shipped model with Gaussian noise on every weight: the checks must follow it."""
    folder = noisy_copy(seq2seq.SEQ2SEQ_ASSETS, tmp_path / "noisy", seed=3, scale=0.8)
    loaded = seq2seq.load(folder)
    monkeypatch.setattr(seq2seq, "shipped", lambda: loaded)
    return loaded


@pytest.mark.parametrize("own_text", [None, "我爱中国", "je suis étudiant", "他每天学习英语"])
def test_the_first_word_equals_a_forward_pass(own_text):
    found = answer("seq2seq-first-word", own_text)
    assert found.value == reference_first_word(own_text or "机器学习")
    assert found.value in get("seq2seq-first-word").setup(own_text).options
    if own_text is None:
        assert found.value == "machine" and grade(get("seq2seq-first-word"), "machine").right
        assert not grade(get("seq2seq-first-word"), "learning").right


@pytest.mark.parametrize("own_text", [None, "我爱中国", "机器学习", "她每天在学校读历史"])
def test_the_cross_attention_answer_equals_a_forward_pass(own_text):
    found = answer("seq2seq-cross-source", own_text)
    setup = get("seq2seq-cross-source").setup(own_text)
    assert found.value == reference_cross_source(own_text or "je suis étudiant")
    assert [option for option, _ in found.scores] == list(setup.options)
    assert sum(score for _, score in found.scores) == pytest.approx(1, abs=1e-5)  # one softmax row
    if own_text is None:
        assert setup.options[found.value] == "étudiant"  # "student" reads "étudiant"


def test_the_answers_follow_a_noisy_model(noisy_model):
    for text in (None, "我爱中国", "je suis étudiant"):
        assert answer("seq2seq-first-word", text).value == reference_first_word(text or "机器学习")
        assert answer("seq2seq-cross-source", text).value == reference_cross_source(text or "je suis étudiant")


@pytest.mark.parametrize("lang, words", [("en", "None of these words"), ("zh", "这些词都不在")])
def test_own_text_the_model_cannot_read_gets_a_message(lang, words):
    for slug in ("seq2seq-first-word", "seq2seq-cross-source"):
        with using_language(lang), pytest.raises(UserInputError) as refused:
            get(slug).setup("hello world")
        assert words in refused.value.message(lang)
