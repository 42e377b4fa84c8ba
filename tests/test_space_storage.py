"""On a Space, downloads survive a restart and preloaded checkpoints are found (issue #48 §4): core.loading.hub's
use_persistent_storage moves HF_HOME under a persistent folder (``/data``; a temporary one here), unless the operator
set HF_HOME, and the registry still reads the image's default cache, where preload_from_hub put its checkpoints."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from core.loading import hub, resolve
from tests.live_app import ROOT

COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


def space_env(tmp_path, **extra) -> dict:
    """A Space's environment: SPACE_ID set, no HF_HOME/HF_HUB_CACHE, the image's default cache under tmp_path."""
    env = {"SPACE_ID": "teacher/plm-explorer", "XDG_CACHE_HOME": str(tmp_path / "image-cache"), **extra}
    return env


def test_on_a_space_with_persistent_storage_hf_home_moves_there(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    env = space_env(tmp_path)
    home = hub.use_persistent_storage(data, env)
    assert home == data / "huggingface" and home.is_dir()
    assert env["HF_HOME"] == str(data / "huggingface")
    assert env[hub.PRELOADED_CACHE_ENV] == str(tmp_path / "image-cache" / "huggingface" / "hub")


@pytest.mark.parametrize("case", ["operator set HF_HOME", "operator set HF_HUB_CACHE", "not a Space",
                                  "no persistent storage", "read-only storage"])
def test_otherwise_nothing_changes(tmp_path, case):
    data = tmp_path / "data"
    data.mkdir()
    env = space_env(tmp_path)
    if case == "operator set HF_HOME":
        env["HF_HOME"] = str(tmp_path / "mine")
    elif case == "operator set HF_HUB_CACHE":
        env["HF_HUB_CACHE"] = str(tmp_path / "mine")
    elif case == "not a Space":
        del env["SPACE_ID"]
    elif case == "no persistent storage":
        data.rmdir()
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes to a read-only folder")
        data.chmod(0o500)
    before = dict(env)
    assert hub.use_persistent_storage(data, env) is None
    assert env == before
    assert not (data / "huggingface").exists()


APP_AS_MAIN = """
import json, os, pathlib, runpy, sys
import core.loading.hub
core.loading.hub.SPACE_DATA_DIR = pathlib.Path(sys.argv[1])
assert "huggingface_hub" not in sys.modules
sys.argv = ["app.py", "--help"]  # the app's first lines run, then its argument parser exits
try:
    runpy.run_path("app.py", run_name="__main__")
except SystemExit:
    pass
import huggingface_hub.constants
print(json.dumps({"hf_home": os.environ.get("HF_HOME"), "hf_hub_cache": huggingface_hub.constants.HF_HUB_CACHE}))
"""
APP_IMPORTED = """
import json, os, pathlib, sys
import core.loading.hub
core.loading.hub.SPACE_DATA_DIR = pathlib.Path(sys.argv[1])
import app
print(json.dumps({"hf_home": os.environ.get("HF_HOME")}))
"""


def run_python(snippet: str, tmp_path, data) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in ("HF_HOME", "HF_HUB_CACHE")}
    env.update(space_env(tmp_path), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", snippet, str(data)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_app_moves_hf_home_before_huggingface_hub_reads_it(tmp_path):
    """`python app.py` on a Space: HF_HOME is on the persistent folder by the time gradio imports huggingface_hub,
    which reads it then, once. Importing app.py (a test, a tool) changes no environment."""
    data = tmp_path / "data"
    data.mkdir()
    assert run_python(APP_AS_MAIN, tmp_path, data) == {"hf_home": str(data / "huggingface"),
                                                        "hf_hub_cache": str(data / "huggingface" / "hub")}
    assert run_python(APP_IMPORTED, tmp_path, data) == {"hf_home": None}


def preload(cache, model_id: str, folder) -> None:
    repo = cache / ("models--" + model_id.replace("/", "--"))
    shutil.copytree(folder, repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)


def test_a_preloaded_checkpoint_is_found_without_a_download_when_hf_home_is_on_data(tmp_path, monkeypatch,
                                                                                   tiny_checkpoint):
    """The image's cache holds the preloaded checkpoint, the cache on /data is empty, and the Hub is out of reach: the
    registry loads it from the image's cache, and a checkpoint in neither still says it is not here."""
    image_cache = tmp_path / "image-cache" / "huggingface" / "hub"
    preload(image_cache, "bert-base-uncased", tiny_checkpoint("BertForMaskedLM"))
    data = tmp_path / "data"
    data.mkdir()
    env = space_env(tmp_path)
    hub.use_persistent_storage(data, env)
    for name in ("HF_HOME", hub.PRELOADED_CACHE_ENV):
        monkeypatch.setenv(name, env[name])
    monkeypatch.delenv("HF_HUB_CACHE")
    assert hub.cache_dir() == data / "huggingface" / "hub"
    assert hub.cache_dirs() == [data / "huggingface" / "hub", image_cache]
    files = resolve.resolve("bert-base-uncased", "model", task="mlm")
    assert files.directory == image_cache / "models--bert-base-uncased" / "snapshots" / COMMIT
    assert files.source == "Hugging Face cache"
    assert resolve.answers_here("bert-base-uncased")  # so the download step asks for no slot
    with pytest.raises(resolve.ModelUnavailableError) as missing:
        resolve.resolve("dslim/bert-base-NER", "model", task="ner")
    assert missing.value.key == "registry.offline"  # conftest: HF_HUB_OFFLINE=1
    from core.loading import registry

    try:
        loaded = registry.load("mlm", "bert-base-uncased")
        assert loaded.files.directory == files.directory
    finally:
        registry.clear_cache()  # the tiny model must not answer another test's "bert-base-uncased"


def test_a_download_goes_to_data_and_the_preloaded_cache_is_not_written(tmp_path, monkeypatch, server,
                                                                        tiny_checkpoint):
    """A checkpoint a learner asks for that is not preloaded is fetched into the cache on /data, which survives a
    restart; the image's cache is only read."""
    image_cache = tmp_path / "image"
    image_cache.mkdir()
    monkeypatch.setenv(hub.PRELOADED_CACHE_ENV, str(image_cache))
    server.add_repo("someone/tiny-mlm", tiny_checkpoint("BertForMaskedLM"))
    files = resolve.resolve("someone/tiny-mlm", "model", task="mlm")
    assert files.directory.is_relative_to(hub.cache_dir())
    assert list(image_cache.iterdir()) == []
