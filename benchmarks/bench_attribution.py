"""Why this answer: integrated gradients, 32 steps in one batch, on MiniLM-L6 with 64 tokens, against captum's
IntegratedGradients (0.9.0, method="gausslegendre", all steps in one batch, return_convergence_delta=True so that
both compute f(x) − f(x') for the completeness gap).

The answer explained is a fixed direction of the [CLS] vector (f = h_[CLS] · w, w a seeded unit vector): MiniLM as
shipped has no head, and what is timed is the method, not a head. Two references:
- captum on the same f (core/nets' encoder, token embeddings swapped in by the same hook): the method's own cost;
- captum on transformers' BertModel (inputs_embeds, its default SDPA attention): what one would write with captum.
Both must give the same attributions as ours (checked before timing, 1e-4 of the largest).

ratio = ours / reference (below 1 is faster); wall-clock medians, the three alternating.

    python -m benchmarks.bench_attribution [--quick]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import alternating_medians, print_table, row  # noqa: E402
from core.why import attribution  # noqa: E402
from core.loading import registry, resolve  # noqa: E402
from core.loading.checkpoints import MINILM_ID  # noqa: E402
from core.loading.device import get_device  # noqa: E402
from core.nets.bert import BertOnlyEncoder  # noqa: E402

TOKENS = 64
STEPS = 32
TEXT = ("The bank of the river was muddy after the rain, so we walked along the bank to the old bridge and "
        "watched the water rise while the animal did not cross the street because it was too tired to go on "
        "walking in the cold wind of the late autumn evening, and the thinking machines hummed quietly in the hall "
        "next door all night long")


def setup():
    import transformers

    transformers.logging.set_verbosity_error()
    folder = str(resolve.resolve(MINILM_ID).directory)
    device = get_device()
    ours = registry.from_pretrained(MINILM_ID, BertOnlyEncoder, device=device)
    reference = transformers.BertModel.from_pretrained(folder).to(device).eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    ids = tokenizer(TEXT, truncation=True, max_length=TOKENS)["input_ids"]
    assert len(ids) == TOKENS, len(ids)
    ids = torch.tensor(ids, device=device)
    w = torch.nn.functional.normalize(torch.randn(ours.config.hidden_size, generator=torch.Generator().manual_seed(0)),
                                      dim=0).to(device)
    return ours, reference, tokenizer, ids, w


def run(quick: bool = False) -> list[dict]:
    from captum.attr import IntegratedGradients

    ours, reference, tokenizer, ids, w = setup()
    embedding = ours.input_embeddings()

    def score(batch):
        return ours(batch, None, None, output_attentions=False, output_hidden_states=False).last_hidden_state[:, 0] @ w

    f = attribution.embedding_function(embedding, ids, score)
    x = attribution.token_embeddings(embedding, ids)
    keep = torch.tensor([int(i) in (tokenizer.cls_token_id, tokenizer.sep_token_id) for i in ids], device=ids.device)
    baseline = attribution.token_embeddings(embedding, torch.where(keep, ids, tokenizer.pad_token_id))

    def hf_f(embeds):
        return reference(inputs_embeds=embeds).last_hidden_state[:, 0] @ w

    def ours_ig():
        return attribution.attribute(f, x, baseline, [""] * TOKENS, "integrated_gradients", STEPS)

    def captum_same_f():
        return IntegratedGradients(f).attribute(x[None], baselines=baseline[None], n_steps=STEPS,
                                                method="gausslegendre", return_convergence_delta=True)

    def captum_transformers():
        return IntegratedGradients(hf_f).attribute(x[None], baselines=baseline[None], n_steps=STEPS,
                                                   method="gausslegendre", return_convergence_delta=True)

    result = ours_ig()
    for reference_values, _ in (captum_same_f(), captum_transformers()):
        scale = float(reference_values.abs().max())
        assert float((result.values - reference_values[0].cpu()).abs().max()) <= 1e-4 * scale, "attributions differ"
    repeats = 3 if quick else 20
    mine, same, hf = alternating_medians([ours_ig, captum_same_f, captum_transformers], repeats, warmup=2)
    name = f"IG {STEPS} steps, MiniLM-L6, {TOKENS} tokens"
    return [row(f"{name} (vs captum, same f)", mine, same, "s", "≤ 1.0×", target_ratio=1.0),
            row(f"{name} (vs captum on transformers)", mine, hf, "s", "≤ 1.0×", target_ratio=1.0),
            row("  completeness gap / (f(x) − f(x'))", abs(result.gap) / abs(result.score - result.baseline_score),
                None, "", "")]


if __name__ == "__main__":
    print(f"torch threads: {torch.get_num_threads()}, {time.strftime('%H:%M')}", flush=True)
    print_table(run(quick="--quick" in sys.argv))
