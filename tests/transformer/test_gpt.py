"""core/nets/gpt.py against transformers' GPT2LMHeadModel, the shipped char-GPT, and core/transformer/gpt.py's tab logic."""
from __future__ import annotations

import json
import math
import shutil

import pytest
import torch

from core.loading.weights import load_state_dict
from core.text.errors import ModelUnavailableError, UserInputError
from core.nets.gpt import GPT, GPTConfig, causal_attention, from_state_dict, normalize_state_dict, to_gpt2_state_dict
from core.loading import checkpoints
from core.text.sampling import Settings

TOL = 1e-5

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # two threads on a busy 2-core machine spin-wait badly


def reference(folder):
    import transformers

    return transformers.GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager").eval()


def ours(folder, weights="model.safetensors"):
    config = GPTConfig.from_dict(json.loads((folder / "config.json").read_text()))
    return from_state_dict(config, load_state_dict(folder / weights))


def assert_same_outputs(model: GPT, ref, ids: torch.Tensor) -> None:
    with torch.inference_mode():
        got = model(ids)
        want = ref(ids, output_hidden_states=True, output_attentions=True)
    assert len(got.hidden_states) == len(want.hidden_states) == model.config.n_layer + 1
    assert len(got.attentions) == len(want.attentions) == model.config.n_layer
    torch.testing.assert_close(got.logits, want.logits, atol=TOL, rtol=0)
    for a, b in zip(got.hidden_states, want.hidden_states):
        torch.testing.assert_close(a, b, atol=TOL, rtol=0)
    for a, b in zip(got.attentions, want.attentions):
        torch.testing.assert_close(a, b, atol=TOL, rtol=0)


@pytest.mark.parametrize("tokenizer", ["bpe", "wordpiece"])
def test_parity_with_transformers_on_save_pretrained_checkpoint(tiny_gpt2_checkpoint, tokenizer):
    folder = tiny_gpt2_checkpoint(tokenizer)
    model, ref = ours(folder), reference(folder)
    ids = torch.randint(0, model.config.vocab_size, (2, 23), generator=torch.Generator().manual_seed(1))
    assert_same_outputs(model, ref, ids)


def test_parity_on_original_gpt2_key_layout(tiny_gpt2_checkpoint, tmp_path):
    """GPT-2 as OpenAI's conversion ships it: no 'transformer.' prefix, Conv1D (in, out) weights, the causal-mask
    buffers attn.bias / attn.masked_bias, and a pytorch_model.bin (read with weights_only=True)."""
    folder = tiny_gpt2_checkpoint("bpe", seed=3)
    state = load_state_dict(folder / "model.safetensors")
    n = json.loads((folder / "config.json").read_text())["n_positions"]
    original = {}
    for key, tensor in state.items():
        key = key.removeprefix("transformer.")
        original[key] = tensor
        if key.endswith("attn.c_attn.weight"):
            assert tensor.shape[0] * 3 == tensor.shape[1]  # really Conv1D: (in, 3·out)
            layer = key.removesuffix(".c_attn.weight")
            original[layer + ".bias"] = torch.tril(torch.ones(n, n, dtype=torch.uint8)).view(1, 1, n, n)
            original[layer + ".masked_bias"] = torch.tensor(-1e4)
    torch.save(original, tmp_path / "pytorch_model.bin")
    shutil.copy(folder / "config.json", tmp_path / "config.json")
    model = ours(tmp_path, "pytorch_model.bin")
    ids = torch.randint(0, model.config.vocab_size, (1, 40), generator=torch.Generator().manual_seed(2))
    assert_same_outputs(model, reference(folder), ids)


def test_normalize_state_dict_keys_and_round_trip(tiny_gpt2_checkpoint):
    folder = tiny_gpt2_checkpoint("bpe")
    state = load_state_dict(folder / "model.safetensors")
    assert "lm_head.weight" not in state  # tied, so save_pretrained leaves it out
    normal = normalize_state_dict(state)
    assert normal["lm_head.weight"] is normal["transformer.wte.weight"]
    w = state["transformer.h.0.attn.c_proj.weight"]
    assert torch.equal(normal["transformer.h.0.attn.c_proj.weight"], w.t())  # square: only the name says transpose
    model = ours(folder)
    assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    back = to_gpt2_state_dict(model)
    assert set(back) == set(state)
    for key in state:
        assert torch.equal(back[key], state[key]), key


