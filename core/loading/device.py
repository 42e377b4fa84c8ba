"""Pick the torch device once: cuda > mps > cpu.

Override with ``set_device("cpu")`` (the app's ``--device`` flag) or the ``PLM_DEVICE`` environment variable.
Every model in core asks ``get_device()``, so one switch moves the whole app.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported by the first function that needs it: starting the app does not (core/loading/lazy.py)
    import torch

CHOICES = ("auto", "cpu", "cuda", "mps")

_lock = threading.Lock()
_device: torch.device | None = None
_choice: str | None = None  # --device, when it was left to resolve on first use


def _mps_available() -> bool:
    import torch

    mps = getattr(torch.backends, "mps", None)
    return bool(mps and mps.is_available())


def resolve_device(choice: str = "auto") -> torch.device:
    """Turn a choice from CHOICES into an available device; an unavailable explicit choice is an error."""
    import torch

    choice = _checked(choice)
    if choice == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda was asked for, but torch sees no CUDA GPU on this machine")
    if choice == "mps" and not _mps_available():
        raise ValueError("--device mps was asked for, but this torch build or machine has no MPS backend")
    return torch.device(choice)


def _checked(choice: str | None) -> str:
    choice = (choice or "auto").lower()
    if choice not in CHOICES:
        raise ValueError(f"device must be one of {', '.join(CHOICES)}, not {choice!r}")
    return choice


def choose_device(choice: str) -> None:
    """The app's ``--device``: a GPU asked for by name is checked now, so a missing one stops the start with a clear
    message; "auto" and "cpu" are resolved by the first model (which imports torch), not by the start."""
    global _choice, _device
    choice = _checked(choice)
    if choice in ("cuda", "mps"):
        set_device(choice)
        return
    with _lock:
        _choice, _device = choice, None


def set_device(choice: str) -> torch.device:
    """Fix the device for this process (call before models load; loaded models stay where they are)."""
    global _device
    with _lock:
        _device = resolve_device(choice)
        _full_float32(_device)
        return _device


def get_device() -> torch.device:
    """The device every model and tensor in core uses. Picked on first call, then fixed."""
    global _device
    if _device is None:
        with _lock:
            if _device is None:
                _device = resolve_device(_choice or os.environ.get("PLM_DEVICE", "auto"))
                _full_float32(_device)
    return _device


def _full_float32(device: torch.device) -> None:
    """cuDNN runs float32 LSTMs and convolutions in TF32 by default (10-bit mantissa): the LSTM rungs' bits per
    character then differed from the CPU's in the 4th digit on an H100. These models are small; exact float32 is
    worth more here than the speed."""
    if device.type == "cuda":
        import torch

        torch.backends.cudnn.allow_tf32 = False


def device_label() -> str:
    """A short human label for badges: 'cuda (NVIDIA H100)', 'cpu'."""
    device = get_device()
    if device.type == "cuda":
        import torch

        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type


_threads_lock = threading.Lock()
_threads_users = 0
_threads_saved = 1


@contextmanager
def one_cpu_thread(device: torch.device | None = None):
    """Run small CPU work on one intra-op thread: word2vec's batches, the LSTM's step-by-step kernel, the ladder's
    small rungs, the NNLM and fine-tuning runs. Their ops are too small for a second thread to help, which only
    adds a barrier per op; on a busy CPU (a shared machine, a server whose other threads hold the cores) waiting at
    those barriers made a Moby-Dick word2vec run over 10× slower.

    This is the one place in the app that sets torch's thread count (tests/loading/test_thread_count.py holds it to that).
    torch keeps the count per OS thread, and a thread that starts later takes the count last set by any thread. So
    every user sets one thread on entering and, on leaving, puts back in its own thread the count saved by the
    first of the users that overlap. Save/restore helpers of their own, interleaved (A saves 2 and sets 1, B saves
    1, A restores 2, B restores 1), left the whole process on one thread. ``device``: skip when it is not the CPU;
    None means the work runs on the CPU whatever the app's device is."""
    global _threads_users, _threads_saved
    if device is not None and device.type != "cpu":
        yield
        return
    import torch

    with _threads_lock:
        # Reading first also makes torch set up this thread's count now: on a thread's first parallel op it sets it
        # to the last count set anywhere, which would overwrite the 1 set below if that op came later.
        current = torch.get_num_threads()
        if _threads_users == 0:
            _threads_saved = current
        _threads_users += 1
        torch.set_num_threads(1)
    try:
        yield
    finally:
        with _threads_lock:
            _threads_users -= 1
            torch.set_num_threads(_threads_saved)
