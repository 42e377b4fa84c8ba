"""The GPU table: our models against their references on CUDA, fp32 and fp16, same weights, same process.

Runs only where torch sees a CUDA GPU (the app runs every model on ``core.loading.device.get_device()``, so a GPU machine or
Space needs no code change). Rows, each a paired median (ours and the reference alternately, ≥ 20 repeats):

- BERT-base (random weights, 12 × 768): forward, batch 1 and 32, T = 128, against transformers' default (SDPA)
  attention; then with every attention probability returned, against transformers' eager attention (the only
  transformers path that returns them).
- GPT-2 small (random weights, 124M): forward T = 128 with every attention map, against GPT2LMHeadModel asked for
  the same (eager), and against its default (SDPA, no maps).
- The LSTM Gates view (shipped weights, 300 characters, 1 and 4 texts) against nn.LSTM + the same head.
- char-GPT (the shipped assets/gpt weights): 200 characters with the KV cache, our absolute time.
- Agreement: the largest |ours − reference| of the last hidden state, per dtype, so speed never hides a wrong answer.

    python -m benchmarks.gpu_table [--quick] [--out results.md]
"""
from __future__ import annotations

import argparse
import datetime
import sys
import tempfile

import torch

from benchmarks.common import paired_median_seconds, print_table, row

DTYPES = {"fp32": torch.float32, "fp16": torch.float16}


def _sync():
    torch.cuda.synchronize()


def bert_rows(dtype_name: str, repeats: int) -> list[dict]:
    import transformers

    from core.loading import registry
    from core.nets import bert

    dtype, device = DTYPES[dtype_name], torch.device("cuda")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        torch.manual_seed(0)
        transformers.BertModel(transformers.BertConfig()).save_pretrained(folder)
        reference = transformers.BertModel.from_pretrained(folder).to(device=device, dtype=dtype).eval()
        ours = registry.from_pretrained(folder, bert.BertOnlyEncoder, device=device).to(dtype=dtype).eval()
    for batch in (1, 32):
        ids = torch.randint(1000, 30522, (batch, 128), generator=torch.Generator().manual_seed(0)).to(device)
        mask = torch.ones_like(ids)

        def run_ours(attn: bool):
            with torch.inference_mode():
                out = ours(ids, mask, output_attentions=attn)
            _sync()
            return out

        def run_reference(attn: bool):
            with torch.inference_mode():
                out = reference(input_ids=ids, attention_mask=mask, output_attentions=attn)
            _sync()
            return out

        reference.set_attn_implementation("sdpa")
        mine, theirs = paired_median_seconds(lambda: run_ours(False), lambda: run_reference(False), repeats)
        rows.append(row(f"BERT-base forward B={batch} T=128, cuda {dtype_name} (vs SDPA)", mine * 1e3, theirs * 1e3,
                        "ms", "ratio ≤ 1.0", target_ratio=1.0))
        reference.set_attn_implementation("eager")
        mine, theirs = paired_median_seconds(lambda: run_ours(True), lambda: run_reference(True), repeats)
        rows.append(row(f"BERT-base + attention probs B={batch}, cuda {dtype_name} (vs eager)", mine * 1e3,
                        theirs * 1e3, "ms", "ratio ≤ 1.0", target_ratio=1.0))
        gap = (run_ours(True).last_hidden_state.float() - run_reference(True).last_hidden_state.float()).abs().max()
        rows.append(row(f"BERT-base B={batch} {dtype_name}: max |ours - transformers| of last hidden", gap.item(), None,
                        "abs", "agreement (fp32 ~1e-5, fp16 ~1e-2)"))
    return rows


