"""The hallway of one click: which of our files a QA "Answer" click runs code in, on the server (issue #50 §7).

    python benchmarks/click_path.py             # a tiny BERT QA checkpoint (written by transformers), offline app
    python benchmarks/click_path.py --json out.json

The app runs in a subprocess of this script whose threads all carry a profile hook (``threading.setprofile``, set
before anything is imported). The hook notes the file of every Python function called while a window is open; the
window opens on SIGUSR1 and closes on SIGUSR2, around the click. The click is what the page sends: the download step
(``qa_answer_download``) and then the model step (``qa_answer``), with the checkpoint named in the model box.

Two clicks are measured: the first (the model is loaded: resolve, families, registry, nets) and a second with another
question (the model is in memory; the result cache misses). Files are grouped as the layers of docs/ARCHITECTURE.md:
the chapter (demo/tasks, core/tasks), the loading side (core/loading, core/nets), text (core/text), the kit
(demo/kit), the server (demo/server) and the shell (app.py).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ["What causes precipitation to fall?", "What are the main forms of precipitation?"]
CONTEXT = ("In meteorology, precipitation is any product of the condensation of atmospheric water vapor that falls "
           "under gravity. The main forms of precipitation include drizzle, rain, sleet, snow, graupel and hail.")
LAYERS = [("chapter", ("demo/tasks/", "core/tasks/")), ("loading", ("core/loading/", "core/nets/")),
          ("text", ("core/text/",)), ("kit", ("demo/kit/",)), ("server", ("demo/server/",)), ("shell", ("app.py",))]


def layer(path: str) -> str:
    return next((name for name, prefixes in LAYERS if path.startswith(prefixes)), "other")


# -- the traced app (this file run with --traced) ---------------------------------------------------------------------

def serve_traced(out: str, app_args: list[str]) -> None:
    """Run app.main(app_args) with every thread's calls noted while the window is open (SIGUSR1 … SIGUSR2)."""
    ours, seen, window = str(ROOT) + os.sep, {}, {"open": False}

    def hook(frame, event, arg):
        if window["open"] and event == "call":
            name = frame.f_code.co_filename
            if name.startswith(ours) and name != __file__ and name not in seen:
                seen[name] = frame.f_code.co_name  # the first function the click called there

    def opened(*_):
        seen.clear()
        window["open"] = True

    def closed(*_):
        window["open"] = False
        written = Path(out).with_suffix(".partial")  # renamed when whole: the measuring side waits for the name
        written.write_text(json.dumps({os.path.relpath(k, ROOT): v for k, v in seen.items()}), encoding="utf-8")
        os.replace(written, out)

    signal.signal(signal.SIGUSR1, opened)
    signal.signal(signal.SIGUSR2, closed)
    threading.setprofile(hook)  # every thread started from here on: the server's, the queue's, the workers'
    sys.setprofile(hook)
    sys.path.insert(0, str(ROOT))
    sys.argv = ["app.py", *app_args]
    import app

    app.main(app_args)


# -- the measuring side -----------------------------------------------------------------------------------------------

def tiny_qa_checkpoint(folder: Path) -> str:
    """A 2-layer BERT for extractive QA with random seeded weights and MiniLM's real vocabulary (as tests/conftest.py's
    tiny_checkpoint): its answers mean nothing, but every step of a real checkpoint's path runs."""
    import torch
    import transformers

    from core.loading import resolve
    from core.loading.checkpoints import MINILM_ID

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=37, num_labels=2)
    transformers.BertForQuestionAnswering(config).eval().save_pretrained(folder)
    transformers.BertTokenizerFast.from_pretrained(str(resolve.resolve(MINILM_ID).directory)).save_pretrained(folder)
    return str(folder)


def click(client, model: str, question: str) -> None:
    client.predict(model, api_name="/qa_answer_download")
    client.predict(model, question, CONTEXT, 30, 3, 128, 384, False, api_name="/qa_answer")


def measure() -> dict:
    from gradio_client import Client

    from tests.live_app import free_port

    with tempfile.TemporaryDirectory(prefix="plm-click-path-") as tmp:
        model = tiny_qa_checkpoint(Path(tmp) / "tiny-qa")
        out, port = Path(tmp) / "seen.json", free_port()
        env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1", HF_HOME=str(Path(tmp) / "hf"))
        process = subprocess.Popen([sys.executable, __file__, "--traced", str(out), "--", "--offline", "--device",
                                    "cpu", "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            client = None
            deadline = time.monotonic() + 600
            while client is None:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the traced app did not start")
                try:
                    client = Client(f"http://127.0.0.1:{port}/", verbose=False)
                except Exception:  # not serving yet
                    time.sleep(1)
            runs = {}
            for name, question in zip(("first click (loads the model)", "second click (model in memory)"), QUESTIONS):
                out.unlink(missing_ok=True)
                process.send_signal(signal.SIGUSR1)
                time.sleep(0.5)  # the main thread runs the handler between its sleeps (block_thread: 0.1 s)
                click(client, model, question)
                process.send_signal(signal.SIGUSR2)
                while not out.exists():
                    time.sleep(0.1)
                runs[name] = json.loads(out.read_text(encoding="utf-8"))
            return runs
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)


def report(runs: dict) -> None:
    for name, seen in runs.items():
        by_layer: dict[str, list[str]] = {}
        for path in sorted(seen):
            by_layer.setdefault(layer(path), []).append(path)
        print(f"{name}: {len(seen)} files")
        for kind, _ in LAYERS + [("other", ())]:
            if kind in by_layer:
                print(f"  {kind:8} {len(by_layer[kind]):2}  " + ", ".join(
                    f"{p} ({seen[p]})" for p in by_layer[kind]))


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--traced":
        serve_traced(sys.argv[2], sys.argv[4:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="also write the files of each click to this file")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    runs = measure()
    report(runs)
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
