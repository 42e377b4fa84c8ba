"""The download step (demo/server/downloads.py) driven through Gradio as a browser drives it: first ``<name>_download``
(the "download" concurrency group), then ``<name>`` (the "bert" group), against the local Hub (tests/hub_server.py).

Calls are counted, never timed: the join/poll limits below only guard against a hang."""
from __future__ import annotations

import threading

import gradio as gr
import pytest

from core.loading import families, hub, registry
from core.tasks import ner as core_ner
from core.text.errors import ModelUnavailableError
from demo.server import downloads
from tests import chinese_checkpoints
from core.loading import resolve

REPO = "tiny-org/tiny-bert-ner"
TEXT = "My name is Wolfgang and I live in Berlin."


@pytest.fixture
def ner_folder(conll_ner_checkpoint):
    return conll_ner_checkpoint


@pytest.fixture
def server(monkeypatch, tmp_path):
    hub_server = chinese_checkpoints.serve(monkeypatch, tmp_path, {}, timeout=60.0)  # tests release stalls themselves
    yield hub_server
    chinese_checkpoints.stop(hub_server)


@pytest.fixture(scope="module")
def blocks():
    import app

    from demo.server import first_page

    built = app.build_app()
    # with app.py's middleware: launch()'s check of its own server is a HEAD of the page, which it answers at once
    built.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True,
                 app_kwargs={"middleware": first_page.middleware()})
    yield built
    built.close()


@pytest.fixture
def client(blocks):
    from gradio_client import Client

    return Client(blocks.local_url, verbose=False)


@pytest.fixture
def tag_calls(monkeypatch):
    """How many requests reached the NER model step (core.tasks.ner.tag_many, one entry per text), with which ids."""
    calls: list[str] = []
    real = core_ner.tag_many

    def counted(texts, model_id, *args, **kwargs):
        calls.extend(str(model_id) for _ in texts)
        return real(texts, model_id, *args, **kwargs)

    monkeypatch.setattr(core_ner, "tag_many", counted)
    return calls


def wait_for(condition, limit: float = 60.0) -> None:
    stop = threading.Event()
    for _ in range(int(limit / 0.05)):
        if condition():
            return
        stop.wait(0.05)
    raise AssertionError("the condition never held (hang guard)")


def test_stalled_downloads_leave_the_bert_slots_to_loaded_models(server, client, ner_folder, tag_calls):
    """Four users ask for a checkpoint whose download stalls (as many as the "bert" group has slots); another
    user's loaded model still answers through the same two-step event path, and the stalled ones then finish."""
    server.add_repo(REPO, ner_folder)
    server.stall.add("model.safetensors")
    stalled = [client.submit(REPO, api_name="/ner_tag_download") for _ in range(downloads.BERT_SLOTS)]
    wait_for(lambda: server.count("model.safetensors", "GET") == 1)
    # Another user, a model that is here: both steps answer while the four downloads hang.
    client.predict(str(ner_folder), api_name="/ner_tag_download")
    here = client.predict(TEXT, str(ner_folder), "first", api_name="/ner_tag")
    assert "Model:" in here[0] and ner_folder.name in here[0]
    assert tag_calls == [str(ner_folder)]
    assert not any(job.done() for job in stalled)
    server.release()
    wait_for(lambda: all(job.done() for job in stalled))
    # One download, shared by the four; then the first user's model step runs on the downloaded files.
    assert server.count(f"/resolve/{server.repos[REPO].commit}/model.safetensors", "GET") == 1
    there = client.predict(TEXT, REPO, "first", api_name="/ner_tag")
    assert "downloaded now (" in there[0]  # the model step after the download step: not "from ... cache"
    assert tag_calls == [str(ner_folder), REPO]


def test_the_model_step_never_downloads_and_reports_the_download_failure(server, client, ner_folder, tag_calls):
    server.add_repo(REPO, ner_folder)
    # Called on its own (an API client skipping the download step): no weights requested, a clear message.
    skipped = client.predict(TEXT, REPO, "first", api_name="/ner_tag")
    assert f"`{REPO}`, which is not on this machine" in skipped[0] and "not been downloaded yet" in skipped[0]
    assert f"hf download {REPO}\n" in skipped[0]  # the card: the exact command, on a line of its own
    assert server.count("model.safetensors", "GET") == 0 and tag_calls == [REPO]
    # A download that stalls: its own message reaches the view (which still shows the tokenisation).
    hub.set_timeout(1.0)
    server.stall.add("model.safetensors")
    client.predict(REPO, api_name="/ner_tag_download")
    failed = client.predict(TEXT, REPO, "first", api_name="/ner_tag")
    assert "stalled" in failed[0] and REPO in failed[0] and failed[-1]  # the token table is there
    assert tag_calls == [REPO, REPO] and server.count("model.safetensors", "GET") == 1


