"""A stand-in for Hugging Face's ``spaces`` package, for tests/test_space_simulated.py: put this folder first on
PYTHONPATH of an app started with SPACE_ID and SPACES_ZERO_GPU set, and ``import spaces`` finds it.

Like the real ``spaces.GPU`` on ZeroGPU (spaces/zero/wrappers.py), a decorated call runs elsewhere: the real one in a
forked worker process, this one in a thread of its own with none of the caller's context variables (the caller's
language, Gradio's request), and its arguments and result must pickle, as the real one sends them between
processes (a generator's steps are collected inside the call and handed back after it). Every call's start and end
(with the module forwards it ran) is written as one JSON line to the file named by PLM_TEST_GPU_LOG. A torch
module's forward outside a GPU call is refused (RuntimeError) and logged: on ZeroGPU there is no GPU outside one.
"""
from __future__ import annotations

import contextvars
import functools
import inspect
import itertools
import json
import os
import pickle
import queue
import threading
import time

import torch

_LOG = os.environ["PLM_TEST_GPU_LOG"]
_lock = threading.Lock()
_inside = threading.local()  # .call: the id of the GPU call this thread runs, if any
_ids = itertools.count(1)
_forwards: dict[int, int] = {}  # call id -> forwards counted so far


def _write(**record) -> None:
    with _lock, open(_LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")


def _check_forward(module, args):
    call = getattr(_inside, "call", None)
    if call is None:
        _write(kind="forward_outside", module=type(module).__name__, thread=threading.current_thread().name)
        raise RuntimeError(f"{type(module).__name__}.forward outside a GPU call")
    with _lock:
        _forwards[call] += 1


torch.nn.modules.module.register_module_forward_pre_hook(_check_forward)


def _pickled(what: str, name: str, value) -> None:
    try:
        pickle.dumps(value)
    except Exception as exc:  # noqa: BLE001 - reported, then raised as the real worker would
        _write(kind="unpicklable", what=what, fn=name, error=f"{type(exc).__name__}: {exc}"[:300])
        raise


def _in_gpu_thread(name: str, duration, run):
    """run() in a new thread with an empty context, as one GPU call; its result or exception comes back."""
    call = next(_ids)
    with _lock:
        _forwards[call] = 0
    _write(kind="start", call=call, fn=name, duration=duration, at=time.monotonic())
    outcome: dict = {}

    def thread() -> None:
        _inside.call = call
        try:
            outcome["value"] = run()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            outcome["error"] = exc

    worker = threading.Thread(target=contextvars.Context().run, args=(thread,), name=f"gpu-call-{call}")
    worker.start()
    worker.join()
    with _lock:
        forwards = _forwards.pop(call)
    _write(kind="end", call=call, fn=name, forwards=forwards, error=type(outcome.get("error")).__name__
           if "error" in outcome else None, at=time.monotonic())
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def GPU(task=None, *, duration=None, size=None):  # noqa: N802 - the real package's name
    if task is None:
        return functools.partial(GPU, duration=duration, size=size)
    name = f"{task.__module__}.{task.__qualname__}"
    if duration is not None and not isinstance(duration, (int, float)):
        raise TypeError("this stand-in takes a number of seconds as duration")

    if inspect.isgeneratorfunction(task):
        @functools.wraps(task)
        def steps(*args, **kwargs):
            _pickled("arguments", name, (args, kwargs))
            items = _in_gpu_thread(name, duration, lambda: list(task(*args, **kwargs)))
            for item in items:
                _pickled("result", name, item)
                yield item
        return steps

    @functools.wraps(task)
    def call(*args, **kwargs):
        _pickled("arguments", name, (args, kwargs))
        result = _in_gpu_thread(name, duration, lambda: task(*args, **kwargs))
        _pickled("result", name, result)
        return result
    return call
