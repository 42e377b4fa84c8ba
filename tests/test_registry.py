"""The registry's behaviour against a local Hub (tests/hub_server.py): cache reuse offline and with the Hub down,
deadlines, checks before any weights are fetched, sharding, pickles, bounded cache, local-folder policy and that a
download never blocks a model that is already loaded. Numbers are compared, never wall times (the join timeouts
below only guard against a hang)."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
import torch

from core import hub, mlm, registry
from core.errors import ModelUnavailableError, UserInputError
from tests import chinese_checkpoints

TEXT = "the man went to the [MASK] to buy milk ."
REPO = "tiny-org/tiny-bert-mlm"


@pytest.fixture
def server(monkeypatch, tmp_path):
    """A fresh local Hub, an empty HF cache, online, a 2 s deadline; everything restored afterwards."""
    hub_server = chinese_checkpoints.serve(monkeypatch, tmp_path, {}, timeout=2.0)
    yield hub_server
    chinese_checkpoints.stop(hub_server)


@pytest.fixture(scope="module")
def mlm_folder(tiny_checkpoint):
    return tiny_checkpoint("BertForMaskedLM")


def go_offline(monkeypatch):
    """What a restart with --offline does: nothing in memory, no network."""
    registry.clear_cache()
    monkeypatch.setattr(registry, "_offline_flag", True)


def probabilities(loaded) -> list[tuple[str, float]]:
    return [(c.token, c.probability) for c in mlm.fill_mask(loaded, TEXT, top_k=5).blanks[0].candidates]


def same(got, expected) -> bool:
    """Same tokens in the same order, probabilities equal to float32 rounding (storage layout may differ)."""
    return ([t for t, _ in got] == [t for t, _ in expected]
            and [p for _, p in got] == pytest.approx([p for _, p in expected], rel=1e-5))


def in_thread(fn, *args):
    """Run fn in a thread; returns (thread, box) where box gets 'value' or 'error'."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args)
        except Exception as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


# ----------------------------------------------------------------------------------------------------------------
# 1. Cache reuse


def test_download_then_offline_restart_predicts_from_cache(server, mlm_folder, monkeypatch):
    server.add_repo(REPO, mlm_folder)
    online = registry.load("mlm", REPO)
    assert "from Hub download" in online.badge
    expected = probabilities(online)
    local = probabilities(registry.load("mlm", str(mlm_folder)))  # the same files, read from the folder
    assert expected == local

    go_offline(monkeypatch)
    before = len(server.requests)
    offline = registry.load("mlm", REPO)
    assert offline is not online and "from Hugging Face cache" in offline.badge
    assert same(probabilities(offline), expected)
    assert len(server.requests) == before  # offline: not one request


def test_cached_model_online_costs_no_hub_request(server, mlm_folder):
    server.add_repo(REPO, mlm_folder)
    registry.load("mlm", REPO)
    registry.clear_cache()  # a restart, online
    before = len(server.requests)
    again = registry.load("mlm", REPO)
    assert len(server.requests) - before <= 1
    assert "from Hugging Face cache" in again.badge


def test_hub_down_predictions_from_cache(server, mlm_folder):
    server.add_repo(REPO, mlm_folder)
    expected = probabilities(registry.load("mlm", REPO))
    server.down()
    registry.clear_cache()
    loaded = registry.load("mlm", REPO)
    assert "from Hugging Face cache" in loaded.badge
    assert same(probabilities(loaded), expected)


def test_snapshot_from_huggingface_hub_download_is_used_offline(server, mlm_folder, monkeypatch):
    """`hf download` (huggingface_hub's snapshot_download) against the same Hub fills a cache the registry reads
    offline, including a filtered snapshot (the allow_patterns the old code forgot)."""
    import huggingface_hub
    from huggingface_hub import constants

    server.add_repo(REPO, mlm_folder, files={"README.md": b"# tiny", "extra/notes.txt": b"not fetched"})
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    folder = huggingface_hub.snapshot_download(REPO, cache_dir=hub.cache_dir(), endpoint=server.url,
                                               allow_patterns=["*.json", "*.txt", "*.safetensors"])
    assert Path(folder).parent.parent == hub.repo_folder(REPO)
    assert server.count("/tree/" + server.repos[REPO].commit) >= 1  # it went through the listing we serve
    go_offline(monkeypatch)
    loaded = registry.load("mlm", REPO)
    assert "from Hugging Face cache" in loaded.badge
    assert probabilities(loaded) == probabilities(registry.load("mlm", str(mlm_folder)))


# ----------------------------------------------------------------------------------------------------------------
# 2. Deadlines


