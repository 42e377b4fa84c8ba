"""Real-size checkpoints for the load test (issue 56 §1): the BERT views' models at their real shapes with random
weights, written with transformers and served from a local Hub (tests/hub_server.py), so each click costs what it
costs on a Space; nothing of a model's output is made up."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

# The BERT views' checkpoints at their real shapes, random weights. model id ->
# (transformers class, config class, config overrides).
CONLL_LABELS = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]  # dslim/bert-base-NER's
REAL_SIZE = {
    "bert-base-uncased": ("BertForMaskedLM", "BertConfig", {}),
    "distilbert-base-cased-distilled-squad": ("DistilBertForQuestionAnswering", "DistilBertConfig", {}),
    "dslim/bert-base-NER": ("BertForTokenClassification", "BertConfig",
                            dict(id2label=dict(enumerate(CONLL_LABELS)),
                                 label2id={label: i for i, label in enumerate(CONLL_LABELS)})),
    "textattack/bert-base-uncased-MRPC": ("BertForSequenceClassification", "BertConfig", dict(num_labels=2)),
}


def write_real_size(folder: Path, seed: int = 0) -> dict[str, Path]:
    """Write REAL_SIZE's checkpoints under ``folder`` (one sub-folder per id; a folder already written is kept):
    transformers' default configs (bert-base: 12 layers, 768 wide, vocabulary 30,522; DistilBERT: 6 layers, 768 wide),
    random weights seeded by ``seed``, and bert-base-uncased's WordPiece tokenizer (the packaged MiniLM's, as the
    tests' tiny checkpoints use). Returns {model id: folder}."""
    import torch
    import transformers

    from core.loading import resolve
    from core.loading.checkpoints import MINILM_ID

    folders = {}
    for model_id, (model_class, config_class, overrides) in REAL_SIZE.items():
        target = folder / model_id.replace("/", "--")
        if not (target / "done").is_file():
            shutil.rmtree(target, ignore_errors=True)
            torch.manual_seed(seed)
            config = getattr(transformers, config_class)(vocab_size=30522, **overrides)
            getattr(transformers, model_class)(config).eval().save_pretrained(target)
            transformers.BertTokenizerFast.from_pretrained(
                str(resolve.resolve(MINILM_ID).directory)).save_pretrained(target)
            (target / "done").write_text(json.dumps({"class": model_class, "seed": seed}))
        folders[model_id] = target
    return folders


def serve_real_size(folder: Path):
    """A local Hub (tests/hub_server.py) in a thread of this process, serving write_real_size's checkpoints."""
    from tests.hub_server import HubServer

    hub = HubServer()
    for model_id, path in write_real_size(folder).items():
        hub.add_repo(model_id, files={p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.iterdir())
                                      if p.is_file() and p.name != "done"})
    return hub
