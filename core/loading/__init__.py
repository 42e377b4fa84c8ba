"""Loading models: which checkpoint an id names, where its files are, and how it becomes a torch module.

    checkpoints   the ids the app knows, per task, and their defaults
    resolve       an id -> a local folder (local path, installed package, the Hugging Face cache, a Hub download)
    hub           downloads from the Hub, with size caps and one download per repository at a time
    families      config.json -> the family (BERT, GPT-2, ...) and its network class in core/nets/
    registry      ``registry.load(task, id)``: a built model, kept in a bounded cache
    weights       safetensors (or .bin, weights_only) -> a state dict
    weight_files  which weight files a folder holds
    cache         BoundedCache, the one bounded cache class
    device        the torch device and thread count
    lazy          ``lazy_import``: torch-backed modules load on first use, so building the app imports no torch
    paths         where assets/ is
    jobs          training runs' work budgets, one run per browser session

The whole package is shared by every chapter; the chapters (core/ngram/ ... core/seq2seq/) build on it.
"""

__all__ = [
    "checkpoints", "resolve", "hub", "families", "registry", "weights", "weight_files", "cache", "device", "lazy",
    "paths", "jobs",
]
