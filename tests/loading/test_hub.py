"""core/loading/hub.py's failure paths without a network: urllib's urlopen replaced by a stand-in that answers
with chosen bytes or raises, a clock that moves one second per reading, and a cache in tmp_path. The whole
download path against a local Hub is tests/loading/test_resolve.py's."""
import errno
import hashlib
import io
import json
import pathlib
import socket
import threading
import time
import types
import urllib.error

import pytest

from core.loading import hub

COMMIT = "c" * 40


class Body:
    """A response: hands out ``chunks`` one read at a time, then calls ``at_end`` (if any) and ends."""

    def __init__(self, chunks, at_end=None):
        self.chunks, self.at_end, self.reads = list(chunks), at_end, 0

    def read1(self, size):
        self.reads += 1
        if self.chunks:
            return self.chunks.pop(0)
        if self.at_end is not None:
            self.at_end()
            self.at_end = None
        return b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def answers(monkeypatch):
    """urlopen replaced: each call takes the next answer (a Body, or an exception to raise); requests are kept."""
    queue, requests = [], []

    def urlopen(request, timeout=None):
        requests.append((request, timeout))
        answer = queue.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(hub.urllib.request, "urlopen", urlopen)
    monkeypatch.setattr(hub, "_timeout_override", None)
    monkeypatch.delenv("PLM_HUB_TIMEOUT", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.test")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return types.SimpleNamespace(queue=queue, requests=requests)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_the_request_deadline_comes_from_the_environment_unless_one_was_set(monkeypatch):
    monkeypatch.setattr(hub, "_timeout_override", None)
    monkeypatch.delenv("PLM_HUB_TIMEOUT", raising=False)
    assert hub.timeout() == 20.0
    monkeypatch.setenv("PLM_HUB_TIMEOUT", "7.5")
    assert hub.timeout() == 7.5
    monkeypatch.setenv("PLM_HUB_TIMEOUT", "soon")  # not a number: the default
    assert hub.timeout() == 20.0
    hub.set_timeout(3.0)
    assert hub.timeout() == 3.0


def test_persistent_storage_is_left_alone_when_its_folder_cannot_be_made(tmp_path):
    (tmp_path / "huggingface").write_text("a file where the folder would go", encoding="utf-8")
    environ = {"SPACE_ID": "org/space"}
    assert hub.use_persistent_storage(tmp_path, environ) is None
    assert environ == {"SPACE_ID": "org/space"}  # HF_HOME not moved


def _http_error(code):
    return urllib.error.HTTPError("http://hub.test/x", code, "refused", {}, io.BytesIO(b""))


@pytest.mark.parametrize("failure, key, code", [
    (_http_error(404), "registry.hub_not_found", 404), (_http_error(401), "registry.hub_not_found", 401),
    (_http_error(503), "registry.hub_http", 503), (socket.timeout("timed out"), "registry.hub_timeout", None),
    (TimeoutError(), "registry.hub_timeout", None),
    (urllib.error.URLError("refused"), "registry.hub_unreachable", None),
    (ConnectionResetError(), "registry.hub_unreachable", None)])
def test_each_request_failure_becomes_a_hub_error_that_says_which(answers, failure, key, code):
    answers.queue.append(failure)
    with pytest.raises(hub.HubError) as raised:
        hub._request("http://hub.test/api/models/org/tiny", "the listing", "org/tiny")
    assert raised.value.key == key and raised.value.fields["model"] == "org/tiny"
    assert raised.value.fields.get("code") == code
    assert answers.requests[0][1] == 20.0  # the deadline was passed to urlopen


def test_the_token_is_sent_to_the_hub_but_not_to_another_host(answers, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "secret-token")
    answers.queue.extend([Body([]), Body([])])
    hub._request("http://hub.test/org/tiny/resolve/main/config.json", "config.json", "org/tiny")
    hub._request("http://cdn.test/lfs/abc", "model.safetensors", "org/tiny")
    (to_hub, _), (to_cdn, _) = answers.requests
    assert to_hub.get_header("Authorization") == "Bearer secret-token"
    assert to_cdn.get_header("Authorization") is None


@pytest.mark.parametrize("body, key", [(b"<html>not json</html>", "registry.listing_unreadable"),
                                       (b'{"siblings": []}', "registry.listing_unreadable"),
                                       (b'{"sha": "main", "siblings": []}', "registry.listing_no_commit")])
def test_a_listing_that_cannot_be_read_or_names_no_commit_is_refused(answers, body, key):
    answers.queue.append(Body([body]))
    with pytest.raises(hub.HubError) as raised:
        hub.list_repo("org/tiny")
    assert raised.value.key == key
    assert answers.requests[0][0].full_url == "http://hub.test/api/models/org/tiny/revision/main?blobs=true"


def test_a_listing_gives_lfs_sizes_and_hashes(answers):
    siblings = [{"rfilename": "model.safetensors", "size": 135, "lfs": {"sha256": "ab" * 32, "size": 4096}},
                {"rfilename": "config.json", "size": 17}]
    answers.queue.append(Body([json.dumps({"sha": COMMIT, "siblings": siblings}).encode()]))
    listing = hub.list_repo("org/tiny", revision="v1/beta")
    assert listing == hub.RepoListing("org/tiny", COMMIT, {"model.safetensors": 4096, "config.json": 17},
                                      {"model.safetensors": "ab" * 32})
    assert answers.requests[0][0].full_url.endswith("/revision/v1%2Fbeta?blobs=true")


def test_an_answer_over_64_mib_is_refused_after_the_chunk_that_passes_the_limit():
    mib = bytes(1 << 20)
    body = Body([mib] * 100)
    with pytest.raises(hub.HubError) as raised:
        hub._read_all(body, "org/tiny", "the listing")
    assert raised.value.key == "registry.answer_too_large"
    assert body.reads == 65  # 64 chunks are exactly 64 MiB, still allowed; the 65th is one too many


@pytest.fixture
def clock(monkeypatch):
    """Each reading of the clock is one second later than the last."""
    now = [0.0]

    def monotonic():
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(hub, "time", types.SimpleNamespace(monotonic=monotonic))
    monkeypatch.setattr(hub, "RATE_WINDOW_SECONDS", 2.0)
    return now


def test_a_body_above_the_rate_floor_is_read_whole_across_windows(clock):
    chunks = [bytes([i]) * 100_000 for i in range(7)]  # 100 kB a second, twice the floor
    assert list(hub._chunks(Body(chunks), "org/tiny", "model.safetensors")) == chunks
    assert clock[0] == 8.0  # one reading at the start, one after each chunk: the windows were measured throughout


def test_a_body_below_the_rate_floor_is_ended_at_the_end_of_its_first_window(clock):
    got = []
    with pytest.raises(hub.HubError) as raised:
        for chunk in hub._chunks(Body([b"x" * 10_000] * 10), "org/tiny", "model.safetensors"):
            got.append(chunk)
    assert raised.value.key == "registry.too_slow"
    assert len(got) == 2 and raised.value.fields["rate"] == pytest.approx(20_000 / 2 / 1e3)  # kB/s over 2 s


def _listing(data: bytes, sha256: str | None = None) -> hub.RepoListing:
    return hub.RepoListing("org/tiny", COMMIT, {"model.safetensors": len(data)},
                           {"model.safetensors": sha256 or hashlib.sha256(data).hexdigest()})


def test_a_download_that_does_not_match_its_listed_hash_is_refused_and_leaves_nothing(answers, cache):
    data = b"weights" * 100
    answers.queue.append(Body([data]))
    with pytest.raises(hub.HubError) as raised:
        hub.download(_listing(data, sha256=hashlib.sha256(b"other").hexdigest()), "model.safetensors")
    assert raised.value.key == "registry.corrupt"
    folder = hub.repo_folder("org/tiny")
    assert list((folder / "blobs").iterdir()) == [] and not (folder / "snapshots").exists()


def test_a_file_another_process_fetched_meanwhile_is_kept(answers, cache):
    data = b"weights" * 100
    target = hub.repo_folder("org/tiny") / "snapshots" / COMMIT / "model.safetensors"

    def other_process_finished():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    answers.queue.append(Body([data], at_end=other_process_finished))
    assert hub.download(_listing(data), "model.safetensors") == target
    assert target.read_bytes() == data and not target.is_symlink()
    assert (hub.repo_folder("org/tiny") / "blobs" / hashlib.sha256(data).hexdigest()).read_bytes() == data


def test_without_symlinks_the_snapshot_holds_a_copy_of_the_blob(answers, cache, monkeypatch):
    def no_symlinks(self, *args, **kwargs):
        raise OSError(errno.EPERM, "symbolic links are not allowed here")

    monkeypatch.setattr(pathlib.Path, "symlink_to", no_symlinks)
    data = b"weights" * 100
    answers.queue.append(Body([data[:300], data[300:]]))
    done = []
    target = hub.download(_listing(data), "model.safetensors", progress=lambda n, total: done.append((n, total)),
                          done_before=1000, total=2000)
    assert target.read_bytes() == data and not target.is_symlink()
    assert done == [(1300, 2000), (1000 + len(data), 2000)]


def test_a_cache_error_other_than_a_full_disk_is_raised_as_it_is(answers, cache):
    folder = hub.repo_folder("org/tiny")
    folder.mkdir(parents=True)
    (folder / "blobs").write_text("a file where the blobs folder belongs", encoding="utf-8")
    with pytest.raises(OSError) as raised:
        hub.download(_listing(b"weights"), "model.safetensors")
    assert not isinstance(raised.value, hub.HubError) and raised.value.errno == errno.EEXIST
    assert answers.requests == []  # it failed before asking the Hub


def test_the_space_check_reads_the_nearest_existing_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "not" / "yet" / "hub"))
    asked = []

    def disk_usage(folder):
        asked.append(folder)
        return types.SimpleNamespace(total=10**10, used=9 * 10**9, free=10**9)

    monkeypatch.setattr(hub, "shutil", types.SimpleNamespace(disk_usage=disk_usage))
    hub.check_space("org/tiny", 10**9 - 50_000_000)  # exactly fits beside the 50 MB margin
    assert asked == [tmp_path]
    with pytest.raises(hub.HubError) as raised:
        hub.check_space("org/tiny", 10**9 - 50_000_000 + 1)
    assert raised.value.key == "registry.disk_too_small" and raised.value.fields["free"] == 1000.0


