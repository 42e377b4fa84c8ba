"""What the built app calls: every event's handler, as wired (app.build_app()), and the views its preset events run.

Shared by tests/server/test_gpu_handler.py (which handlers run a model), tests/test_space_card.py (which checkpoints the
presets name) and the tests that leave the trainers out (``trainers``).
"""
from __future__ import annotations

import functools
import inspect
import types

import app
from demo.kit.presets import View


@functools.lru_cache(maxsize=1)
def built_app():
    return app.build_app()


def layers(fn) -> list:
    """``fn`` and every function it wraps (functools.wraps' ``__wrapped__`` chain), outermost first."""
    chain = [fn]
    while hasattr(chain[-1], "__wrapped__"):
        chain.append(chain[-1].__wrapped__)
    return chain


def views(blocks=None) -> list[View]:
    """Every presets.View of the app: what its tab-open, sub-tab-open, preset, lesson and deep-link events run."""
    registry = (blocks or built_app()).preset_registry
    return [view for entry in registry.tabs.values() for view in entry.views]


def handlers(blocks=None) -> dict[str, list]:
    """name -> the wrapping layers of each handler an event calls: every event's own function, and every view's
    ``fn`` (what its open and preset events run). Two different functions of one name (a closure made per view)
    are told apart by the view's or the event's name."""
    blocks = blocks or built_app()
    named = [(block_fn.api_name, block_fn.fn) for block_fn in blocks.fns.values() if block_fn.fn is not None]
    named += [(view.api_prefix, view.fn) for view in views(blocks)]
    found, seen = {}, set()
    for where, fn in named:
        chain = layers(fn)
        base = getattr(chain[-1], "__func__", chain[-1])
        if base in seen:
            continue
        seen.add(base)
        name = f"{base.__module__}.{base.__qualname__}"
        found[f"{name} ({where})" if name in found or "<locals>" in name else name] = chain
    return found


def trainers(blocks=None) -> set[str]:
    """The api_names of the events that train for up to their work budget: those on the "train" concurrency group
    (demo.server.handlers.TRAIN_QUEUE: one run per session) and those whose handler asks ZeroGPU for a trainer's budget
    (demo.server.handlers.TRAINER_GPU_SECONDS; classify_train bounds its runs in core instead of the queue)."""
    from core.loading import jobs

    blocks = blocks or built_app()
    found = set()
    for block_fn in blocks.fns.values():
        if block_fn.fn is None:
            continue
        budget = any((getattr(layer, "gpu_duration", None) or 0) >= jobs.TRAIN_SECONDS
                     for layer in layers(block_fn.fn))
        if block_fn.concurrency_id == "train" or budget:
            found.add(block_fn.api_name)
    return found


def _codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _ours(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] in ("core", "demo")


# Where every checkpoint a registry call loads becomes a torch module (its classes come from core/loading/families.py's tables,
# which the code does not name).
CHECKPOINT_TO_MODULE = "core.loading.registry.build"


def builds_a_model(fn, seen: set | None = None) -> list[str]:
    """The call path by which ``fn`` reaches a torch.nn.Module of ours (a class it names, or one a function of ours
    that it calls names, or core.loading.registry.build), read from the code: every global name its code uses and every
    function its closure holds (a wrapper's ``fn``), followed through the functions and
    classes of core/ and demo/ it names, and through the attributes it reads of a core/demo module (the UI holds the
    torch-backed ones through core.loading.lazy's stand-ins; a read imports the real module). [] when it reaches none."""
    import torch

    from core.loading.lazy import LazyModule

    seen = set() if seen is None else seen
    fn = getattr(inspect.unwrap(fn), "__func__", inspect.unwrap(fn))
    if not inspect.isfunction(fn) or fn in seen:
        return []
    seen.add(fn)
    if f"{fn.__module__}.{fn.__qualname__}" == CHECKPOINT_TO_MODULE:
        return [fn.__qualname__]
    names = set().union(*(code.co_names for code in _codes(fn.__code__)))
    values = [fn.__globals__.get(name) for name in names]
    for value in values:
        if inspect.isclass(value) and issubclass(value, torch.nn.Module) and _ours(value):
            return [fn.__qualname__, value.__name__]
    callees = [cell.cell_contents for cell in fn.__closure__ or ()
               if inspect.isfunction(cell.cell_contents) and _ours(cell.cell_contents)]
    for value in values:
        if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] in ("core", "demo"):
            module = value._module() if isinstance(value, LazyModule) else value
            for name in names - set(fn.__globals__):  # attributes read (a name that is a global here is that one)
                attr = getattr(module, name, None)
                if inspect.isclass(attr) and issubclass(attr, torch.nn.Module) and _ours(attr):
                    return [fn.__qualname__, attr.__name__]
                if (inspect.isfunction(attr) or inspect.isclass(attr)) and _ours(attr):
                    callees.append(attr)
        elif (inspect.isfunction(value) or inspect.isclass(value)) and _ours(value):
            callees.append(value)
    for callee in callees:
        if getattr(callee, "runs_model", False):  # a handler of its own (demo.server.handlers.gpu_handler): its own GPU call
            continue
        for method in [callee] if inspect.isfunction(callee) else \
                [m for m in vars(callee).values() if inspect.isfunction(m) and m.__name__ in names | {"__init__"}]:
            path = builds_a_model(method, seen)
            if path:
                return [fn.__qualname__, *path]
    return []


def deep_links(blocks=None) -> dict:
    """tab id -> the event a link to ``?tab=<tab id>…`` runs (``<tab>_deep_link``: that tab's views as outputs)."""
    blocks = blocks or built_app()
    return {tab_id: next(fn for fn in blocks.fns.values() if fn.api_name == f"{tab_id}_deep_link")
            for tab_id, entry in blocks.preset_registry.tabs.items() if entry.views}


def follow_link(blocks, search):
    """What opening the link ``search`` (``?tab=…&preset=…``) returns: the handler of its tab's deep-link event, as the
    page's router sends it there (a link to no known tab goes to the first tab's, which ignores it)."""
    from urllib.parse import parse_qsl

    from demo.kit.presets import QUERY_LIMIT

    events = deep_links(blocks)
    search = str(search or "")[:QUERY_LIMIT]  # assets/link_router.js: location.search (with its "?") cut at the limit
    tab = dict(parse_qsl(search.lstrip("?"))).get("tab")
    return events.get(tab, next(iter(events.values()))).fn(search)
