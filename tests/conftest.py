"""Shared test fixtures. The repository root is on sys.path via rootdir conftest placement."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Tests never reach the Hub: loading code is exercised with checkpoints written into tmp_path and with packaged weights.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import pytest  # noqa: E402


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

    from core.registry import MINILM_ID, resolve

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
        transformers.BertTokenizerFast.from_pretrained(str(resolve(MINILM_ID).directory)).save_pretrained(folder)
        made[key] = folder
        return folder

    return make
