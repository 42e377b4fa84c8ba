"""Checkpoint weights on disk: shapes from the safetensors headers (nothing allocated), tensors read safely, and
the key/shape comparison with a model. Which files hold the weights (and shard indexes confined to their folder)
is core/loading/weight_files.py's.

Safetensors first. ``pytorch_model.bin`` is read only with ``torch.load(weights_only=True)``, which refuses
pickled code; nothing else is ever unpickled.
"""
from __future__ import annotations

import json
import pickle
import struct
import zipfile
from pathlib import Path

import torch
from torch import nn

from core.text.errors import ModelUnavailableError
from core.loading.weight_files import shard_paths


def weight_shapes(path: Path, model_id: str | None = None) -> dict[str, torch.Size]:
    """Every tensor's shape, from the safetensors headers (nothing allocated); a .bin is memory-mapped."""
    model_id = model_id or path.parent.name
    shapes: dict[str, torch.Size] = {}
    for shard in shard_paths(Path(path), model_id):
        if shard.suffix == ".safetensors":
            try:
                with open(shard, "rb") as f:
                    (length,) = struct.unpack("<Q", f.read(8))
                    if length > 100 << 20:
                        raise ValueError("header too large")
                    header = json.loads(f.read(length))
                shapes.update({k: torch.Size(v["shape"]) for k, v in header.items() if k != "__metadata__"})
            except (OSError, ValueError, struct.error, KeyError, TypeError, AttributeError) as exc:
                raise ModelUnavailableError("registry.not_safetensors", model=model_id, file=shard.name) from exc
        else:
            shapes.update({k: v.shape for k, v in _torch_load(shard, model_id, mmap=True).items()})
    return shapes


def _torch_load(path: Path, model_id: str, mmap: bool = False) -> dict[str, torch.Tensor]:
    # weights_only=True: only tensors and plain containers are accepted; arbitrary pickled code is refused.
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True,
                           mmap=mmap and zipfile.is_zipfile(path))
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError, AttributeError) as exc:
        raise ModelUnavailableError("registry.pickled", model=model_id, file=path.name) from exc
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelUnavailableError("registry.not_state_dict", model=model_id, file=path.name)
    return state


def load_state_dict(path: Path, model_id: str | None = None) -> dict[str, torch.Tensor]:
    """Read weights to CPU tensors: safetensors, a .bin through torch.load(weights_only=True), or a shard index."""
    path = Path(path)
    model_id = model_id or path.parent.name
    state: dict[str, torch.Tensor] = {}
    for shard in shard_paths(path, model_id):
        if shard.suffix == ".safetensors":
            from safetensors.torch import load_file

            state.update(load_file(str(shard), device="cpu"))
        elif shard.suffix == ".bin":
            state.update(_torch_load(shard, model_id))
        else:
            raise ValueError(f"refusing to read weights from {shard.name}: only .safetensors and .bin are supported")
    return state


# ------------------------------------------------------------------------------------------------------------------
# Loading: shapes checked on a meta-device skeleton, then the real model allocated and loaded strictly.


class CheckpointMismatchError(RuntimeError):
    """The checkpoint's tensors do not fit the model: missing or unexpected keys, or wrong shapes."""


def _mismatch(model: nn.Module, shapes: dict[str, torch.Size]) -> tuple[list, list, list, set]:
    expected = model.state_dict()
    tied = {k for k, p in model.named_parameters(remove_duplicate=False)} - {k for k, _ in model.named_parameters()}
    missing = sorted(set(expected) - set(shapes) - tied)
    unexpected = sorted(set(shapes) - set(expected))
    wrong_shape = sorted(f"{k}: file {tuple(shapes[k])} vs model {tuple(expected[k].shape)}"
                         for k in set(shapes) & set(expected) if tuple(shapes[k]) != tuple(expected[k].shape))
    return missing, unexpected, wrong_shape, tied


def raise_if_mismatched(model: nn.Module, shapes: dict[str, torch.Size]) -> set[str]:
    missing, unexpected, wrong_shape, tied = _mismatch(model, shapes)
    if missing or unexpected or wrong_shape:
        raise CheckpointMismatchError(
            f"checkpoint does not fit {type(model).__name__}: missing {missing[:8]}, unexpected {unexpected[:8]}, "
            f"wrong shapes {wrong_shape[:8]}"
        )
    return tied
