"""A learner's page as the load test's client: Gradio's queue protocol spoken the way the browser speaks it.

The browser (sse_v3) posts each event to ``queue/join`` and reads the answer from its session's event stream
(``queue/data``), pushed as soon as it is ready, over kept-alive connections. gradio_client, the other client of
benchmarks/load_test.py, opens a new HTTP client and two helper threads per call and polls for messages every 50 ms.
Here all learners share one event loop and one connection pool, and nothing sleeps. (Issue #38: both clients drive
the app to about the same rate, 38.6 and 35.7 calls/s, so the server is what bounds a class.)

    async with httpx.AsyncClient(...) as http:
        api = await Api.fetch(http, url)
        page = Page(http, api)
        answer = await page.predict("ner_tag", text="...", model_id="dslim/bert-base-NER", strategy="first")
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import httpx


class EventFailed(Exception):
    """The server answered the event with an error (or closed the stream without an answer)."""


@dataclass
class Api:
    """What a page knows from the app's config: each named event's id and inputs, and each input's parameter name."""
    url: str
    prefix: str  # "gradio_api/"
    events: dict[str, tuple[int, list[bool]]]  # api_name -> (fn_index, whether each input is a state)
    parameters: dict[str, list[str]]  # api_name -> its parameter names (the inputs that are not states), in order
    defaults: dict[str, dict[str, object]]  # api_name -> {parameter name: its default}

    @classmethod
    async def fetch(cls, http: httpx.AsyncClient, url: str) -> "Api":
        config = (await http.get(url + "config")).raise_for_status().json()
        prefix = config["api_prefix"].strip("/") + "/"
        info = (await http.get(url + prefix + "info")).raise_for_status().json()["named_endpoints"]
        state = {c["id"] for c in config["components"] if c["type"] == "state"}
        events, parameters, defaults = {}, {}, {}
        for dep in config["dependencies"]:
            name = dep.get("api_name")
            if not name:
                continue
            events[name] = (dep["id"], [i in state for i in dep["inputs"]])
            params = info.get(f"/{name}", {}).get("parameters", [])  # undocumented events (downloads): positional
            parameters[name] = [p["parameter_name"] for p in params]
            defaults[name] = {p["parameter_name"]: p.get("parameter_default") for p in params
                              if p.get("parameter_has_default")}
        return cls(url, prefix, events, parameters, defaults)


class Page:
    """One learner's open page: one session, one event at a time (a learner waits for the answer they asked for)."""

    def __init__(self, http: httpx.AsyncClient, api: Api):
        self.http, self.api = http, api
        self.session_hash = uuid.uuid4().hex[:11]

    async def predict(self, api_name: str, *args, **kwargs) -> list:
        """The event's output values, as the browser receives them; EventFailed when it fails."""
        fn_index, is_state = self.api.events[api_name]
        values = {**self.api.defaults[api_name], **kwargs}
        given = iter([*args, *(values.get(name) for name in self.api.parameters[api_name][len(args):])])
        data = [None if state else next(given, None) for state in is_state]
        join = await self.http.post(self.api.url + self.api.prefix + "queue/join",
                                    json={"data": data, "fn_index": fn_index, "session_hash": self.session_hash,
                                          "event_data": None, "trigger_id": None})
        if join.status_code != 200:
            raise EventFailed(f"queue/join answered HTTP {join.status_code}: {join.text[:200]}")
        event_id = join.json()["event_id"]
        async with self.http.stream("GET", self.api.url + self.api.prefix + "queue/data",
                                    params={"session_hash": self.session_hash}) as stream:
            async for line in stream.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("msg") == "close_stream":
                    break
                if message.get("event_id") != event_id or message.get("msg") != "process_completed":
                    continue
                output = message.get("output") or {}
                if not message.get("success", True) or "error" in output:
                    raise EventFailed(str(output.get("error") or message)[:200])
                return output.get("data", [])
        raise EventFailed(f"{api_name}: the stream closed without an answer")
