"""Resolving model ids (core/loading/resolve.py, core/loading/hub.py) against a local Hub (tests/hub_server.py): cache reuse offline
and with the Hub down, deadlines, progress in bytes, one download per id that never blocks a loaded model, sharded
weights and shard paths confined to their snapshot, the local-folder policy, and messages that name `hf download`.
Numbers are compared, never wall times (the join timeouts below only guard against a hang)."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from core.loading import hub, registry, resolve
from core.text.errors import ModelUnavailableError, echo
from tests.local_hub import REPO, go_offline, in_thread, probabilities, same


# ----------------------------------------------------------------------------------------------------------------
# 1. Cache reuse


def test_download_then_offline_restart_predicts_from_cache(server, mlm_folder, monkeypatch):
    server.add_repo(REPO, mlm_folder)
    online = registry.load("mlm", REPO)
    assert "downloaded now (" in online.badge
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


def test_trickling_download_is_ended_as_too_slow(server, mlm_folder, monkeypatch):
    monkeypatch.setattr(hub, "RATE_WINDOW_SECONDS", 1.0)  # the floor (50 KB/s) over 1 s instead of 60 s
    server.add_repo(REPO, mlm_folder)
    server.trickle.add("model.safetensors")  # 256 bytes/s
    thread, box = in_thread(registry.load, "mlm", REPO)
    thread.join(60)
    assert not thread.is_alive()
    message = str(box.get("error"))
    assert isinstance(box.get("error"), ModelUnavailableError) and "was stopped because it was too slow" in message
    assert "under this app's floor of 50 KB/s" in message and "took too long" not in message


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
    assert str(info.value).startswith(f"The shard index of '{echo(str(local))}' names")  # as typed

    server.add_repo("tiny-org/escape", local)
    with pytest.raises(ModelUnavailableError, match="outside its own folder; refused"):
        registry.load("mlm", "tiny-org/escape")
    assert not any("outside" in path for _, path in server.requests)


# ----------------------------------------------------------------------------------------------------------------
# 9. Local folders as model ids


def test_local_folders_only_on_loopback_or_under_models_dir(mlm_folder, monkeypatch):
    monkeypatch.setattr(resolve, "settings", resolve.Settings())
    monkeypatch.delenv("SPACE_ID", raising=False)
    registry.clear_cache()
    assert resolve.local_models_allowed()  # 127.0.0.1 is the default
    registry.load("mlm", str(mlm_folder))
    assert [badge.split(" · ")[0] for badge in registry.loaded_models()] == [echo(str(mlm_folder))]  # as typed

    resolve.configure(host="0.0.0.0")
    messages = set()
    for typed in (str(mlm_folder), "/etc", "/no/such/folder", "~", "../../x"):
        with pytest.raises(ModelUnavailableError) as info:
            resolve.resolve(typed)
        messages.add(str(info.value))
    assert messages == {"This server does not open folders on its disk. Enter a Hugging Face model id such as "
                        "bert-base-uncased."}  # one answer for all: no oracle for which folders exist

    resolve.configure(models_dir=mlm_folder.parent)
    files = resolve.resolve(mlm_folder.name)
    assert files.source == "local folder" and files.name == mlm_folder.name
    with pytest.raises(ModelUnavailableError, match="does not open folders"):
        resolve.resolve(str(mlm_folder))  # a full path is still refused on a public host

    monkeypatch.setattr(resolve, "settings", resolve.Settings())
    monkeypatch.setenv("SPACE_ID", "someone/plm-explorer")
    assert not resolve.local_models_allowed()
    resolve.configure(allow_local_models=True)
    assert resolve.resolve(str(mlm_folder)).source == "local folder"
    registry.clear_cache()


def test_app_flags_reach_the_registry(monkeypatch):
    import app

    monkeypatch.setattr(resolve, "settings", resolve.Settings())
    args = app.parse_args(["--host", "0.0.0.0", "--max-model-gb", "5", "--cache-models", "2", "--cache-gb", "1.5",
                           "--models-dir", "/tmp", "--allow-local-models"])
    app.configure_registry(args)
    s = resolve.settings
    assert (s.host, s.max_model_bytes, s.cache_models, s.cache_bytes, s.models_dir, s.allow_local_models) == (
        "0.0.0.0", 5e9, 2, 1.5e9, Path("/tmp").resolve(), True)


# ----------------------------------------------------------------------------------------------------------------
# 10. hf download in every message


def test_messages_and_readme_say_hf_download(monkeypatch):
    monkeypatch.setattr(resolve, "_offline_flag", True)
    with pytest.raises(ModelUnavailableError, match="`hf download some-org/some-model`"):
        resolve.resolve("some-org/some-model")
    root = Path(__file__).resolve().parents[2]
    sources = [root / "README.md", *root.glob("core/**/*.py"), *root.glob("demo/**/*.py"), root / "app.py"]
    assert len(sources) >= 150, f"read {len(sources)} files: core/ and demo/ packages were not walked"
    assert not [p.name for p in sources if "huggingface-cli" in p.read_text(encoding="utf-8")]
    assert "hf download" in (root / "README.md").read_text(encoding="utf-8")