def gpt2_rows(dtype_name: str, repeats: int) -> list[dict]:
    import transformers

    from core.nets.gpt import GPTConfig, from_state_dict

    transformers.logging.set_verbosity_error()
    dtype, device = DTYPES[dtype_name], torch.device("cuda")
    torch.manual_seed(0)
    config = transformers.GPT2Config()
    reference = transformers.GPT2LMHeadModel(config).eval()
    ours = from_state_dict(GPTConfig.from_dict(config.to_dict()), reference.state_dict())
    reference = reference.to(device=device, dtype=dtype)
    ours = ours.to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, 50257, (1, 128), generator=torch.Generator().manual_seed(0)).to(device)

    def run_ours():
        with torch.inference_mode():
            out = ours(ids)
        _sync()
        return out

    def run_reference(maps: bool):
        with torch.inference_mode():
            out = reference(ids, output_attentions=maps, output_hidden_states=maps)
        _sync()
        return out

    rows = []
    reference.set_attn_implementation("eager")
    mine, theirs = paired_median_seconds(run_ours, lambda: run_reference(True), repeats)
    rows.append(row(f"GPT-2 small forward T=128 + maps, cuda {dtype_name} (vs eager)", mine * 1e3, theirs * 1e3, "ms",
                    "ratio ≤ 1.0", target_ratio=1.0))
    gap = (run_ours().logits.float() - run_reference(True).logits.float()).abs().max()
    reference.set_attn_implementation("sdpa")
    mine, theirs = paired_median_seconds(run_ours, lambda: run_reference(False), repeats)
    rows.append(row(f"GPT-2 small forward T=128, cuda {dtype_name} (ours with maps vs SDPA, none)", mine * 1e3,
                    theirs * 1e3, "ms", "informative"))
    rows.append(row(f"GPT-2 small {dtype_name}: max |ours - transformers| of logits", gap.item(), None, "abs",
                    "agreement"))
    return rows


def lstm_gates_rows(repeats: int) -> list[dict]:
    """The RNN & LSTM tab's Gates view on cuda: torch's fused LSTM, then every gate recovered from the saved inputs
    and hidden states (core/nets/recurrent.py), against nn.LSTM + the same head on the same texts."""
    from benchmarks.bench_lstm import torch_twin
    from core.recurrent import lstm

    models = lstm.shipped_models()
    twin = torch_twin(models.lstm)
    texts = [lstm.held_out_text()[k * 400:k * 400 + lstm.MAX_PROMPT_CHARS] for k in range(4)]
    rows = []
    for batch in (1, 4):
        encoded = [models.vocab.encode(text)[0][:lstm.MAX_PROMPT_CHARS] for text in texts[:batch]]
        length = min(map(len, encoded))
        ids = torch.tensor([r[:length] for r in encoded], device="cuda")  # (batch, T)

        def ours():
            with torch.inference_mode():
                models.lstm.forward_fused(ids)
            _sync()

        def reference():
            with torch.inference_mode():
                models.lstm.head(twin(models.lstm.embed(ids))[0])
            _sync()

        mine, theirs = paired_median_seconds(ours, reference, repeats)
        rows.append(row(f"LSTM Gates view, {length} chars x {batch}, cuda fp32 (vs nn.LSTM)", mine * 1e3,
                        theirs * 1e3, "ms", "ratio ≤ 1.5", target_ratio=1.5))
    return rows


def char_gpt_rows(repeats: int) -> list[dict]:
    from benchmarks.common import median_seconds
    from core.transformer import gpt

    gpt.load()
    seconds = median_seconds(lambda: gpt.generate(None, "Call me Ishmael. ", 200, 0.8, seed=0), repeats, warmup=2)
    return [row("char-GPT generate 200 chars, KV cache, cuda fp32", seconds, None, "s", "≤ 0.5 s", target_value=0.5)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="also write the table as Markdown to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("No CUDA GPU: the GPU table needs one (the CPU table is python -m benchmarks.run).")
        return 0
    from core.loading.device import set_device

    set_device("cuda")
    repeats = 5 if args.quick else 30
    rows = []
    for dtype_name in DTYPES:
        rows += bert_rows(dtype_name, repeats)
        rows += gpt2_rows(dtype_name, repeats)
    rows += lstm_gates_rows(repeats)
    rows += char_gpt_rows(repeats)
    header = (f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
              f"{datetime.date.today().isoformat()}, medians of {repeats} alternating repeats")
    print(header)
    print_table(rows)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(f"{header}\n\n| benchmark | ours | reference | ratio | unit | met |\n|---|---|---|---|---|---|\n")
            for r in rows:
                ref = f"{r['reference']:.4g}" if r["reference"] is not None else "-"
                ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
                met = {True: "yes", False: "no"}.get(r["met"], "")
                handle.write(f"| {r['benchmark']} | {r['ours']:.4g} | {ref} | {ratio} | {r['unit']} | {met} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