def test_download_step_shows_megabytes_while_bytes_arrive(server, client, ner_folder):
    server.add_repo(REPO, ner_folder)
    server.stall.add("model.safetensors")  # half the weights arrive, then nothing until released
    job = client.submit(REPO, api_name="/ner_tag_download")
    seen: list[str] = []

    def progress_shown() -> bool:
        data = job.status().progress_data or []
        seen.extend(unit.desc for unit in data if unit.desc)
        return any(desc.startswith(f"Downloading {REPO}: ") for desc in seen)

    wait_for(progress_shown)
    server.release()
    job.result(timeout=60)
    weights_mb = (ner_folder / "model.safetensors").stat().st_size / 1e6
    done, total = [float(x) for x in next(d for d in seen if d.startswith("Downloading")).split(": ")[1]
                   .removesuffix(" MB").split(" of ")]
    assert 0 < done < total and total >= weights_mb - 0.05


def test_fetch_models_reports_bytes_in_the_learners_language(server, ner_folder):
    from core.text.i18n import using_language

    server.add_repo(REPO, ner_folder)
    seen: list[tuple[float, str]] = []
    with using_language("zh"):
        downloads.fetch_models([("ner", REPO)], lambda fraction, message: seen.append((fraction, message)))
    assert seen[-1][0] == pytest.approx(1.0) and seen[-1][1].startswith(f"正在下载 {REPO}：")
    with resolve.downloads_elsewhere():
        files = resolve.resolve(REPO)
    fetched = [name for name in (*families.BERT_TOKENIZER_FILES, "model.safetensors") if (ner_folder / name).is_file()]
    assert files.source == "Hub download"  # "downloaded now (N MB)": the bytes of what came after config.json
    assert files.downloaded_bytes == sum((ner_folder / name).stat().st_size for name in fetched)
    registry.clear_cache()  # a restart: the same snapshot is now "from Hugging Face cache"
    assert resolve.resolve(REPO).source == "Hugging Face cache"


def test_local_only_refuses_downloads_inside_and_allows_them_after(server, ner_folder):
    server.add_repo(REPO, ner_folder)
    with pytest.raises(ModelUnavailableError, match="not on this machine yet"):
        downloads.local_only(lambda: registry.load("ner", REPO))()
    assert server.count("model.safetensors", "GET") == 0
    assert registry.load("ner", REPO).files.source == "Hub download"  # outside: the registry downloads


def test_every_model_event_downloads_in_its_own_step(blocks):
    """Each event on the "bert" group, and each GPT view, runs after a download step on the "download" group."""
    fns = blocks.fns
    model_steps = [fn for fn in fns.values() if fn.concurrency_id == "bert" or (
        fn.api_name or "").startswith("transformer_gpt_") and not fn.api_name.endswith("_download")
        and "preset" not in fn.api_name and not fn.api_name.endswith("_open")]  # presets/first open: their own
    assert len(model_steps) >= 20
    for fn in model_steps:
        before = fns.get(fn.trigger_after)
        assert before is not None and before.api_name == f"{fn.api_name}_download", fn.api_name
        assert before.concurrency_id == "download"
        # no outputs (each, even gr.skip(), costs Gradio a component and a config rebuild per click); its progress
        # shows on the model step's leaves, the same components a browser watches for the answer
        leaves = [block._id for block in fn.outputs if not isinstance(block, gr.blocks.BlockContext)]
        assert before.outputs == [] and [block._id for block in before.show_progress_on] == leaves, fn.api_name


def test_a_checkpoint_of_another_kind_is_refused_in_the_view_after_two_requests(server, client, ner_folder,
                                                                                 tiny_gpt2_checkpoint):
    """Issue #33 §2 through the app: the MLM tab's Fill (download step, then model step) with a causal LM and with a
    token tagger: the notice names what each is and the tab that runs it; the Hub saw the listing and config.json."""
    server.add_repo("tiny-org/tiny-gpt2", tiny_gpt2_checkpoint("bpe"))
    server.add_repo(REPO, ner_folder)
    for model, says in (("tiny-org/tiny-gpt2", "is a causal LM (GPT2LMHeadModel), not the kind of model this view "
                                               "runs: use it in Transformer & GPT."),
                        (REPO, "tags tokens (BertForTokenClassification), not the kind of model this view runs: use "
                               "it in NER.")):
        client.predict(model, api_name="/mlm_fill_download")
        notice = client.predict(model, "the man went to the [MASK] .", 5, api_name="/mlm_fill")[0]
        assert f"'{model}' {says}" in notice, notice
        asked = [path for _, path in server.requests if model in path]
        assert len(asked) == 2 and asked[1].endswith("/config.json"), asked
