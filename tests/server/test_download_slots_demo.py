"""Issue #33 §1 and §4 through the app: crawling downloads from many sessions (the local Hub's ``trickle``, 256 B/s,
over real HTTP) never hold up a click on a checkpoint that is here; one session holds at most 2 download slots;
Masking's tokenizer comes through the same download step; what the status line says.

Each gradio_client.Client is one browser session. Nothing is timed: a click "answers as fast as when idle" when it
completes while every crawling download is still running and the slots are still full (the queue state is read,
not the clock). The wait limits below only guard against a hang."""
from __future__ import annotations

import threading

import pytest

from core.loading import hub, registry
from demo.server import downloads
from tests import chinese_checkpoints

TEXT = "My name is Wolfgang and I live in Berlin."
CRAWLING = [f"crawl-org/ner-{i}" for i in range(downloads.DOWNLOAD_SLOTS)]


@pytest.fixture
def server(monkeypatch, tmp_path):
    hub_server = chinese_checkpoints.serve(monkeypatch, tmp_path, {}, timeout=10.0)
    monkeypatch.setattr(hub, "RATE_FLOOR_BYTES_PER_SECOND", 0)  # the crawl goes on until the test releases it
    yield hub_server
    hub_server.release()
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


def session(blocks):
    from gradio_client import Client

    return Client(blocks.local_url, verbose=False)


def wait_for(condition, limit: float = 90.0) -> None:
    stop = threading.Event()
    for _ in range(int(limit / 0.05)):
        if condition():
            return
        stop.wait(0.05)
    raise AssertionError("the condition never held (hang guard)")


def weight_requests(server) -> int:
    return sum(1 for _, path in server.requests if path.startswith("/lfs/"))


def test_clicks_on_checkpoints_that_are_here_answer_while_8_sessions_crawl(server, blocks, conll_ner_checkpoint):
    for repo in [*CRAWLING, "tiny-org/cached", "tiny-org/ninth"]:
        server.add_repo(repo, conll_ner_checkpoint)
    learner = session(blocks)
    learner.predict("tiny-org/cached", api_name="/ner_tag_download")  # on disk before the crawl starts
    loaded = str(conll_ner_checkpoint)
    learner.predict(TEXT, loaded, "first", api_name="/ner_tag")  # loaded in memory too
    server.trickle.add("model.safetensors")
    before = weight_requests(server)  # tiny-org/cached's

    crawling = [session(blocks).submit(repo, api_name="/ner_tag_download") for repo in CRAWLING]
    wait_for(lambda: weight_requests(server) - before == 8 and downloads.SLOTS.state()["running"] == 8)
    ninth = session(blocks).submit("tiny-org/ninth", api_name="/ner_tag_download")  # a 9th download: in line
    wait_for(lambda: downloads.SLOTS.state()["waiting"] == 1)

    for model in (loaded, "tiny-org/cached"):  # the whole click: download step, then the model step
        learner.submit(model, api_name="/ner_tag_download").result(timeout=120)  # (a hang guard: fails, not hangs)
        shown = learner.submit(TEXT, model, "first", api_name="/ner_tag").result(timeout=120)
        assert shown[0].startswith(f"**Model:** {model} · BertForTokenClassification · "), shown[0][:200]
    assert "· from a local folder ·" in learner.predict(TEXT, loaded, "first", api_name="/ner_tag")[0]
    # ... answered while all 8 downloads still crawl, the slots full and the 9th still waiting
    assert not any(job.done() for job in crawling) and not ninth.done()
    assert downloads.SLOTS.state() == {"running": 8, "waiting": 1, "sessions": downloads.SLOTS.state()["sessions"]}
    assert weight_requests(server) - before == 8  # the 9th has not started

    server.release()  # the crawls end (cut short): every step returns, the slots empty
    wait_for(lambda: all(job.done() for job in [*crawling, ninth]))
    wait_for(lambda: downloads.SLOTS.state() == {"running": 0, "waiting": 0, "sessions": {}})


