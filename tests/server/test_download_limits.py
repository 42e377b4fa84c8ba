"""Issue #33 §1, §4, §7 on the loading side, over real HTTP to the local Hub (tests/hub_server.py): a download ended
by the rate floor or by its deadline says which; a full disk (ENOSPC injected into the file write, as no test can
fill a real disk) ends with a clear message, the partial file removed, cached models untouched, the next download
fine; names are shown as typed; `hf download` is suggested only for Hub ids."""
from __future__ import annotations

import builtins
import errno
import os

import pytest

from core.loading import hub, registry, resolve
from core.text.errors import ModelUnavailableError
from demo.server.downloads import missing_model_card
from tests.local_hub import REPO, in_thread, probabilities, same


def load_error(*args) -> str:
    thread, box = in_thread(registry.load, *args)
    thread.join(60)  # a hang guard, not a timing assertion
    assert not thread.is_alive(), "the load never returned"
    assert isinstance(box.get("error"), ModelUnavailableError), box
    return str(box["error"])


@pytest.mark.slow  # 15-130 s in the fast lane's run (issue 49)
def test_a_crawling_download_is_ended_by_the_floor_or_by_the_deadline_and_says_which(server, mlm_folder,
                                                                                      monkeypatch):
    server.add_repo(REPO, mlm_folder)
    server.trickle.add("model.safetensors")  # 256 B/s
    monkeypatch.setattr(hub, "RATE_WINDOW_SECONDS", 1.0)
    slow = load_error("mlm", REPO)
    assert "was stopped because it was too slow" in slow and "under this app's floor of 50 KB/s" in slow

    monkeypatch.setattr(hub, "RATE_WINDOW_SECONDS", 3600.0)  # the floor out of the way: the deadline ends it
    monkeypatch.setattr(hub, "DEADLINE_BASE_SECONDS", 1.0)
    late = load_error("mlm", REPO)
    weights = sum(path.stat().st_size for path in mlm_folder.iterdir() if path.name != "config.json")
    assert late.startswith(f"The download of '{REPO}' was stopped because it took too long: {weights / 1e6:.1f} MB")
    assert "too slow" not in late
    assert not list(hub.repo_folder(REPO).rglob("*.incomplete")) and not hub._inflight


def test_a_full_disk_mid_download_leaves_the_cache_as_it_was(server, mlm_folder, conll_ner_checkpoint, monkeypatch):
    server.add_repo("tiny-org/cached-first", conll_ner_checkpoint)
    server.add_repo(REPO, mlm_folder)
    cached = registry.load("ner", "tiny-org/cached-first")
    cached_files = {path: path.read_bytes() for path in hub.repo_folder("tiny-org/cached-first").rglob("*")
                    if path.is_file()}

    real_open = builtins.open
    written: list[str] = []

    class FullDisk:  # ENOSPC after the first 4 KB of the weights' partial file: a disk that fills mid-way
        def __init__(self, file):
            self.file, self.bytes = file, 0

        def write(self, data):
            if self.bytes + len(data) > 4096:
                self.file.write(bytes(data[:4096 - self.bytes]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.bytes += len(data)
            return self.file.write(data)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

    def fake_open(path, mode="r", *args, **kwargs):
        file = real_open(path, mode, *args, **kwargs)
        if str(path).endswith(".model.safetensors.%d.incomplete" % os.getpid()) and "w" in mode:
            written.append(str(path))
            return FullDisk(file)
        return file

    with monkeypatch.context() as patch:
        patch.setattr(builtins, "open", fake_open)
        message = load_error("mlm", REPO)
    weights = (mlm_folder / "model.safetensors").stat().st_size
    assert message == (f"The disk that holds the Hugging Face cache is full: model.safetensors of '{REPO}' "
                       f"({weights / 1e6:.1f} MB) could not be written. The partial file was removed and the models "
                       "already downloaded are untouched; free some space on the server, then try again.")
    assert written and not any(os.path.exists(path) for path in written)  # the partial files: removed
    assert not list(hub.cache_dir().rglob("*.incomplete"))
    assert {path: path.read_bytes() for path in cached_files} == cached_files  # the cached model: untouched
    registry.clear_cache()
    assert registry.load("ner", "tiny-org/cached-first").files.source == "Hugging Face cache"
    assert cached.files.directory == hub.cached_snapshot("tiny-org/cached-first")

    again = registry.load("mlm", REPO)  # disk space back: the next download works
    assert again.files.source == "Hub download" and again.files.downloaded_bytes >= weights
    assert same(probabilities(again), probabilities(registry.load("mlm", str(mlm_folder))))


def test_a_download_the_disk_has_no_room_for_is_refused_before_any_weights(server, mlm_folder, monkeypatch):
    import shutil

    server.add_repo(REPO, mlm_folder)
    usage = shutil.disk_usage(hub.cache_dir().parent)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=10_000_000))  # 10 MB free
    message = load_error("mlm", REPO)
    assert message.startswith(f"'{REPO}' needs ") and "has only 10.0 MB free. Nothing was downloaded" in message
    assert server.count("model.safetensors", "GET") == 0 and not any(p.startswith("/lfs/") for _, p in server.requests)


def test_names_are_shown_as_typed_never_as_what_they_resolve_to(monkeypatch, tmp_path):
    monkeypatch.setattr(resolve, "settings", resolve.Settings())  # 127.0.0.1: typed folders are opened
    home = tmp_path / "home-of-someone"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for typed in ("/proc/self", "~", "~/", "/proc/self/.."):
        with pytest.raises(ModelUnavailableError) as refused:
            resolve.resolve(typed)
        assert str(refused.value) == f"'{typed}' has no config.json."
        assert str(os.getpid()) not in str(refused.value) and "home-of-someone" not in str(refused.value)


def test_hf_download_is_suggested_only_for_hub_ids():
    assert "hf download dslim/bert-base-NER\n" in missing_model_card("dslim/bert-base-NER", "downloads.shows_ner")
    for typed in ("/etc", "~", "../x", "a b", "org/name/extra"):
        card = missing_model_card(typed, "downloads.shows_ner")
        assert "hf download" not in card and f"`{typed}`" in card


def test_the_ner_view_names_a_folder_as_typed_without_a_download_hint(monkeypatch):
    from demo.tasks import ner as tab

    monkeypatch.setattr(resolve, "settings", resolve.Settings())
    outputs = tab.tag_text("Berlin is a city.", "/etc", "first")
    note = next(o for o in outputs if isinstance(o, str) and "No tagger" in o)
    assert "'/etc' has no config.json." in note and "hf download" not in note
