"""Building and keeping models (core/loading/registry.py, core/loading/families.py, core/loading/weights.py): config first (the family and
the size checked before any weights), shapes checked from the file headers before allocation, only the files a view
needs, pickles refused, the bounded model cache keyed by the resolved folder, and every learner message of the
loading path a translation key."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from core.mlm import pretraining as mlm_pretraining
from core.loading import registry, resolve
from core.loading.checkpoints import CHAR_BERT_ID, MINILM_ID
from core.text.errors import ModelUnavailableError, UserInputError, echo
from core.nets import bert
from tests.local_hub import REPO


# ----------------------------------------------------------------------------------------------------------------
# 5. Config first


def test_non_bert_repo_refused_before_any_weights(server, mlm_folder):
    config = json.loads((mlm_folder / "config.json").read_text()) | {"model_type": "llama"}
    server.add_repo("meta/llama-tiny", files={"config.json": json.dumps(config).encode(),
                                              "model.safetensors": (mlm_folder / "model.safetensors").read_bytes()})
    with pytest.raises(UserInputError, match="'llama' model; this app runs bert, distilbert, gpt2, roberta, t5 checkpoints"):
        registry.load("mlm", "meta/llama-tiny")
    assert server.count("config.json", "GET") == 1
    assert server.count("model.safetensors") == 0


def test_huge_listing_refused_before_any_download(server, mlm_folder):
    server.add_repo(REPO, mlm_folder, fake_sizes={"model.safetensors": 50 * 10**9})
    with pytest.raises(UserInputError, match=r"too large.*50\.00 GB.*--max-model-gb"):
        registry.load("mlm", REPO)
    assert [m for m, p in server.requests if "/resolve/" in p or "/lfs/" in p] == []


def test_parameter_estimate_over_the_cap_refused_before_weights(server, mlm_folder):
    server.add_repo(REPO, mlm_folder, fake_sizes={"model.safetensors": 1000})  # a listing that looks small
    server.add_repo("tiny-org/honest", mlm_folder)
    resolve.configure(max_model_gb=0.001)  # 1 MB; the tiny model has ~1M parameters (4 MB in fp32)
    with pytest.raises(UserInputError, match="its parameters take 0.00"):
        registry.load("mlm", REPO)
    assert server.count("config.json", "GET") == 1 and server.count("model.safetensors") == 0
    with pytest.raises(UserInputError, match="too large"):  # a local folder: refused before allocation
        registry.load("mlm", str(mlm_folder))
    resolve.configure(max_model_gb=1.0)
    assert registry.load("mlm", "tiny-org/honest").nbytes > 10**6


def test_the_size_estimate_builds_each_config_once(mlm_folder, monkeypatch):
    """Every request for a cached model checks its size again; the parameter count is the meta-device skeleton's,
    built once per distinct config (it was ~12% of the server's CPU under the classroom load). The count itself
    equals transformers' own for the same config."""
    from transformers import BertConfig, BertModel

    from core.loading import families

    config = json.loads((mlm_folder / "config.json").read_text())
    built = []
    family = families.family_of(config, "x")
    monkeypatch.setitem(families.FAMILIES, config["model_type"],
                        families.Family(**{**vars(family), "base": lambda cfg: built.append(1) or family.base(cfg)}))
    families._counted_bytes.cache_clear()
    first = families.estimated_bytes(config, "x")
    assert families.estimated_bytes(dict(reversed(config.items())), "x") == first  # same config, keys reordered
    assert len(built) == 1
    assert first == 4 * BertModel(BertConfig(**config)).num_parameters()
    families.estimated_bytes({**config, "num_hidden_layers": config["num_hidden_layers"] + 1}, "x")
    assert len(built) == 2  # another config is counted on its own


def test_shapes_checked_from_headers_before_allocation(tmp_path, mlm_folder, monkeypatch):
    """A config that disagrees with the tensors is refused from the headers: the model class is never built
    on a real device."""
    folder = tmp_path / "lying"
    folder.mkdir()
    for path in mlm_folder.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    config = json.loads((mlm_folder / "config.json").read_text()) | {"intermediate_size": 4096}
    (folder / "config.json").write_text(json.dumps(config))
    built_on = []
    original = bert.BertForMaskedLM.__init__

    def spy(self, cfg):
        built_on.append(torch.empty(0).device.type)  # the default device the class is being built on
        original(self, cfg)

    monkeypatch.setattr(bert.BertForMaskedLM, "__init__", spy)
    with pytest.raises(ModelUnavailableError, match=r"wrong shapes.*intermediate.dense.weight: file \(37, 32\) "
                                                    r"vs model \(4096, 32\)"):
        registry.load("mlm", str(folder))
    assert built_on == ["meta"]


# ----------------------------------------------------------------------------------------------------------------
# 6. Only what a view needs


def test_config_and_tokenizer_fetch_only_their_files(server, mlm_folder):
    server.add_repo(REPO, mlm_folder)
    config = registry.config(REPO)
    assert config.hidden_size == 32 and config.num_hidden_layers == 2
    assert server.count("model.safetensors") == 0 and server.count("vocab.txt") == 0
    tokenizer, files = registry.tokenizer(REPO)
    assert tokenizer.encode("hello world").tokens[1:3] == ["hello", "world"]
    assert server.count("model.safetensors") == 0
    card = mlm_pretraining.model_card(REPO)  # the masked-LM tab's Model card view
    assert card.source == mlm_pretraining.CONFIG_FILE and card.config.hidden_size == 32
    masking_tokenizer, files, missing = registry.tokenizer_or_fallback(REPO)  # what the Masking view reads
    assert missing is None and files.model_id == REPO
    masked = mlm_pretraining.bert_masking(masking_tokenizer, "the cat sat on the mat", 0, 20)
    assert masked.tokens == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"] and masked.candidates == 6
    assert server.count("model.safetensors") == 0


def test_the_char_bert_has_minilm_stand_in_for_wordpiece_views_and_says_why():
    """The char-BERT reads characters: views that need WordPiece and an encoder (tokens, embeddings, contextual
    vectors, masking) get MiniLM-L6 and the reason, from core, not from each handler."""
    loaded, why = registry.load_or_fallback("mlm", CHAR_BERT_ID)
    assert loaded.files.model_id == MINILM_ID and loaded.task == "encoder"
    assert isinstance(why, UserInputError) and why.key == "registry.char_bert_wordpiece_only"
    tokenizer, files, why = registry.tokenizer_or_fallback(" Char-BERT ")
    assert files.model_id == MINILM_ID and tokenizer.encode("hello world").tokens[1:3] == ["hello", "world"]
    assert why.key == "registry.char_bert_wordpiece_only"


def test_a_model_from_a_config_dict_and_a_safetensors_file(mlm_folder):
    """from_state_dict: what a checkpoint shipped in assets/ needs (it is not an id a learner types, so it is not
    resolved): the same strict load as from_pretrained, a mismatch refused with the key names."""
    from core.loading.weights import CheckpointMismatchError, load_state_dict

    config = json.loads((mlm_folder / "config.json").read_text())
    state = load_state_dict(mlm_folder / "model.safetensors")
    built = registry.from_state_dict(config, state, bert.BertForMaskedLM)
    loaded = registry.from_pretrained(str(mlm_folder), bert.BertForMaskedLM, device="cpu")
    assert not built.training and built.cls.predictions.decoder.weight is built.bert.embeddings.word_embeddings.weight
    ids = torch.tensor([[101, 2023, 103, 102]])
    with torch.inference_mode():
        torch.testing.assert_close(built(ids).logits, loaded(ids).logits, atol=0, rtol=0)
    with pytest.raises(CheckpointMismatchError, match="cls.predictions.bias"):
        registry.from_state_dict(config, {k: v for k, v in state.items() if k != "cls.predictions.bias"},
                                 bert.BertForMaskedLM)


# ----------------------------------------------------------------------------------------------------------------
# Pickles


class Evil:
    marker = ""

    def __reduce__(self):
        return (open, (self.marker, "w"))  # would create the marker file if unpickled


def test_pickled_code_in_a_bin_is_refused(server, tmp_path, mlm_folder):
    Evil.marker = str(tmp_path / "pwned")
    files = {name: (mlm_folder / name).read_bytes() for name in ("config.json", "tokenizer.json")}
    torch.save({"bert.embeddings.word_embeddings.weight": torch.zeros(2), "x": Evil()}, tmp_path / "evil.bin")
    files["pytorch_model.bin"] = (tmp_path / "evil.bin").read_bytes()
    server.add_repo("evil/pickle", files=files)
    with pytest.raises(ModelUnavailableError, match="pickled objects or code"):
        registry.load("mlm", "evil/pickle")
    assert not os.path.exists(Evil.marker)


# ----------------------------------------------------------------------------------------------------------------
# 8. Bounded cache keyed by the resolved folder


def test_one_entry_per_folder_however_it_is_spelled(mlm_folder, monkeypatch):
    monkeypatch.setattr(resolve, "settings", resolve.Settings())
    registry.clear_cache()
    spellings = [str(mlm_folder), str(mlm_folder) + "/", str(mlm_folder) + "/.",
                 str(mlm_folder / ".." / mlm_folder.name)]
    loaded = [registry.load("mlm", spelling) for spelling in spellings]
    assert len({id(one.model) for one in loaded}) == 1 and len(registry.loaded_models()) == 1
    assert [one.badge.split(" · ")[0] for one in loaded] == [echo(spelling) for spelling in spellings]  # as typed
    registry.clear_cache()


def test_lru_eviction_by_count_and_by_memory(tiny_checkpoint, monkeypatch):
    monkeypatch.setattr(resolve, "settings", resolve.Settings())
    registry.clear_cache()
    folders = [str(tiny_checkpoint("BertForMaskedLM", seed=s)) for s in (1, 2, 3)]
    resolve.configure(cache_models=2)
    first = registry.load("mlm", folders[0])
    registry.load("mlm", folders[1])
    assert registry.load("mlm", folders[0]) is first  # a hit moves it to the back of the queue
    registry.load("mlm", folders[2])  # evicts folders[1], the least recently used
    assert len(registry._models) == 2 and registry.load("mlm", folders[0]) is first
    assert {key[1] for key in registry._models.keys()} == {str(Path(folders[0]).resolve()), str(Path(folders[2]).resolve())}
    resolve.configure(cache_models=4, cache_gb=first.nbytes * 1.5 / 1e9)  # room for one model only
    registry.load("mlm", folders[1])
    assert len(registry._models) == 1 and registry.load("mlm", folders[0]) is not first
    registry.clear_cache()


# ----------------------------------------------------------------------------------------------------------------
# Messages: keys in the registry section, rendered in the learner's language


LOADING_MODULES = ("registry.py", "resolve.py", "hub.py", "weights.py", "families.py")  # in core/loading/


def test_every_learner_message_of_the_loading_path_is_a_key():
    """The first argument of every learner error raised is a literal key of the registry section; where it is a
    parameter (families.head(..., missing)), every call of that function passes a literal key."""
    import ast

    from core.text import i18n

    table = i18n.table("en")
    root = Path(__file__).resolve().parents[2] / "core" / "loading"
    found, sentences = 0, []

    def check(key, where: str) -> None:
        nonlocal found
        found += 1
        if not (isinstance(key, ast.Constant) and key.value.startswith("registry.") and key.value in table):
            sentences.append(where)

    for name in LOADING_MODULES:
        tree = ast.parse((root / name).read_text(encoding="utf-8"))
        functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        tables = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                  for target in node.targets if isinstance(target, ast.Name) and isinstance(node.value, ast.Dict)}
        for function in functions.values():
            params = [a.arg for a in function.args.args]
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args
                        and node.func.id in ("UserInputError", "ModelUnavailableError", "HubError")):
                    continue
                first = node.args[0]
                for key in [first] if not isinstance(first, ast.IfExp) else [first.body, first.orelse]:
                    if isinstance(key, ast.Name) and key.id in params:  # the key is an argument: check the calls
                        index = params.index(key.id)
                        calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call)
                                 and isinstance(c.func, ast.Name) and c.func.id == function.name]
                        assert calls, f"{name}: {function.name} is never called"
                        for call in calls:
                            passed = call.args[index] if len(call.args) > index else next(
                                k.value for k in call.keywords if k.arg == key.id)
                            check(passed, f"{name}:{call.lineno}")
                    elif isinstance(key, ast.Subscript) and isinstance(key.value, ast.Name) and key.value.id in tables:
                        for value in tables[key.value.id].values:  # a module-level table of keys: every one
                            check(value, f"{name}:{value.lineno}")
                    else:
                        check(key, f"{name}:{node.lineno}")
    assert found >= 40 and sentences == []


def test_messages_come_out_in_chinese(server, mlm_folder, monkeypatch):
    from core.text.i18n import using_language

    monkeypatch.setattr(resolve, "_offline_flag", True)
    with pytest.raises(ModelUnavailableError) as offline:
        resolve.resolve("some-org/some-model")
    with using_language("zh"):
        assert "离线" in str(offline.value) and "`hf download some-org/some-model`" in str(offline.value)
    assert "is not on this machine and the app is offline" in str(offline.value)
    monkeypatch.setattr(resolve, "_offline_flag", False)
    server.add_repo("tiny-org/gpt-like", files={"config.json": json.dumps({"model_type": "llama"}).encode(),
                                                "model.safetensors": b"x" * 10})
    with pytest.raises(UserInputError) as refused:
        registry.load("mlm", "tiny-org/gpt-like")
    with using_language("zh"):
        assert str(refused.value).startswith("“tiny-org/gpt-like”是“llama”类型的模型")