def test_stalled_download_ends_with_a_clear_message(server, mlm_folder):
    server.add_repo(REPO, mlm_folder)
    server.stall.add("model.safetensors")
    thread, box = in_thread(registry.load, "mlm", REPO)
    thread.join(60)  # a hang guard, not a timing assertion
    assert not thread.is_alive(), "the load never returned"
    assert isinstance(box.get("error"), ModelUnavailableError)
    assert "stalled" in str(box["error"]) and REPO in str(box["error"])
    assert not hub._inflight  # the job ended; nothing left in flight


def test_trickling_download_counts_as_stalled(server, mlm_folder):
    server.add_repo(REPO, mlm_folder)
    server.trickle.add("model.safetensors")
    thread, box = in_thread(registry.load, "mlm", REPO)
    thread.join(60)
    assert not thread.is_alive()
    assert isinstance(box.get("error"), ModelUnavailableError) and "stalled" in str(box["error"])


def test_listing_that_never_answers_ends_with_a_clear_message(server, mlm_folder):
    server.add_repo(REPO, mlm_folder)
    server.hang_listing = True
    thread, box = in_thread(registry.load, "mlm", REPO)
    thread.join(60)
    assert not thread.is_alive()
    message = str(box.get("error"))
    assert isinstance(box.get("error"), ModelUnavailableError) and "did not answer within 2 s" in message
    assert server.count("config.json") == 0


# ----------------------------------------------------------------------------------------------------------------
# 3. Progress in bytes