def test_strict_load_refuses_a_missing_tensor(tiny_gpt2_checkpoint):
    folder = tiny_gpt2_checkpoint("bpe")
    state = load_state_dict(folder / "model.safetensors")
    del state["transformer.h.1.mlp.c_fc.bias"]
    config = GPTConfig.from_dict(json.loads((folder / "config.json").read_text()))
    with pytest.raises(RuntimeError, match="mlp.c_fc.bias"):
        from_state_dict(config, state)


def test_kv_cache_matches_full_forward_and_greedy_generation(tiny_gpt2_checkpoint):
    model = ours(tiny_gpt2_checkpoint("bpe"))
    ids = torch.randint(0, model.config.vocab_size, (2, 12), generator=torch.Generator().manual_seed(4))
    with torch.inference_mode():
        full = model(ids)
        first = model(ids[:, :7])
        rest = model(ids[:, 7:], first.past)
    torch.testing.assert_close(rest.logits, full.logits[:, 7:], atol=TOL, rtol=0)
    torch.testing.assert_close(rest.attentions[1], full.attentions[1][:, :, 7:], atol=TOL, rtol=0)
    # 70 new tokens run past the 64-position context: both paths then slide the window the same way
    cached = model.generate(ids[:, :5], 70, temperature=0)
    uncached = model.generate(ids[:, :5], 70, temperature=0, use_cache=False)
    assert torch.equal(cached, uncached)
    assert cached.shape == (2, 75)


def test_greedy_generation_equals_transformers_generate(tiny_gpt2_checkpoint):
    folder = tiny_gpt2_checkpoint("bpe")
    ids = torch.tensor([[5, 17, 42]])
    want = reference(folder).generate(ids, max_new_tokens=20, do_sample=False, pad_token_id=0)
    assert torch.equal(ours(folder).generate(ids, 20, temperature=0), want)


def test_causal_attention_is_lower_triangular_and_rows_sum_to_one():
    q, k, v = torch.randn(3, 1, 2, 6, 8).unbind(0)
    out, probs = causal_attention(q, k, v)
    assert torch.equal(probs.triu(1), torch.zeros_like(probs))
    torch.testing.assert_close(probs.sum(-1), torch.ones(1, 2, 6))
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(8)
    torch.testing.assert_close(probs[0, 0, 2, :3], scores[0, 0, 2, :3].softmax(-1))
    torch.testing.assert_close(out, probs @ v)


def test_config_refuses_options_it_does_not_implement():
    with pytest.raises(ValueError, match="reorder_and_upcast_attn"):
        GPTConfig.from_dict({"reorder_and_upcast_attn": True})


# ----------------------------------------------------------------------------------------------------------------
# The shipped char-GPT


