"""PLM Explorer: from n-grams to BERT, one live model per tab.

    python app.py                      # http://127.0.0.1:7860
    python app.py --offline            # never touch the network (bundled models only)
    python app.py --device cpu --port 8000 --host 0.0.0.0
    python app.py --max-model-gb 4 --models-dir ~/checkpoints   # larger models; folders visitors may open
"""
from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import threading
import time

# No usage analytics or telemetry calls: the app must run with the network unreachable.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# Gradio rebuilds a pandas summary of up to 10,000 past events after *every* event (its monitoring page); under
# load that was ~7% of the server's CPU (py-spy), so refresh it every 1,000 events instead.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
# numpy's OpenBLAS splits every matrix product over one thread per core, even a (4, 512) @ (512, 512) one. With many
# learners' requests at once those threads fight for the cores: the multi-head view's products took 13-35 ms instead
# of 0.7 ms, and its click 68 ms of server CPU instead of 25 (benchmarks/README.md, issue #38). Requests already run
# side by side, so each product keeps to one thread. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

TRIM_SECONDS = 5.0  # how often the server returns freed heap pages (return_freed_memory)


def _glibc():
    """The C library as ctypes sees it on Linux, or None (another OS, or no libc to load)."""
    import ctypes
    import ctypes.util

    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def steady_malloc(mmap_threshold: int = 1 << 20, arenas: int = 2) -> bool:
    """Keep RSS flat under many users (glibc only; elsewhere a no-op).

    glibc raises its mmap threshold after big buffers are freed, so later big buffers (attention maps, masking
    chunks, figure JSON) come from the heap, where freed space is fragmented and never returned; and it keeps up to
    8 arenas per core. A fixed 1 MB threshold sends big buffers to mmap (returned to the OS on free), and 2 arenas
    bound the rest. benchmarks/soak.py, 8 users × 5 min: +318 MB over the first minute's RSS before, flat after."""
    libc = _glibc()
    if libc is None:
        return False
    try:
        M_MMAP_THRESHOLD, M_ARENA_MAX = -3, -8  # from <malloc.h>
        return bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(libc.mallopt(M_ARENA_MAX, arenas))
    except AttributeError:  # a libc without mallopt
        return False


def heap_trimmer():
    """glibc's ``malloc_trim``: called with 0, it hands every free page of the heap back to the OS. None elsewhere."""
    return getattr(_glibc(), "malloc_trim", None)  # musl has no malloc_trim


def return_freed_memory(every_seconds: float = TRIM_SECONDS) -> threading.Thread | None:
    """Every ``every_seconds``, hand the heap's free pages back to the OS (a daemon thread; None without glibc).

    Buffers under the 1 MB mmap threshold (steady_malloc) come from the heap, and a page freed between live buffers
    stays in RSS until something reuses it. Under the soak, trimming every 5 s lowered RSS after minute 1 by 26 MB
    (mean and peak) and by 75 MB once the users stopped (benchmarks/README.md, issue #38, sixth round). ctypes releases
    the interpreter lock for the call, so requests keep running while it trims."""
    malloc_trim = heap_trimmer()
    if malloc_trim is None:
        return None

    def trim() -> None:
        while True:
            time.sleep(every_seconds)
            malloc_trim(0)

    thread = threading.Thread(target=trim, name="return-freed-memory", daemon=True)
    thread.start()
    return thread


def settle_collector() -> None:
    """Once the app is built, if the start turned the collector off: move every object made so far out of its
    reach (``gc.freeze``: they live as long as the server) and turn it back on."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


PERSISTENT_HF_HOME = None  # where prepare_process moved the Hugging Face cache, if it did


def prepare_process() -> None:
    """What the app's own process sets up before torch and Gradio load. Run as the app, app.py calls it first thing
    (just below); a test or a tool that imports this module keeps its process as it was (tests/test_app.py).

    - The cyclic collector is off until the app is built (settle_collector). A start allocates ~400,000 objects
      (Gradio, plotly, ~1,000 blocks) and makes almost no garbage, yet the collector ran ~1,000 times during it,
      each time walking what was already there: a start to its first answer took 7.3 CPU s instead of 9.3 on a slow
      2-core VM (benchmarks/README.md, start-up).
    - glibc's malloc keeps RSS flat under many users (steady_malloc), before torch and Gradio allocate anything.
    - On a Space with persistent storage (/data), the Hugging Face cache moves there (unless the operator set
      HF_HOME), so downloads survive a restart; the preloaded checkpoints (``preload_from_hub``) are still read from
      the image's own cache. Before Gradio imports huggingface_hub, which reads HF_HOME once, at import."""
    global PERSISTENT_HF_HOME
    gc.disable()
    steady_malloc()
    from core.loading.hub import use_persistent_storage

    PERSISTENT_HF_HOME = use_persistent_storage()