def test_download_progress_reports_bytes(server, mlm_folder):
    server.add_repo(REPO, mlm_folder)
    seen: list[tuple[float, str]] = []
    registry.load("mlm", REPO, progress=lambda fraction, message: seen.append((fraction, message)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    weights_mb = (mlm_folder / "model.safetensors").stat().st_size / 1e6
    assert any(f"of {weights_mb:.1f} MB" in m or "MB" in m for _, m in seen)
    assert seen[-1][1].startswith(f"Downloading {REPO}: ") and seen[-1][1].endswith(" MB")
    done, total = [float(x) for x in seen[-1][1].split(": ")[1].removesuffix(" MB").split(" of ")]
    assert done == total >= weights_mb - 0.05


# ----------------------------------------------------------------------------------------------------------------
# 4. Downloads never block what is loaded; one download per id


def test_slow_download_does_not_block_a_loaded_model_and_is_shared(server, mlm_folder):
    hub.set_timeout(60.0)  # this test releases the stall itself
    server.add_repo(REPO, mlm_folder)
    server.stall.add("model.safetensors")
    loaded_elsewhere = registry.load("mlm", str(mlm_folder))
    first, first_box = in_thread(registry.load, "mlm", REPO)
    second, second_box = in_thread(registry.load, "mlm", REPO)
    while server.count("model.safetensors", "GET") == 0 and first.is_alive():
        threading.Event().wait(0.05)
    # While the download hangs, other users' models answer, and tokenizers resolve.
    assert probabilities(registry.load("mlm", str(mlm_folder))) == probabilities(loaded_elsewhere)
    assert registry.tokenizer(str(mlm_folder))[0] is loaded_elsewhere.tokenizer
    assert first.is_alive() and second.is_alive()
    server.release()
    first.join(60), second.join(60)
    assert first_box["value"] is second_box["value"]
    assert server.count("/resolve/" + server.repos[REPO].commit + "/model.safetensors", "GET") == 1


# ----------------------------------------------------------------------------------------------------------------
# 5. Config first


def test_non_bert_repo_refused_before_any_weights(server, mlm_folder):
    config = json.loads((mlm_folder / "config.json").read_text()) | {"model_type": "llama"}
    server.add_repo("meta/llama-tiny", files={"config.json": json.dumps(config).encode(),
                                              "model.safetensors": (mlm_folder / "model.safetensors").read_bytes()})
    with pytest.raises(UserInputError, match="'llama' model; this app runs bert, distilbert, gpt2 checkpoints"):
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
    registry.configure(max_model_gb=0.001)  # 1 MB; the tiny model has ~1M parameters (4 MB in fp32)
    with pytest.raises(UserInputError, match="its parameters take 0.00"):
        registry.load("mlm", REPO)
    assert server.count("config.json", "GET") == 1 and server.count("model.safetensors") == 0
    with pytest.raises(UserInputError, match="too large"):  # a local folder: refused before allocation
        registry.load("mlm", str(mlm_folder))
    registry.configure(max_model_gb=1.0)
    assert registry.load("mlm", "tiny-org/honest").nbytes > 10**6


def test_the_size_estimate_builds_each_config_once(mlm_folder, monkeypatch):
    """Every request for a cached model checks its size again; the parameter count is the meta-device skeleton's,
    built once per distinct config (it was ~12% of the server's CPU under the classroom load). The count itself
    equals transformers' own for the same config."""
    from transformers import BertConfig, BertModel

    from core import families

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
    original = registry.bert.BertForMaskedLM.__init__

    def spy(self, cfg):
        built_on.append(torch.empty(0).device.type)  # the default device the class is being built on
        original(self, cfg)

    monkeypatch.setattr(registry.bert.BertForMaskedLM, "__init__", spy)
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
    card = mlm.model_card(REPO)  # the masked-LM tab's Model card view
    assert card.source == mlm.CONFIG_FILE and card.config.hidden_size == 32
    from demo import mlm as mlm_demo

    summary = mlm_demo.masking(REPO, "the cat sat on the mat", 0, 20)[-1]  # the Masking view, on its tokenizer
    assert "not on this machine" not in summary and summary.startswith("6 tokens may be chosen")
    assert server.count("model.safetensors") == 0


# ----------------------------------------------------------------------------------------------------------------
# 7. Sharded safetensors, and shard paths confined to their snapshot


@pytest.fixture(scope="module")
def sharded_folder(tmp_path_factory, mlm_folder):
    import transformers

    folder = tmp_path_factory.mktemp("sharded")
    model = transformers.BertForMaskedLM.from_pretrained(str(mlm_folder))
    model.save_pretrained(folder, max_shard_size="1MB")
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (mlm_folder / name).exists():
            (folder / name).write_bytes((mlm_folder / name).read_bytes())
    assert (folder / "model.safetensors.index.json").is_file() and len(list(folder.glob("model-*"))) >= 2
    return folder


def test_sharded_weights_load_locally_and_from_the_hub(server, sharded_folder, mlm_folder):
    expected = probabilities(registry.load("mlm", str(mlm_folder)))
    assert same(probabilities(registry.load("mlm", str(sharded_folder))), expected)
    server.add_repo("tiny-org/sharded", sharded_folder)
    assert same(probabilities(registry.load("mlm", "tiny-org/sharded")), expected)
    shards = json.loads((sharded_folder / "model.safetensors.index.json").read_text())["weight_map"].values()
    assert all(server.count(name, "GET") >= 1 for name in set(shards))


def escaping_index(folder: Path) -> bytes:
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    first = next(iter(index["weight_map"]))
    index["weight_map"][first] = "../../../outside.safetensors"
    return json.dumps(index).encode()


def test_shard_index_pointing_outside_is_refused(server, tmp_path, sharded_folder):
    local = tmp_path / "escape" / "model"
    local.mkdir(parents=True)
    for path in sharded_folder.iterdir():
        (local / path.name).write_bytes(path.read_bytes())
    (local / "model.safetensors.index.json").write_bytes(escaping_index(sharded_folder))
    with pytest.raises(ModelUnavailableError, match="outside its own folder; refused") as info:
        registry.load("mlm", str(local))
    assert str(tmp_path) not in str(info.value)

    server.add_repo("tiny-org/escape", local)
    with pytest.raises(ModelUnavailableError, match="outside its own folder; refused"):
        registry.load("mlm", "tiny-org/escape")
    assert not any("outside" in path for _, path in server.requests)


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
    monkeypatch.setattr(registry, "settings", registry.Settings())
    registry.clear_cache()
    spellings = [str(mlm_folder), str(mlm_folder) + "/", str(mlm_folder) + "/.",
                 str(mlm_folder / ".." / mlm_folder.name)]
    loaded = {id(registry.load("mlm", spelling)) for spelling in spellings}
    assert len(loaded) == 1 and len(registry.loaded_models()) == 1
    registry.clear_cache()


def test_lru_eviction_by_count_and_by_memory(tiny_checkpoint, monkeypatch):
    monkeypatch.setattr(registry, "settings", registry.Settings())
    registry.clear_cache()
    folders = [str(tiny_checkpoint("BertForMaskedLM", seed=s)) for s in (1, 2, 3)]
    registry.configure(cache_models=2)
    first = registry.load("mlm", folders[0])
    registry.load("mlm", folders[1])
    assert registry.load("mlm", folders[0]) is first  # a hit moves it to the back of the queue
    registry.load("mlm", folders[2])  # evicts folders[1], the least recently used
    assert len(registry._cache) == 2 and registry.load("mlm", folders[0]) is first
    assert {key[1] for key in registry._cache} == {str(Path(folders[0]).resolve()), str(Path(folders[2]).resolve())}
    registry.configure(cache_models=4, cache_gb=first.nbytes * 1.5 / 1e9)  # room for one model only
    registry.load("mlm", folders[1])
    assert len(registry._cache) == 1 and registry.load("mlm", folders[0]) is not first
    registry.clear_cache()


# ----------------------------------------------------------------------------------------------------------------
# 9. Local folders as model ids


def test_local_folders_only_on_loopback_or_under_models_dir(mlm_folder, monkeypatch):
    monkeypatch.setattr(registry, "settings", registry.Settings())
    monkeypatch.delenv("SPACE_ID", raising=False)
    registry.clear_cache()
    assert registry.local_models_allowed()  # 127.0.0.1 is the default
    registry.load("mlm", str(mlm_folder))
    assert all(str(mlm_folder.parent) not in badge for badge in registry.loaded_models())

    registry.configure(host="0.0.0.0")
    messages = set()
    for typed in (str(mlm_folder), "/etc", "/no/such/folder", "~", "../../x"):
        with pytest.raises(ModelUnavailableError) as info:
            registry.resolve(typed)
        messages.add(str(info.value))
    assert messages == {"This server does not open folders on its disk. Enter a Hugging Face model id such as "
                        "bert-base-uncased."}  # one answer for all: no oracle for which folders exist

    registry.configure(models_dir=mlm_folder.parent)
    files = registry.resolve(mlm_folder.name)
    assert files.source == "local folder" and files.name == mlm_folder.name
    with pytest.raises(ModelUnavailableError, match="does not open folders"):
        registry.resolve(str(mlm_folder))  # a full path is still refused on a public host

    monkeypatch.setattr(registry, "settings", registry.Settings())
    monkeypatch.setenv("SPACE_ID", "someone/plm-explorer")
    assert not registry.local_models_allowed()
    registry.configure(allow_local_models=True)
    assert registry.resolve(str(mlm_folder)).source == "local folder"
    registry.clear_cache()


def test_app_flags_reach_the_registry(monkeypatch):
    import app

    monkeypatch.setattr(registry, "settings", registry.Settings())
    args = app.parse_args(["--host", "0.0.0.0", "--max-model-gb", "5", "--cache-models", "2", "--cache-gb", "1.5",
                           "--models-dir", "/tmp", "--allow-local-models"])
    app.configure_registry(args)
    s = registry.settings
    assert (s.host, s.max_model_bytes, s.cache_models, s.cache_bytes, s.models_dir, s.allow_local_models) == (
        "0.0.0.0", 5e9, 2, 1.5e9, Path("/tmp").resolve(), True)


# ----------------------------------------------------------------------------------------------------------------
# 10. hf download in every message


def test_messages_and_readme_say_hf_download(monkeypatch):
    monkeypatch.setattr(registry, "_offline_flag", True)
    with pytest.raises(ModelUnavailableError, match="`hf download some-org/some-model`"):
        registry.resolve("some-org/some-model")
    root = Path(__file__).resolve().parent.parent
    sources = [root / "README.md", *root.glob("core/*.py"), *root.glob("demo/*.py"), root / "app.py"]
    assert not [p.name for p in sources if "huggingface-cli" in p.read_text(encoding="utf-8")]
    assert "hf download" in (root / "README.md").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------------------------------------------
# Messages: keys in the registry section, rendered in the learner's language


LOADING_MODULES = ("registry.py", "model_cache.py", "hub.py", "weights.py", "families.py")


def test_every_learner_message_of_the_loading_path_is_a_key():
    import ast

    from core import i18n

    table = i18n.table("en")
    root = Path(__file__).resolve().parent.parent / "core"
    found, sentences = 0, []
    for name in LOADING_MODULES:
        for node in ast.walk(ast.parse((root / name).read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("UserInputError", "ModelUnavailableError", "HubError") and node.args):
                first = node.args[0]
                keys = [first] if not isinstance(first, ast.IfExp) else [first.body, first.orelse]
                for key in keys:
                    found += 1
                    if not (isinstance(key, ast.Constant) and key.value.startswith("registry.")
                            and key.value in table):
                        sentences.append(f"{name}:{node.lineno}")
    assert found >= 40 and sentences == []


def test_messages_come_out_in_chinese(server, mlm_folder, monkeypatch):
    from core.i18n import using_language

    monkeypatch.setattr(registry, "_offline_flag", True)
    with pytest.raises(ModelUnavailableError) as offline:
        registry.resolve("some-org/some-model")
    with using_language("zh"):
        assert "离线" in str(offline.value) and "`hf download some-org/some-model`" in str(offline.value)
    assert "is not on this machine and the app is offline" in str(offline.value)
    monkeypatch.setattr(registry, "_offline_flag", False)
    server.add_repo("tiny-org/gpt-like", files={"config.json": json.dumps({"model_type": "llama"}).encode(),
                                                "model.safetensors": b"x" * 10})
    with pytest.raises(UserInputError) as refused:
        registry.load("mlm", "tiny-org/gpt-like")
    with using_language("zh"):
        assert str(refused.value).startswith("“tiny-org/gpt-like”是“llama”类型的模型")