def test_sliding_window_evaluate_matches_a_position_by_position_forward():
    from core.transformer.gpt import evaluate

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=20, n_positions=16, n_embd=16, n_layer=1, n_head=2)).eval()
    data = torch.randint(0, 20, (200,), generator=torch.Generator().manual_seed(0))
    seq_len, windows, losses = 44, 3, []  # 44: the last stride is a short one
    for w in range(windows):
        x, y = data[w * seq_len:(w + 1) * seq_len], data[w * seq_len + 1:(w + 1) * seq_len + 1]
        for t in range(seq_len):
            # the rule, restated: the first 16 positions read from the window's start; then strides of 8 positions,
            # each read by a forward pass over the 16 positions that end with the stride
            start = 0 if t < 16 else min(8 * ((t - 16) // 8) + 8, seq_len - 16)
            with torch.inference_mode():
                logits = model(x[None, start:t + 1]).logits[0, -1]
            losses.append(torch.nn.functional.cross_entropy(logits, y[t]).item())
    assert evaluate(model, data, seq_len, windows) == pytest.approx(sum(losses) / len(losses), abs=1e-5)


def test_shipped_char_gpt_held_out_loss_is_recomputed_from_the_file():
    from core.text.corpora import load_corpus
    from core.transformer.gpt import GPT_ASSETS, evaluate, load_char_gpt
    from core.recurrent.lstm import RNN_ASSETS, corpus_ids, split_text

    model, vocab, info = load_char_gpt(GPT_ASSETS)
    rnn_tokens = json.loads((RNN_ASSETS / "config.json").read_text(encoding="utf-8"))["tokens"]
    assert vocab.tokens == rnn_tokens  # the very vocabulary of the RNN and LSTM
    held = corpus_ids(split_text(load_corpus("moby_dick"))[1], vocab)
    subset = info["held_out_test_subset"]
    assert evaluate(model, held, subset["seq_len"], subset["windows"]) == pytest.approx(subset["loss_nats"], abs=2e-5)
    assert info["held_out"]["windows"] == 64 and info["held_out"]["seq_len"] == 200  # as core.rnn.evaluate
    assert info["held_out"]["bits_per_char"] == pytest.approx(info["held_out"]["loss_nats"] / math.log(2), abs=1e-3)
    assert (GPT_ASSETS / "char_gpt.safetensors").stat().st_size < 4_000_000


def test_transformers_reads_the_shipped_char_gpt_file_the_same_way(tmp_path):
    """The asset is in GPT-2's own layout: GPT2LMHeadModel loads it and computes the same numbers."""
    from core.transformer.gpt import GPT_ASSETS, load_char_gpt

    shutil.copy(GPT_ASSETS / "char_gpt.safetensors", tmp_path / "model.safetensors")
    shutil.copy(GPT_ASSETS / "config.json", tmp_path / "config.json")
    model, vocab, _ = load_char_gpt(GPT_ASSETS)
    ids = torch.tensor([vocab.encode("Call me Ishmael. Some years ago")[0]])
    assert_same_outputs(model.cpu(), reference(tmp_path), ids)  # compared on the CPU (the app may load it on cuda)


# ----------------------------------------------------------------------------------------------------------------
# core/transformer/gpt.py: what the tab computes


def test_next_token_applies_temperature_and_top_k():
    from core.transformer import gpt

    loaded = gpt.load(checkpoints.CHAR_GPT_ID)
    text = "The White Wha"
    with torch.no_grad():
        ids = torch.tensor([loaded.tokenizer.encode(text).ids], device=loaded.model.lm_head.weight.device)
        logits = loaded.model(ids).logits[0, -1].cpu()
    logits[0] = float("-inf")  # <unk> is never proposed
    result = gpt.next_token(None, text, Settings(0.5, 5))
    kept = (logits / 0.5).topk(5)
    want = kept.values.softmax(-1)
    cut = result.cut
    assert cut.tokens[:5] == [loaded.tokenizer.piece(i) for i in kept.indices.tolist()] and cut.kept_count == 5
    assert list(cut.renormalised[:5]) == pytest.approx(want.tolist(), abs=1e-6) and not cut.renormalised[5:].any()
    assert list(cut.original[:5]) == pytest.approx(logits.softmax(-1)[kept.indices].tolist(), abs=1e-6)
    assert cut.kept_mass == pytest.approx(float((logits / 0.5).softmax(-1)[kept.indices].sum()), abs=1e-6)
    assert cut.tokens[0] == "l" and result.drawn in cut.tokens[:5]  # "Wha" → "Whale"


def test_generation_with_and_without_kv_cache_is_the_same_text():
    from core.transformer import gpt

    cached = gpt.generate(None, "The whale ", 60, Settings(0.8, 10, seed=3))
    uncached = gpt.generate(None, "The whale ", 60, Settings(0.8, 10, seed=3), use_cache=False)
    assert cached == uncached and len(cached) == 60
    assert gpt.generate(None, "The whale ", 60, Settings(0.8, 10, seed=4)) != cached


def test_generation_past_the_context_slides_the_window():
    from core.transformer import gpt

    steps = list(gpt.generate_steps(None, "x" * 100, 60, Settings(1.0)))  # 160 > the 128 context
    assert len(steps) == 60 and all(0 < s.draw.probability <= 1 for s in steps)


def test_attention_maps_are_causal_and_rows_sum_to_one():
    from core.transformer import gpt

    result = gpt.attention_maps(None, "Call me Ishmael.")
    L, H, T, _ = result.maps.shape
    assert (L, H, T) == (gpt.load().model.config.n_layer, gpt.load().model.config.n_head, 16)
    assert torch.equal(result.maps.triu(1), torch.zeros_like(result.maps))
    torch.testing.assert_close(result.maps.sum(-1), torch.ones(L, H, T))


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("  \r\n ", "empty"), ("x" * 129, "at most 128"),
    ("今天天气", "knows none of these characters: '今', '天', '气'"),
])
def test_bad_text_gets_a_clear_message(text, message):
    from core.transformer import gpt

    with pytest.raises(UserInputError, match=message):
        gpt.next_token(None, text)