def test_the_space_check_lets_the_write_decide_when_the_disk_cannot_be_read(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))

    def disk_usage(folder):
        raise PermissionError(errno.EACCES, "no")

    monkeypatch.setattr(hub, "shutil", types.SimpleNamespace(disk_usage=disk_usage))
    assert hub.check_space("org/tiny", 10**18) is None


@pytest.mark.parametrize("error", [hub.HubError("registry.hub_timeout", model="org/tiny", seconds=1.0, what="x"),
                                   RuntimeError("the disk went away")])
def test_a_failed_download_reaches_everyone_waiting_for_it(error):
    """The owner fails only once a second caller waits on its flight; the waiter gets the same kind of error with
    the same message, as an error of its own."""
    key = f"test-shared-{type(error).__name__}"
    outcome = {}

    def work(report):
        for _ in range(3000):  # at most 30 s
            if hub._inflight[key].listeners:
                raise error
            time.sleep(0.01)
        raise AssertionError("no caller came to wait")

    def owner():
        try:
            hub.shared(key, lambda: None, work)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["owner"] = exc

    thread = threading.Thread(target=owner)
    thread.start()
    for _ in range(3000):
        if key in hub._inflight:
            break
        time.sleep(0.01)
    with pytest.raises(type(error)) as raised:
        hub.shared(key, lambda: None, lambda report: pytest.fail("a waiter must not run the work"),
                   progress=lambda done, total: None)
    thread.join(30)
    assert not thread.is_alive() and outcome["owner"] is error
    assert raised.value is not error and str(raised.value) == str(error)
    if isinstance(error, hub.HubError):
        assert (raised.value.key, raised.value.fields) == (error.key, error.fields)
    assert key not in hub._inflight