if __name__ == "__main__":
    prepare_process()

import gradio as gr  # noqa: E402

# the first of our modules: on a ZeroGPU Space it imports `spaces` before anything imports torch (gpu_handler)
from demo.server.handlers import loaded_models  # noqa: E402

from core.loading import resolve  # noqa: E402
from core.loading.device import CHOICES as DEVICE_CHOICES, choose_device, device_label
from core.text.limits import MAX_UPLOAD_BYTES
from demo.kit import classroom, teacher
from demo.attention import attention
from demo.tasks import classify
from demo.server import downloads
from demo.embeddings import embeddings
from demo.kit import figure_head, presets, reconnect, tour, your_turn
from core.text.i18n import language_of
from demo.kit.i18n import I18N, LABELLED, LANGUAGES, TOGGLE_JS, label, text, toast_head
from demo.ladder import overview
from demo.mlm import mlm
from demo.ngram import ngram
from demo.recurrent import lstm
from demo.server import first_page, gradio_inside, serving
from demo.tasks import classify, ner, qa
from demo.transformer import transformer

# The overview first (timeline and ladder), then the history in order: statistics → static vectors → recurrence →
# attention → the Transformer and GPT → BERT and its tasks.
TABS = [overview, ngram, embeddings, lstm, attention, transformer, mlm, ner, qa, classify]

LANGUAGE_CHOICES = ["English", "中文"]

# System fonts only: a Google-hosted font would make every page load reach out to the internet.
THEME = gr.themes.Soft(primary_hue="blue", neutral_hue="slate",
                       font=["Inter", "Noto Sans", "ui-sans-serif", "system-ui", "sans-serif"],
                       font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "monospace"]).set(
    # WCAG AA text contrast, 4.5:1 at least (issue #37, axe-core's color-contrast): Soft's blue-500 labels and
    # buttons (3.0-3.7:1) and slate-400 hints (2.5:1) are one to three shades too light.
    block_label_text_color="*primary_700", block_title_text_color="*primary_700",
    button_primary_background_fill="*primary_700", button_primary_background_fill_hover="*primary_800",
    checkbox_label_background_fill_selected="*primary_700", body_text_color_subdued="*neutral_600",
    body_text_color_subdued_dark="*neutral_300", color_accent="*primary_700")
CSS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets", "style.css")


def tab_id(module) -> str:
    """A tab's id in URLs (?tab=attention) and gr.Tabs: its demo module's name."""
    return module.__name__.rsplit(".", 1)[-1]


def network_word(lang: str) -> str:
    return text("app.offline" if resolve.is_offline() else "app.online", lang)


def app_status(request: gr.Request = None) -> str:
    """Where models run and which checkpoints this process has loaded (and from where)."""
    lang = language_of(request)
    lines = [text("app.status_device", lang, device=device_label()),
             text("app.status_network", lang, network=network_word(lang))]
    lines = [f"- {line}" for line in lines]
    lines += [f"- {badge}" for badge in loaded_models()] or [f"- {text('app.status_no_model', lang)}"]
    return "\n".join(lines)


def page_language(request: gr.Request = None) -> tuple[str, str, str]:
    """On page load: the header in the learner's language, and the toggle showing that language."""
    lang = language_of(request)
    badge = text("app.badge", lang, device=device_label(), network=network_word(lang))
    return text("app.intro", lang), f"<span class='badge'>{badge}</span>", LANGUAGE_CHOICES[lang == "zh"]