@pytest.mark.parametrize("temperature", [-1, float("nan"), 10, "warm"])
def test_bad_temperature_gets_a_clear_message(temperature):
    from core.transformer import gpt

    with pytest.raises(UserInputError, match="temperature must be a number from 0"):
        gpt.next_token(None, "Call me", Settings(temperature))


def test_unknown_characters_are_named_and_read_as_unk():
    from core.transformer import gpt

    result = gpt.next_token(None, "Call me 伊什梅尔 Ishmael")
    assert "'伊'" in result.note and "<unk>" in result.note
    assert result.pieces.count("<unk>") == 4


def test_a_gpt2_id_offline_names_the_download():
    from core.transformer import gpt

    with pytest.raises(ModelUnavailableError, match="download distilgpt2"):
        gpt.load("distilgpt2")


def test_a_bert_checkpoint_is_refused_by_name(tiny_checkpoint):
    from core.transformer import gpt

    with pytest.raises(UserInputError, match=r"is a masked LM \(BertForMaskedLM\).*use it in BERT masked LM"):
        gpt.load(str(tiny_checkpoint("BertForMaskedLM")))


def test_gpt2_with_byte_level_bpe_from_a_local_folder(tiny_gpt2_checkpoint):
    """The tokenizer.json path (gpt2, distilgpt2): ids equal the tokenizers library's; probabilities equal
    transformers' softmax of the last position's logits."""
    from tokenizers import Tokenizer

    from core.transformer import gpt

    folder = tiny_gpt2_checkpoint("bpe")
    text = "The weather today is very"
    result = gpt.next_token(str(folder), text, shown=5)
    ids = Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text).ids
    with torch.inference_mode():
        probs = reference(folder)(torch.tensor([ids])).logits[0, -1].softmax(-1)
    top = probs.topk(5)
    assert list(result.cut.renormalised) == pytest.approx(top.values.tolist(), abs=1e-6)
    assert "".join(result.pieces) == text  # byte-level pieces decode back to the text
    assert gpt.load(str(folder)).tokenizer.kind == "byte-level BPE"
    text_out = gpt.generate(str(folder), "The", 5, Settings(1.0))
    assert isinstance(text_out, str)


def test_gpt2_with_a_bert_vocabulary_reads_cls_first(tiny_gpt2_checkpoint):
    """uer/gpt2-chinese-cluecorpussmall's layout: vocab.txt only; the text starts with [CLS], no [SEP]."""
    from core.transformer import gpt

    folder = tiny_gpt2_checkpoint("wordpiece")
    result = gpt.next_token(str(folder), "the weather today is very", shown=3)
    assert result.pieces == ["[CLS]", "the", "weather", "today", "is", "very"]
    assert all(t not in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]") for t in result.cut.tokens)


def test_gpt_vs_bert_offline_runs_the_char_gpt_and_names_the_bert_checkpoint():
    from core.transformer import gpt

    result = gpt.gpt_vs_bert(gpt.PRESETS["en"][0], "gpt2", "bert-base-uncased")
    assert result.left == "The weather today is very "
    assert result.gpt.model_id == checkpoints.CHAR_GPT_ID and "download gpt2" in result.gpt_note
    assert result.bert is None and "bert-base-uncased" in result.bert_note and "download" in result.bert_note
    zh = gpt.gpt_vs_bert(gpt.PRESETS["zh"][0], checkpoints.CHINESE_GPT2_ID, "bert-base-chinese")
    assert zh.left == "今天天气很" and zh.gpt is None and "knows none" in zh.gpt_note
    assert "bert-base-chinese" in zh.bert_note