def test_one_session_holds_at_most_two_download_slots(server, blocks, conll_ner_checkpoint):
    for repo in CRAWLING[:4]:
        server.add_repo(repo, conll_ner_checkpoint)
    server.trickle.add("model.safetensors")
    greedy = session(blocks)
    jobs = [greedy.submit(repo, api_name="/ner_tag_download") for repo in CRAWLING[:3]]
    wait_for(lambda: downloads.SLOTS.state()["waiting"] == 1 and weight_requests(server) == 2)
    state = downloads.SLOTS.state()
    assert state["running"] == 2 and list(state["sessions"].values()) == [2]
    other = session(blocks).submit(CRAWLING[3], api_name="/ner_tag_download")  # passes the capped session's 3rd
    wait_for(lambda: weight_requests(server) == 3)
    state = downloads.SLOTS.state()
    assert state["running"] == 3 and state["waiting"] == 1 and sorted(state["sessions"].values()) == [1, 2]
    assert not any(job.done() for job in [*jobs, other])
    server.release()
    wait_for(lambda: all(job.done() for job in [*jobs, other]))
    wait_for(lambda: downloads.SLOTS.state()["running"] == 0)


def test_masking_reads_a_tokenizer_that_is_here_while_4_masking_downloads_crawl(server, blocks, mlm_folder):
    for repo in CRAWLING[:4]:
        server.add_repo(repo, mlm_folder)
    server.trickle.add("tokenizer.json")
    crawling = [session(blocks).submit(repo, api_name="/mlm_masking_download") for repo in CRAWLING[:4]]
    wait_for(lambda: downloads.SLOTS.state()["running"] == 4
             and sum(path.endswith("/tokenizer.json") for _, path in server.requests) == 4)
    learner = session(blocks)
    learner.submit(str(mlm_folder), api_name="/mlm_masking_download").result(timeout=120)
    shown = learner.submit(str(mlm_folder), "my dog is hairy", 0, 100, api_name="/mlm_masking").result(timeout=120)
    from tokenizers import Tokenizer  # the reference count of candidates: the checkpoint's own tokenizer.json

    reference = Tokenizer.from_file(str(mlm_folder / "tokenizer.json"))
    reference.no_padding()
    pieces = reference.encode("my dog is hairy", add_special_tokens=False)
    assert shown[-1].startswith(f"{len(pieces.tokens)} tokens may be chosen"), shown[-1][:200]
    assert "MiniLM" not in shown[-1]  # its own tokenizer, not the fallback
    assert not any(job.done() for job in crawling)
    # the model step of a crawling one runs on the view's own slots and does not download: the fallback tokenizer
    waiting_one = learner.predict(CRAWLING[0], "my dog is hairy", 0, 100, api_name="/mlm_masking")
    assert "MiniLM" in waiting_one[-1] and not any(job.done() for job in crawling)
    server.release()
    wait_for(lambda: all(job.done() for job in crawling))
    registry.clear_cache()


def test_a_preset_that_downloads_takes_a_slot_of_its_session_too(server, blocks, conll_ner_checkpoint):
    """A preset (or a tab's first open) runs its view's handler directly, which may download its default checkpoint:
    that download waits for the same slots, so a session with 2 downloads running waits, asking nothing of the Hub,
    until one of them ends."""
    from core.loading.checkpoints import CHECKPOINTS

    for repo in [*CRAWLING[:2], CHECKPOINTS["ner"][0]]:
        server.add_repo(repo, conll_ner_checkpoint)
    server.trickle.add("model.safetensors")
    learner = session(blocks)
    clicks = [learner.submit(repo, api_name="/ner_tag_download") for repo in CRAWLING[:2]]
    wait_for(lambda: downloads.SLOTS.state()["running"] == 2 and weight_requests(server) == 2)
    preset = learner.submit("wolfgang-berlin", api_name="/ner_tag_preset")  # dslim/bert-base-NER's download
    wait_for(lambda: downloads.SLOTS.state()["waiting"] == 1)
    assert downloads.SLOTS.state()["sessions"] == {learner.session_hash: 2} and weight_requests(server) == 2
    ner_id = CHECKPOINTS["ner"][0]
    assert not any(ner_id in path for _, path in server.requests)  # nothing asked of the Hub before its slot
    server.release()
    wait_for(lambda: all(job.done() for job in [*clicks, preset]))
    wait_for(lambda: downloads.SLOTS.state() == {"running": 0, "waiting": 0, "sessions": {}})
