"""Start-up without network: `python app.py --offline` serves within 15 s, and without --offline within 20 s.

The network is made unreachable the way a laptop on a train sees it: HF_HUB_OFFLINE is unset (so nothing tells the
app it is offline) and HF_ENDPOINT points at a loopback port where nobody listens, so every Hub connection is refused.

These are the only wall-time assertions in the test suite, on purpose: the start-up bound is a requirement of
issue #10 (a learner must not wait on a dead network), not a performance goal, and the limits are far above the
few seconds a start takes on an idle machine. On a heavily shared machine run them alone (-m slow).
"""
from __future__ import annotations

import pytest

from tests.live_app import AppProcess, app_env, closed_port

OFFLINE_LIMIT_S = 15.0  # issue #10: `python app.py --offline` serves its first request within 15 s
ONLINE_LIMIT_S = 20.0  # issue #10: without --offline it still starts within 20 s

pytestmark = pytest.mark.slow


def unreachable_network_env() -> dict[str, str]:
    return app_env(HF_HUB_OFFLINE=None, TRANSFORMERS_OFFLINE=None,
                   HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")


@pytest.mark.parametrize("flags, limit", [(["--offline"], OFFLINE_LIMIT_S), ([], ONLINE_LIMIT_S)],
                         ids=["offline-flag", "no-flag"])
def test_serves_first_request_without_network(flags, limit):
    from gradio_client import Client

    app = AppProcess(*flags, "--device", "cpu", env=unreachable_network_env())
    try:
        seconds = app.wait_until_serving(limit)  # raises, with the server log, past the limit
        assert seconds < limit
        # The served app works, and says how it sees the network.
        status = Client(app.url, verbose=False).predict(api_name="/app_status")
        assert "network: **offline**" in status if flags else "network:" in status
    finally:
        app.stop()


def test_a_model_that_is_not_here_gives_a_clear_message_offline():
    """No network, a checkpoint that is not on disk: the learner reads how to get it, not a traceback."""
    from gradio_client import Client

    app = AppProcess("--offline", "--device", "cpu", env=unreachable_network_env())
    try:
        app.wait_until_serving(300)  # a hang guard only
        client = Client(app.url, verbose=False)
        notice, *_ = client.predict(model_id="bert-base-uncased", text="my dog is [MASK] .", top_k=5,
                                    api_name="/mlm_fill")
        assert "bert-base-uncased" in notice and "offline" in notice
        assert "huggingface-cli download bert-base-uncased" in notice  # says how to get it
        assert "Traceback" not in notice
    finally:
        app.stop()