def test_gpt_vs_bert_with_local_checkpoints(tiny_gpt2_checkpoint, tiny_checkpoint):
    from core.transformer import gpt

    result = gpt.gpt_vs_bert("the weather today is very [MASK] , so we stayed in .", str(tiny_gpt2_checkpoint(
        "wordpiece")), str(tiny_checkpoint("BertForMaskedLM")), top_k=4)
    assert result.gpt.pieces[-1] == "very" and len(result.bert) == 4
    assert sum(p for _, p in result.bert) <= 1 and result.bert == sorted(result.bert, key=lambda c: -c[1])


@pytest.mark.parametrize("text, message", [("no blank here", "exactly one blank"), ("__ and __", "exactly one blank"),
                                           ("__ starts it", "no left context")])
def test_gpt_vs_bert_bad_blanks(text, message):
    from core.transformer import gpt

    with pytest.raises(UserInputError, match=message):
        gpt.gpt_vs_bert(text)


CHINESE_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "，", "。", "今", "天", "气", "很", "好", "差", "我",
                 "们", "不", "得", "取", "消", "户", "外", "运", "动", "的"]


def test_chinese_gpt2_with_a_bert_chinese_vocab(tmp_path):
    """uer/gpt2-chinese-cluecorpussmall's layout (its config.json: model_type gpt2, GPT2LMHeadModel, tokenizer_class
    BertTokenizer, vocab_size 21128; files: vocab.txt, no tokenizer.json): a tiny random GPT2LMHeadModel with a tiny
    Chinese vocab.txt written here. One token per character, [CLS] first; the probabilities equal transformers' on the
    ids transformers' own BertTokenizer gives; a character outside the vocabulary is named."""
    import json

    import transformers

    from core.transformer import gpt

    (tmp_path / "vocab.txt").write_text("\n".join(CHINESE_VOCAB) + "\n", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": False, "tokenize_chinese_chars": True}), encoding="utf-8")
    torch.manual_seed(3)
    config = transformers.GPT2Config(vocab_size=len(CHINESE_VOCAB), n_positions=32, n_embd=16, n_layer=2, n_head=2,
                                     tokenizer_class="BertTokenizer")
    reference_model = transformers.GPT2LMHeadModel(config).eval()
    reference_model.save_pretrained(tmp_path)

    result = gpt.next_token(str(tmp_path), "今天天气很", shown=5)
    assert result.pieces == ["[CLS]", "今", "天", "天", "气", "很"]
    bert = transformers.BertTokenizer(str(tmp_path / "vocab.txt"), do_lower_case=False)
    ids = [bert.cls_token_id] + bert.encode("今天天气很", add_special_tokens=False)
    with torch.inference_mode():
        probs = reference_model(torch.tensor([ids])).logits[0, -1].softmax(-1)
    specials = {bert.convert_tokens_to_ids(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
    expected = sorted(((CHINESE_VOCAB[i], p) for i, p in enumerate(probs.tolist()) if i not in specials),
                      key=lambda c: -c[1])[:5]
    # the candidates never include special tokens; their probabilities are the model's (renormalised without them
    # or not: compare the order and the ratios, which do not depend on the normalisation)
    assert result.cut.tokens == [t for t, _ in expected]
    ratios = [p / result.cut.original[0] for p in result.cut.original]
    assert ratios == pytest.approx([p / expected[0][1] for _, p in expected], rel=1e-4)
    assert gpt.load(str(tmp_path)).tokenizer.kind == "WordPiece"

    rainy = gpt.next_token(str(tmp_path), "今天下雨")
    assert rainy.pieces == ["[CLS]", "今", "天", "[UNK]", "[UNK]"] and "'下', '雨'" in rainy.note