def build_app(per_address: int = serving.MAX_EVENTS_PER_ADDRESS) -> gr.Blocks:
    """The whole UI: one gr.Tab per demo module. Importing this builds nothing; call it. ``per_address``: the
    events one client address may have waiting or running (demo/server/serving.py, admit)."""
    downloads.install_gate()  # every download in this app waits for a slot (demo/server/downloads.py)
    gradio_inside.remember_signatures()  # before the first config is built (demo/server/gradio_inside.py)
    gradio_inside.remember_data_schemas()
    # delete_cache: uploads and generated files are removed once an hour old (checked every 10 minutes).
    with gr.Blocks(title="PLM Explorer", delete_cache=serving.DELETE_CACHE) as app:
        # A slow tab (BERT on CPU) must not starve the quick ones: each event gets its own small concurrency
        # budget, and the queue bounds how much work can pile up; admission caps each address at 16 and each session
        # at 8 waiting events, so one client cannot fill the queue; serving turns malformed API calls into short
        # messages. Set before any component exists: queue() rebuilds Gradio's app and its config (0.39 s with the
        # ~1,000 blocks in a profile of the start, 0.11 s before them).
        app.queue(default_concurrency_limit=4, max_size=serving.QUEUE_MAX_SIZE)
        with gr.Row(equal_height=True):
            with gr.Column(scale=5):
                intro = gr.Markdown(text("app.intro"))
                badge = gr.Markdown()
                tour_box = tour.build()  # "Start the guided tour"; the tour's panel (demo/kit/tour.py)
            language = gr.Radio(LANGUAGE_CHOICES, value=None, label=label("app.language"), scale=1, min_width=160)
        # The toggle stores the choice (cookie + localStorage) and reloads, so labels and results switch together.
        language.input(None, inputs=language, js=TOGGLE_JS, api_name=False)  # browser-only: no server endpoint
        app.load(page_language, outputs=[intro, badge, language], api_name="app_language")
        classroom.build()  # the "Class" area: start a class, or a student's banner (issue #55)
        collector = presets.Registry(TABS)
        with gr.Tabs(overflow_behavior="wrap") as tabs:
            for module in TABS:
                with gr.Tab(label(f"tabs.{tab_id(module)}"), id=tab_id(module)) as tab, \
                        collector.tab(tab_id(module), tab):
                    module.build()
                    your_turn.build(tab_id(module))  # "Your turn": predict, then the live model answers (issue #51)
        # Tab bars wrap onto a second line instead of folding tabs into a "⋯" menu: on a phone each tab and sub-tab
        # is one tap (issue #31).
        # Content on first open: each tab computes its default preset when selected; ?tab=…&preset=… deep-links.
        collector.wire(app, tabs)
        tour.wire(tour_box, collector)  # each stop checked against the tabs, and what it outlines tagged
        teacher.wire(collector, tour_box, app)  # "Add to slides" and "Link to this view" in every preset bar (issue #54)
        your_turn.register_api()  # checks_list, check_setup, check_answer: for gradio_client and the page alike
        with gr.Accordion(label("app.status_title"), open=False):
            status = gr.Markdown()
            gr.Button(label("app.status_refresh"), size="sm").click(app_status, outputs=status, api_name="app_status")
    # The Overview's words as the page's own HTML, readable before Gradio has drawn it (demo/server/first_page.py)
    app.first_page = {lang: overview.first_page(lang, TABS) for lang in LANGUAGES}
    return serving.serve(app, per_address)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="interface to bind (0.0.0.0 to serve the network)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)))
    parser.add_argument("--offline", action="store_true",
                        help="never touch the network: bundled and cached models only")
    parser.add_argument("--device", choices=DEVICE_CHOICES, default=os.environ.get("PLM_DEVICE", "auto"),
                        help="where models run (default: cuda > mps > cpu)")
    parser.add_argument("--share", action="store_true", help="create a public gradio.live link (off by default)")
    parser.add_argument("--max-model-gb", type=float, default=2.0,
                        help="refuse checkpoints whose download or fp32 parameters exceed this (default 2 GB)")
    parser.add_argument("--cache-models", type=int, default=8, help="models kept loaded at once (default 8)")
    parser.add_argument("--cache-gb", type=float, default=3.0, help="memory for loaded models (default 3 GB)")
    parser.add_argument("--models-dir", default=None,
                        help="a folder whose sub-folders may be typed as model ids, even on a public host")
    parser.add_argument("--allow-local-models", action="store_true",
                        help="accept any server folder as a model id on a public host (on a loopback host, and "
                             "without a SPACE_ID, they are accepted anyway)")
    parser.add_argument("--max-events-per-address", type=int,
                        default=int(os.environ.get("PLM_MAX_EVENTS_PER_ADDRESS", serving.MAX_EVENTS_PER_ADDRESS)),
                        help="events one client address may have waiting or running; beyond it HTTP 429 (default "
                             f"{serving.MAX_EVENTS_PER_ADDRESS}; raise it for a class behind one NAT address)")
    parser.add_argument("--root-path", default=os.environ.get("GRADIO_ROOT_PATH", ""),
                        help="the sub-path a reverse proxy serves the app under, e.g. /plm (docs/DEPLOY.md: nginx)")
    parser.add_argument("--trusted-proxy", default=os.environ.get("PLM_TRUSTED_PROXY", ""),
                        help="comma-separated addresses of reverse proxies whose X-Forwarded-For is believed "
                             "(e.g. 127.0.0.1 behind a local nginx); without it the header is ignored")
    parser.add_argument("--class-db", default=os.environ.get("PLM_CLASS_DB"),
                        help="where classes and their predictions are kept: a SQLite file or a database URL "
                             "(postgresql://…); default: /data on a Space with persistent storage, else "
                             "~/.local/share/plm-explorer/classes.sqlite")
    return parser.parse_args(argv)


