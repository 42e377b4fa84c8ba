"""core/why/logit_lens.py against transformers' own hidden_states (output_hidden_states=True) pushed through
transformers' own final LayerNorm and head: GPT2LMHeadModel (tiny random, and the shipped char-GPT) and
BertForMaskedLM loaded from assets/char_bert."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

from core.why import logit_lens


def hf_gpt2_lens(hf, ids: torch.Tensor) -> torch.Tensor:
    out = hf(ids[None], output_hidden_states=True)
    states = torch.stack([h[0, -1] for h in out.hidden_states])  # (L + 1, C); the last one is already ln_f'd
    early = hf.lm_head(hf.transformer.ln_f(states[:-1]))
    return torch.cat([early, hf.lm_head(states[-1:])])  # (L + 1, V)


@torch.no_grad()
def test_gpt_layer_logits_equal_transformers_hidden_states(tiny_gpt2_checkpoint):
    import transformers

    from core.nets.gpt import GPTConfig, from_state_dict
    from core.loading.weights import load_state_dict

    folder = tiny_gpt2_checkpoint("bpe")
    hf = transformers.GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    ours = from_state_dict(GPTConfig.from_dict(json.loads((folder / "config.json").read_text())),
                           load_state_dict(folder / "model.safetensors"))
    ids = torch.tensor([5, 17, 99, 3, 250, 41, 7])
    expected = hf_gpt2_lens(hf, ids)
    got = logit_lens.gpt_layer_logits(ours, ids)
    assert got.shape == (ours.config.n_layer + 1, ours.config.vocab_size)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got[-1], hf(ids[None]).logits[0, -1], rtol=1e-4, atol=1e-5)  # last row = the model


@torch.no_grad()
def test_char_gpt_lens_equals_transformers_on_the_shipped_file(tmp_path):
    import transformers

    from core.transformer import gpt

    shutil.copy(gpt.GPT_ASSETS / "char_gpt.safetensors", tmp_path / "model.safetensors")
    shutil.copy(gpt.GPT_ASSETS / "config.json", tmp_path / "config.json")
    hf = transformers.GPT2LMHeadModel.from_pretrained(str(tmp_path), attn_implementation="eager").eval()
    text = "The weather today is very goo"
    loaded = gpt.load(None)
    ids = torch.tensor(loaded.tokenizer.encode(text).ids)
    logits = hf_gpt2_lens(hf, ids)
    logits[:, loaded.tokenizer.banned] = float("-inf")
    probs = logits.softmax(dim=-1)
    result = logit_lens.gpt_lens(text, top_k=3)
    answer = int(probs[-1].argmax())
    assert result.answer == loaded.tokenizer.piece(answer) == "d"
    assert result.layers == ["0", "1", "2", "3", "4"]
    assert result.answer_probabilities == pytest.approx(probs[:, answer].tolist(), rel=1e-4, abs=1e-7)
    ranks = [int((row > row[answer]).sum()) + 1 for row in probs]
    assert result.answer_ranks == ranks and ranks[-1] == 1
    top = probs.topk(3, dim=-1)
    assert result.top_tokens == [[loaded.tokenizer.piece(int(i)) for i in row] for row in top.indices]
    for row, expected_row in zip(result.top_probabilities, top.values.tolist(), strict=True):
        assert row == pytest.approx(expected_row, rel=1e-4, abs=1e-7)


@torch.no_grad()
def test_char_bert_lens_equals_transformers_bert_for_masked_lm():
    import transformers

    from core.mlm import char as mlm_char

    hf = transformers.BertForMaskedLM.from_pretrained(str(mlm_char.CHAR_BERT_ASSETS), attn_implementation="eager")
    hf.eval()
    text = "The bank of the ___ was muddy."
    loaded = mlm_char.shipped_char_bert()
    prepared = mlm_char.prepare(loaded, text, 1)
    ids, position = torch.tensor([prepared.ids]), prepared.starts[0]
    out = hf(ids, output_hidden_states=True)
    expected = hf.cls(torch.stack([h[0, position] for h in out.hidden_states]))  # transform + decoder, every layer
    torch.testing.assert_close(expected[-1], out.logits[0, position], rtol=1e-4, atol=1e-5)
    got = logit_lens.mlm_layer_logits(loaded.model, ids[0].to(loaded.device), position).cpu()
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)

    result = logit_lens.char_bert_lens(text, top_k=4)
    probs = expected.softmax(dim=-1)
    probs[:, :mlm_char.FIRST_CHAR_ID] = -1.0  # characters only are ranked
    answer = int(probs[-1].argmax())
    assert result.answer == loaded.tokenizer.tokens[answer]
    assert result.layers == ["embeddings", "1", "2", "3", "4"]
    assert result.answer_ranks == [int((row > row[answer]).sum()) + 1 for row in probs]
    assert result.answer_probabilities == pytest.approx(probs[:, answer].tolist(), rel=1e-4, abs=1e-7)
    assert all(token not in mlm_char.SPECIAL_TOKENS for row in result.top_tokens for token in row)
