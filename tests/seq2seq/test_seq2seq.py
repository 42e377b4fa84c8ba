"""The encoder–decoder Transformer trained here (issue #52): its pieces against torch's own, the corpus's split, the
shipped model's held-out figures recomputed from its weights, the seed's three translations, and the step-by-step
decoding the view shows (both attentions, the top-k words, teacher forcing beside free decoding)."""
from __future__ import annotations

import json

import pytest
import torch

from core.seq2seq import seq2seq
from core.nets.seq2seq import MultiHeadAttention, Seq2SeqConfig, Transformer
from core.seq2seq.seq2seq import SEQ2SEQ_ASSETS, SourceError

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # 2 threads crawl on a shared, loaded machine
RESULTS = json.loads((SEQ2SEQ_ASSETS / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def corpus():
    return seq2seq.read_corpus()


def test_multi_head_attention_equals_torchs():
    """Q from one sequence, K and V from another (cross-attention), with a padding mask: output and per-head
    probabilities equal torch.nn.MultiheadAttention's with the same weights."""
    torch.manual_seed(0)
    ours = MultiHeadAttention(Seq2SeqConfig(d_model=16, n_head=4)).eval()
    theirs = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    allowed = torch.ones(2, 7, dtype=torch.bool)
    allowed[1, 5:] = False  # padding
    out, probs = ours(x, memory, allowed[:, None, None, :])
    expected, expected_probs = theirs(x, memory, memory, key_padding_mask=~allowed, average_attn_weights=False)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(probs, expected_probs, atol=1e-6, rtol=1e-5)
    assert probs[1, :, :, 5:].abs().max() == 0


@pytest.mark.parametrize("causal", [True, False])
def test_the_decoder_mask_hides_later_target_words(causal):
    """§11.1: with the mask, changing target word 3 leaves the scores of rows 0–2 as they were; without it, not."""
    torch.manual_seed(0)
    model = Transformer(Seq2SeqConfig(20, 20, d_model=16, n_head=2, d_ff=32, causal=causal, dropout=0.0)).eval()
    src = torch.tensor([[5, 6, 7, 8]])
    a, b = torch.tensor([[2, 9, 10, 11, 12]]), torch.tensor([[2, 9, 10, 13, 12]])
    with torch.no_grad():
        out_a, out_b = model(src, a), model(src, b)
    same_before = torch.allclose(out_a.logits[0, :3], out_b.logits[0, :3])
    assert same_before is causal
    upper = torch.ones(5, 5, dtype=torch.bool).triu(1)
    assert bool(out_a.self_attentions[0][0][:, upper].abs().max() == 0) is causal


def test_the_split_never_shows_a_held_out_sentence(corpus):
    train_sources = {src for _, src, _ in corpus["train"]}
    train_targets = {tgt for _, _, tgt in corpus["train"]}
    assert len(corpus["heldout"]) == RESULTS["corpus"]["heldout_pairs"] == 1200
    assert not {src for _, src, _ in corpus["heldout"]} & train_sources
    assert not {tgt for _, _, tgt in corpus["heldout"]} & train_targets
    for source, target in seq2seq.SEED_SENTENCES.items():
        assert (("zh" if source[0] > "z" else "fr"), source, target) in corpus["train"]


@pytest.mark.slow
def test_the_held_out_figures_recomputed_from_the_shipped_weights(corpus):
    model, vocab = seq2seq.shipped()
    figures = seq2seq.evaluate(model, vocab, corpus["heldout"])
    assert figures == RESULTS["heldout"]
    assert figures["exact_match"] > 0.95 and figures["token_accuracy"] > 0.98
    assert (SEQ2SEQ_ASSETS / "model.safetensors").stat().st_size == RESULTS["weights_bytes"] < 3_000_000
    assert model.num_parameters() == RESULTS["parameters"]


def test_the_first_200_held_out_figures_recomputed(corpus):
    model, vocab = seq2seq.shipped()
    assert seq2seq.evaluate(model, vocab, corpus["heldout"][:200]) == RESULTS["heldout_first_200"]


def test_the_held_out_figures_by_hand_on_ten_sentences(corpus):
    """Exact match and token accuracy counted here, word by word, from the model's own free translations."""
    model, vocab = seq2seq.shipped()
    pairs = corpus["heldout"][:10]
    outputs = [seq2seq.translate(src).words for _, src, _ in pairs]
    references = [tgt.split() for _, _, tgt in pairs]
    right = sum(o[i] == r[i] for o, r in zip(outputs, references) for i in range(min(len(o), len(r))))
    figures = seq2seq.evaluate(model, vocab, pairs)
    assert figures["exact_match"] == sum(o == r for o, r in zip(outputs, references)) / 10
    assert figures["token_accuracy"] == right / sum(max(len(o), len(r)) for o, r in zip(outputs, references))


@pytest.mark.parametrize("source, english", [("我爱中国", "I love China"), ("机器学习", "machine learning"),
                                             ("je suis étudiant", "I am a student"),
                                             ("je suis etudiant", "I am a student")])  # §11 spells it without é
def test_the_seeds_sentences_translate_exactly(source, english):
    assert seq2seq.translate(source).text == english


def test_each_step_shows_what_the_decoder_read():
    result = seq2seq.translate("我爱中国", top_k=3)
    assert result.source == ["我", "爱", "中", "国"] and not result.unknown
    assert [step.word for step in result.steps] == ["I", "love", "China", "</s>"]
    for t, step in enumerate(result.steps):
        assert step.prefix[0] == "<s>" and len(step.prefix) == t + 1
        assert step.top[0][0] == step.word  # greedy: the most probable word
        assert [p for _, p in step.top] == sorted((p for _, p in step.top), reverse=True)
        for self_map, cross_map in zip(step.self_attention, step.cross_attention):
            assert self_map.shape == (4, t + 1, t + 1) and cross_map.shape == (4, t + 1, 4)
            torch.testing.assert_close(cross_map.sum(-1), torch.ones(4, t + 1))
            assert self_map.triu(1).abs().max() == 0  # the masked upper triangle
    assert len(result.encoder_attention) == 2 and result.encoder_attention[0].shape == (4, 4, 4)


def test_teacher_forcing_beside_free_decoding():
    forced = seq2seq.teacher_forced("je suis étudiant", "I am a student")
    assert [f.truth for f in forced] == ["I", "am", "a", "student", "</s>"]
    assert [f.prefix[-1] for f in forced] == ["<s>", "I", "am", "a", "student"]
    assert all(f.predicted == f.truth and f.p_truth > 0.9 for f in forced)
    # fed a wrong word, the forced pass still reads the true prefix: it predicts what follows "I am a"
    forced = seq2seq.teacher_forced("je suis étudiant", "I am a teacher")
    assert forced[3].truth == "teacher" and forced[3].predicted == "student" and forced[3].p_truth < 0.1


def test_sampling_settings_reach_the_decoder():
    from core.text.sampling import Settings

    hot = [seq2seq.translate("je suis étudiant", settings=Settings(temperature=3.0, seed=s)).text for s in range(6)]
    assert len(set(hot)) > 1  # at τ = 3 the draws differ with the seed
    assert seq2seq.translate("je suis étudiant", settings=Settings(temperature=3.0, seed=4)).text == hot[4]


def test_french_tokens_case_accents_and_elision():
    vocab = seq2seq.shipped()[1]
    ids, shown, unknown = vocab.encode_source("J'AIME la chine")
    assert shown == ["j'", "aime", "la", "Chine"] and not unknown
    _, shown, unknown = vocab.encode_source("je suis astronaute")
    assert unknown == ["astronaute"] and shown[-1] == "astronaute"
    assert seq2seq.split_source("我爱中国, 他是学生。") == ["我", "爱", "中", "国", "，", "他", "是", "学", "生"]


@pytest.mark.parametrize("text, kind", [("", "empty"), ("   ", "empty"), ("zzz qqq", "unknown"),
                                        ("我" * 61, "too_long")])
def test_sources_it_cannot_read_say_why(text, kind):
    with pytest.raises(SourceError) as refused:
        seq2seq.translate(text)
    assert refused.value.kind == kind


@pytest.mark.slow
def test_the_mask_experiment_direction_on_a_quick_run(corpus):
    """§11.1 in small: the same tiny model, data and seed, trained with and without the decoder's mask. Without it
    the training loss falls lower (the decoder reads the word it is scored on), and free decoding fails."""
    from core.seq2seq.train import TrainSettings, mask_experiment

    vocab = seq2seq.shipped()[1]
    short = [pair for pair in corpus["train"] if len(pair[2].split()) <= 4][:1000]
    heldout = [pair for pair in corpus["heldout"] if len(pair[2].split()) <= 6][:60]
    config = Seq2SeqConfig(len(vocab.source), len(vocab.target), d_model=32, n_head=2, d_ff=64, n_encoder_layers=1,
                           n_decoder_layers=1, dropout=0.0)
    result = mask_experiment(config, vocab, short, heldout, TrainSettings(steps=200, batch_size=32, lr=3e-3, warmup=20))
    masked, unmasked = result["masked"], result["unmasked"]
    assert unmasked["training_loss"] < 0.75 * masked["training_loss"]
    assert masked["heldout"]["token_accuracy"] > unmasked["heldout"]["token_accuracy"] + 0.1


def test_the_context_experiment_direction_from_the_shipped_lstms(corpus):
    """§11.2 from the shipped LSTM encoder–decoders: on held-out sentences of 17+ source tokens the one-vector model
    loses most words while the attention model keeps them; the figures equal results.json's for those bins."""
    from core.seq2seq.compare import by_length, shipped_lstm

    lengths = {src: len(seq2seq.shipped()[1].encode_source(src)[0]) for _, src, _ in corpus["heldout"]}
    short = [p for p in corpus["heldout"] if lengths[p[1]] <= 8][:30]
    long = [p for p in corpus["heldout"] if 17 <= lengths[p[1]] <= 24][:30]
    figures = {}
    for context in ("vector", "attention"):
        model, vocab = shipped_lstm(context)
        rows = by_length(model, vocab, short + long, bins=((1, 8), (17, 24)))
        figures[context] = {tuple(row["bin"]): row["token_accuracy"] for row in rows}
    assert figures["attention"][(17, 24)] > figures["vector"][(17, 24)] + 0.3
    assert figures["vector"][(1, 8)] > figures["vector"][(17, 24)] + 0.2  # C holds up less as sentences grow
    shipped = RESULTS["context_experiment"]
    assert shipped["attention"]["by_length"][2]["token_accuracy"] > shipped["vector"]["by_length"][2]["token_accuracy"]


def test_the_attention_lstm_aligns_each_target_word_to_the_source():
    from core.seq2seq.compare import alignment, shipped_lstm

    model, vocab = shipped_lstm("attention")
    source, words, alpha = alignment(model, vocab, "我爱中国")
    assert source == ["我", "爱", "中", "国"] and words == ["I", "love", "China", "</s>"]
    assert alpha.shape == (4, 4)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(4))


def test_assets_readme_quotes_the_shipped_figures():
    text = (SEQ2SEQ_ASSETS.parent / "README.md").read_text(encoding="utf-8")
    heldout, mask = RESULTS["heldout"], RESULTS["mask_experiment"]
    assert f"exact match {heldout['exact_match'] * 100:.2f}%" in text
    assert f"token accuracy {heldout['token_accuracy'] * 100:.2f}%" in text
    assert f"{RESULTS['parameters']:,} parameters" in text
    assert f"training loss {mask['masked']['training_loss']:.3f} with the mask" in text


# ----------------------------------------------------------------------------------------------------------------
# §11.2's experiment and the saving of its two LSTM models, on a tiny corpus and tiny sizes

TINY_PAIRS = [("zh", "我爱中国", "I love China"), ("zh", "机器学习", "machine learning"),
              ("fr", "je suis étudiant", "I am a student"), ("fr", "je suis heureux", "I am happy"),
              ("zh", "我是学生", "I am a student"), ("fr", "j'aime la chine", "I love China")]


def _lstm_parameters(config) -> int:
    """Counted from the architecture: embeddings, two LSTMs (4 gates: W_ih, W_hh, two biases), W_c, W_out, and
    for the attention model v, W and U (with bias); the one-vector decoder also reads C beside each word."""
    E, H, Vs, Vt = config.embed, config.hidden, config.src_vocab_size, config.tgt_vocab_size

    def lstm(inputs):
        return 4 * H * (inputs + H) + 8 * H

    common = Vs * E + Vt * E + lstm(E) + (2 * H * H + H) + (H * Vt + Vt)
    if config.context == "vector":
        return common + lstm(E + H)
    return common + lstm(E) + (H * H) + (H * H + H) + H


def test_the_context_experiment_trains_both_models_and_scores_them_as_counted_here(one_torch_thread):
    import math

    from core.seq2seq.compare import context_experiment
    from core.seq2seq.train import TrainSettings

    vocab = seq2seq.Vocab.build([(src, tgt) for _, src, tgt in TINY_PAIRS])
    settings = TrainSettings(steps=80, batch_size=6, lr=2e-2, warmup=5)
    out, models = context_experiment(vocab, TINY_PAIRS, TINY_PAIRS, settings, embed=8, hidden=16)
    assert set(out) == set(models) == {"vector", "attention"}
    references = [tgt.split() for _, _, tgt in TINY_PAIRS]
    for context, model in models.items():
        figures = out[context]
        assert figures["config"]["context"] == context and model.config.context == context
        assert (figures["config"]["embed"], figures["config"]["hidden"]) == (8, 16)
        assert figures["parameters"] == _lstm_parameters(model.config)
        assert figures["training_loss"] < 0.5 * math.log(len(vocab.target))  # well under guessing uniformly
        words = [[vocab.target[i] for i in row]
                 for row in seq2seq.greedy_batch(model, [vocab.encode_source(src)[0] for _, src, _ in TINY_PAIRS])]
        exact = sum(w == r for w, r in zip(words, references)) / len(TINY_PAIRS)
        right = sum(a == b for w, r in zip(words, references) for a, b in zip(w, r))
        total = sum(max(len(w), len(r)) for w, r in zip(words, references))
        assert figures["heldout"] == {"sentences": 6, "exact_match": exact, "token_accuracy": right / total}
        assert right / total > 0.5  # it learnt most of the six sentences it was trained on
        assert [row["bin"] for row in figures["by_length"]] == [[1, 8]]  # every source here has 3 to 4 tokens
        assert figures["by_length"][0]["token_accuracy"] == figures["heldout"]["token_accuracy"]


def test_saved_lstms_load_back_through_the_shipped_loader(tmp_path, monkeypatch):
    from core.nets.seq2seq_lstm import LSTMSeq2Seq, LSTMSeq2SeqConfig
    from core.seq2seq import compare

    torch.manual_seed(0)
    models = {c: LSTMSeq2Seq(LSTMSeq2SeqConfig(30, 20, embed=6, hidden=10, context=c)).eval()
              for c in ("vector", "attention")}
    compare.save_lstm(models, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lstm_attention.json", "lstm_attention.safetensors",
                                                          "lstm_vector.json", "lstm_vector.safetensors"]
    monkeypatch.setattr(compare, "SEQ2SEQ_ASSETS", tmp_path)
    src, tgt = torch.tensor([[5, 6, 7, 8]]), torch.tensor([[2, 9, 10]])
    for context, model in models.items():
        loaded, vocab = compare.shipped_lstm.__wrapped__(context)  # past the cache: nothing cached from tmp_path
        assert loaded.config == model.config and not loaded.training
        assert vocab is seq2seq.shipped()[1]
        for name, tensor in model.state_dict().items():
            torch.testing.assert_close(loaded.state_dict()[name], tensor, rtol=0, atol=0)
        with torch.no_grad():
            torch.testing.assert_close(loaded(src, tgt)[0], model(src, tgt)[0])