def configure_registry(args: argparse.Namespace) -> None:
    """The registry's flags: size cap, model cache bounds, and which local folders visitors may open."""
    resolve.configure(host=args.host, max_model_gb=args.max_model_gb, cache_models=args.cache_models,
                       cache_gb=args.cache_gb, models_dir=args.models_dir,
                       allow_local_models=args.allow_local_models)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if PERSISTENT_HF_HOME is not None:
        logging.getLogger("plm_explorer").info("Hugging Face cache on persistent storage: %s", PERSISTENT_HF_HOME)
    if args.offline:
        resolve.set_offline(True)
    configure_registry(args)
    choose_device(args.device)
    serving.trust_proxies(args.trusted_proxy)  # read by uvicorn when launch() builds the server
    return_freed_memory()
    classroom.configure(args.class_db)  # opens and migrates the class store, deletes expired classes
    app = build_app(args.max_events_per_address)
    settle_collector()
    app.launch(
        server_name=args.host,
        server_port=args.port,
        root_path=args.root_path.rstrip("/"),  # behind a proxy's sub-path: the page asks for /plm/config, …
        share=args.share,
        theme=THEME,
        css_paths=[CSS_PATH],
        # each page carries its learner's table only, the keys of the app's labels only (demo/server/first_page.py)
        i18n=first_page.one_language(I18N, LABELLED),
        # every figure: SVG export, a Data table, keyboard, dark mode (demo/kit/figure_head.py); the "Your turn" checks
        # classroom's before your_turn's: it reads the fragment; reconnect: a server gone away (demo/kit/reconnect.py);
        # Gradio's toasts' kind in the page's language (demo/kit/i18n.py toast_head)
        head=figure_head.HEAD + classroom.head() + your_turn.head() + reconnect.head() + teacher.head() + toast_head(),
        # compressed answers, the page in the learner's language (demo/server/first_page.py), a call to no endpoint
        # answered 404 and a malformed body or an upload too big in the learner's words (serving.KnownCalls,
        # serving.REFUSALS); the "Your turn" script at its own address (fetched once, then cached)
        app_kwargs={"middleware": [*first_page.middleware(app.first_page), serving.known_calls(app)],
                    "exception_handlers": serving.REFUSALS,
                    "routes": [your_turn.ROUTE, *classroom.ROUTES, *teacher.ROUTES]},
        max_file_size=MAX_UPLOAD_BYTES,
        show_error=True,
    )


if __name__ == "__main__":
    main()
