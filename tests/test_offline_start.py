"""Start-up without network: `python app.py --offline` serves, and so does `python app.py` with the Hub unreachable.

The network is made unreachable the way a laptop on a train sees it: HF_HUB_OFFLINE is unset (so nothing tells the
app it is offline) and HF_ENDPOINT points at a loopback port where nobody listens, so every Hub connection is refused.

Tests never assert on wall time: how fast the app starts is measured by benchmarks/bench_startup.py. The wait below is
only a hang guard.
"""
from __future__ import annotations

import socket

import pytest

from tests.live_app import AppProcess, app_env, closed_port

HANG_GUARD_S = 300.0  # far beyond any start; a hang fails here instead of blocking the suite


def unreachable_network_env() -> dict[str, str]:
    return app_env(HF_HUB_OFFLINE=None, TRANSFORMERS_OFFLINE=None,
                   HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")


@pytest.mark.slow
@pytest.mark.parametrize("flags", [["--offline"], []], ids=["offline-flag", "no-flag"])
def test_serves_first_request_without_network(flags):
    from gradio_client import Client

    app = AppProcess(*flags, "--device", "cpu", env=unreachable_network_env())
    try:
        app.wait_until_serving(HANG_GUARD_S)  # raises, with the server log, if it never serves
        # The served app works, and says how it sees the network.
        status = Client(app.url, verbose=False).predict(api_name="/app_status")
        assert "network: **offline**" in status if flags else "network:" in status
    finally:
        app.stop()


@pytest.mark.slow
def test_a_model_that_is_not_here_gives_a_clear_message_offline():
    """No network, a checkpoint that is not on disk: the learner reads how to get it, not a traceback."""
    from gradio_client import Client

    app = AppProcess("--offline", "--device", "cpu", env=unreachable_network_env())
    try:
        app.wait_until_serving(HANG_GUARD_S)
        client = Client(app.url, verbose=False)
        notice, *_ = client.predict(model_id="bert-base-uncased", text="my dog is [MASK] .", top_k=5,
                                    api_name="/mlm_fill")
        assert "bert-base-uncased" in notice and "offline" in notice
        assert "hf download bert-base-uncased" in notice  # says how to get it
        assert "Traceback" not in notice
    finally:
        app.stop()


def test_the_unreachable_network_refuses_at_once_and_does_not_say_it_is_offline():
    """The network the start-up tests give the app, checked without starting it (the fast lane's check of this
    module): nothing tells the app it is offline, and its Hub endpoint refuses a connection at once."""
    env = unreachable_network_env()
    assert "HF_HUB_OFFLINE" not in env and "TRANSFORMERS_OFFLINE" not in env
    host, port = env["HF_ENDPOINT"].removeprefix("http://").split(":")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=30).close()
