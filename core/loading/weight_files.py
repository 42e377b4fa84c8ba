"""Which files are a checkpoint's weights: safetensors first, an index standing for a sharded set whose shards must
be plain names inside the index's own folder. No torch: core/loading/resolve.py checks a download with it before any weights
are read; core/loading/weights.py reads them.
"""
from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from core.text.errors import ModelUnavailableError

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_BIN = "pytorch_model.bin"
PYTORCH_BIN_INDEX = "pytorch_model.bin.index.json"
WEIGHT_FILES = (SAFETENSORS, SAFETENSORS_INDEX, PYTORCH_BIN, PYTORCH_BIN_INDEX)  # in order of preference


def find_weights_file(directory: Path, model_id: str | None = None) -> Path:
    """The checkpoint's weights in this folder, safetensors first (an index file stands for a sharded set)."""
    for name in WEIGHT_FILES:
        if (directory / name).is_file():
            return directory / name
    raise ModelUnavailableError("registry.no_weights", model=model_id or directory.name)


def shard_names(index: Path, model_id: str) -> list[str]:
    """The shard files an index names; each must be a plain relative name inside the index's folder."""
    try:
        names = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelUnavailableError("registry.shard_index_unreadable", model=model_id) from exc
    for name in names:
        path = PurePosixPath(name) if isinstance(name, str) else None
        if (path is None or path.is_absolute() or ".." in path.parts or "\\" in name or "\x00" in name
                or not name.endswith((".safetensors", ".bin"))):
            raise ModelUnavailableError("registry.shard_outside", model=model_id)
    return names


def shard_paths(weights: Path, model_id: str) -> list[Path]:
    if weights.name.endswith(".index.json"):
        return [weights.parent / name for name in shard_names(weights, model_id)]
    return [weights]
