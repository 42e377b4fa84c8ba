"""RoBERTa (core/nets/roberta.py, its Family in core/loading/families.py): tiny random checkpoints written by transformers
(the test-only reference) with a byte-level BPE tokenizer trained here, served by the local Hub under Hub ids and
loaded through the registry like any checkpoint. Logits, hidden states and attention probabilities equal
transformers' on a batch with left padding (positions skip pads), and the tabs' own code (fill-mask, classification,
the Transformer tab's walk, NER, QA) runs on it unchanged."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from core.tasks import classify, ner, qa
from core.mlm import mlm
from core.loading import registry
from core.transformer import transformer
from core.nets import roberta
from tests.conftest import TINY_BPE_TEXTS

ATOL = 1e-5
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0..4, as roberta-base numbers them
HEADS = {"mlm": "RobertaForMaskedLM", "ner": "RobertaForTokenClassification", "qa": "RobertaForQuestionAnswering",
         "classify": "RobertaForSequenceClassification"}
OURS = {"mlm": roberta.RobertaForMaskedLM, "ner": roberta.RobertaForTokenClassification,
        "qa": roberta.RobertaForQuestionAnswering, "classify": roberta.RobertaForSequenceClassification}


def tiny_tokenizer() -> transformers.RobertaTokenizerFast:
    """A byte-level BPE trained on a few sentences, with RoBERTa's specials and post-processor."""
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(TINY_BPE_TEXTS * 5, trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    bpe.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return transformers.RobertaTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>",
                                             sep_token="</s>", cls_token="<s>", unk_token="<unk>", pad_token="<pad>",
                                             mask_token="<mask>")


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, str]:
    """task -> a tiny checkpoint folder: config.json (model_type roberta), model.safetensors, tokenizer.json."""
    tokenizer = tiny_tokenizer()
    made = {}
    for task, class_name in HEADS.items():
        folder = tmp_path_factory.mktemp(class_name.lower())
        torch.manual_seed(0)
        config = transformers.RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                            num_attention_heads=4, intermediate_size=37, max_position_embeddings=514,
                                            type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1,
                                            num_labels=2 if task == "qa" else 3)  # a span head: start and end
        getattr(transformers, class_name)(config).eval().save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        made[task] = str(folder)
    return made


@pytest.fixture
def hub_ids(server, folders) -> dict[str, str]:
    """The same checkpoints served by the local Hub (an empty HF cache, online): task -> Hub id."""
    ids = {task: f"tiny-org/roberta-{task}" for task in folders}
    for task, folder in folders.items():
        server.add_repo(ids[task], folder)
    return ids


def reference(folder: str, class_name: str):
    return getattr(transformers, class_name).from_pretrained(folder, attn_implementation="eager").eval()


def left_padded_batch(vocab_size: int):
    torch.manual_seed(1)
    ids = torch.randint(5, vocab_size, (2, 12))
    mask = torch.ones_like(ids)
    ids[1, :4], mask[1, :4] = 1, 0  # the second row starts with four pads: its positions start after them
    return ids, mask


def test_position_ids_start_after_the_padding_index_and_skip_pads():
    ids = torch.tensor([[0, 7, 8, 2], [1, 1, 0, 2]])
    assert roberta.position_ids(ids, padding_idx=1).tolist() == [[2, 3, 4, 5], [1, 1, 2, 3]]
    reference_ids = transformers.models.roberta.modeling_roberta.RobertaEmbeddings.create_position_ids_from_input_ids
    assert torch.equal(roberta.position_ids(ids, 1), reference_ids(ids, 1))


@pytest.mark.parametrize("task", list(HEADS))
def test_every_head_loaded_from_the_hub_equals_transformers(hub_ids, folders, task):
    loaded = registry.load(task, hub_ids[task])
    assert type(loaded.model) is OURS[task] and "downloaded now (" in loaded.badge
    expected_model = reference(folders[task], HEADS[task])
    ids, mask = left_padded_batch(expected_model.config.vocab_size)
    with torch.inference_mode():
        expected = expected_model(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                                  output_attentions=True)
        got = loaded.model(ids, mask, None, output_attentions=True)
    keep = mask.bool()
    if task == "qa":
        pairs = [(got.start_logits, expected.start_logits), (got.end_logits, expected.end_logits)]
    else:
        pairs = [(got.logits, expected.logits)]
    for ours, theirs in pairs:  # per token (B, T, ...) on the real tokens; a sentence's (B, C) whole
        assert ours.shape == theirs.shape
        real = keep if task != "classify" else slice(None)
        torch.testing.assert_close(ours[real], theirs[real], atol=ATOL, rtol=0)
    for ours, theirs in zip(got.encoder.hidden_states, expected.hidden_states, strict=True):
        torch.testing.assert_close(ours[keep], theirs[keep], atol=ATOL, rtol=0)
    for ours, theirs in zip(got.encoder.attentions, expected.attentions, strict=True):  # (B, A, T, T)
        assert ours.shape == (2, 4, 12, 12)
        torch.testing.assert_close(ours.transpose(1, 2)[keep], theirs.transpose(1, 2)[keep], atol=ATOL, rtol=0)


def test_the_mlm_decoder_is_tied_and_the_bare_encoder_reads_a_head_file(folders):
    model = registry.from_pretrained(folders["mlm"], roberta.RobertaForMaskedLM, device="cpu")
    assert model.lm_head.decoder.weight is model.roberta.embeddings.word_embeddings.weight
    encoder = registry.load("encoder", folders["classify"]).model
    assert type(encoder) is roberta.RobertaOnlyEncoder and encoder.roberta.pooler is None  # no pooler in the file
    expected = reference(folders["classify"], HEADS["classify"]).roberta
    ids, mask = left_padded_batch(expected.config.vocab_size)
    with torch.inference_mode():
        torch.testing.assert_close(encoder(ids, mask).last_hidden_state[mask.bool()],
                                   expected(input_ids=ids, attention_mask=mask).last_hidden_state[mask.bool()],
                                   atol=ATOL, rtol=0)


def test_the_tokenizer_rule_equals_robertas_tokenizer(folders, tmp_path):
    ours, _ = registry.tokenizer(folders["mlm"])
    theirs = transformers.AutoTokenizer.from_pretrained(folders["mlm"])
    first, second = "The weather today is very good.", "Call me Ishmael."
    encoding = ours.encode(first, second)
    assert encoding.ids == theirs(first, second)["input_ids"]
    assert encoding.tokens[0] == "<s>" and encoding.tokens.count("</s>") == 3 and set(encoding.segment_ids) == {0}
    assert encoding.sequence_ids == theirs(first, second).sequence_ids()  # type ids are all 0: read from lengths
    assert ours.mask_token == "<mask>" and ours.mask_token_id == theirs.mask_token_id
    # A repo with only vocab.json + merges.txt (no tokenizer.json) builds the same pipeline
    slow = tmp_path / "slow"
    slow.mkdir()
    assert sorted(Path(f).name for f in theirs.backend_tokenizer.model.save(str(slow))) == ["merges.txt", "vocab.json"]
    (slow / "config.json").write_text(Path(folders["mlm"], "config.json").read_text())
    built, _ = registry.tokenizer(str(slow))
    assert built.encode(first, second).ids == encoding.ids


def test_fill_mask_equals_the_pipeline(folders):
    loaded = registry.load("mlm", folders["mlm"])
    text = "The weather today is very [MASK], so we went out."
    result = mlm.fill_mask(loaded, text, top_k=5)
    pipeline = transformers.pipeline("fill-mask", model=folders["mlm"], tokenizer=folders["mlm"], device=-1)
    theirs = pipeline(text.replace("[MASK]", "<mask>"), top_k=5)
    assert [c.token_id for c in result.blanks[0].candidates] == [p["token"] for p in theirs]
    assert [c.probability for c in result.blanks[0].candidates] == pytest.approx([p["score"] for p in theirs],
                                                                                 abs=1e-5)


def test_classification_of_a_pair_equals_transformers(folders):
    first, second = "The weather today is very good.", "The weather today is very bad."
    result = classify.classify(first, second, folders["classify"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(folders["classify"])
    with torch.inference_mode():
        logits = reference(folders["classify"], HEADS["classify"])(**tokenizer(first, second, return_tensors="pt"))
    np.testing.assert_allclose(result.logits, logits.logits[0].numpy(), atol=ATOL)
    assert result.vector_name == "tanh(W_d h_<s> + b_d)" and result.weight.shape == (3, 32)


def test_the_transformer_walk_ner_and_qa_run_on_it(folders):
    text = "Call me Ishmael. Some years ago I went to sea."
    walk = transformer.walk(text, folders["classify"], "Ġme")
    encoder = registry.load("encoder", folders["classify"])
    ids = torch.tensor([encoder.tokenizer.encode(text).ids])
    with torch.inference_mode():
        last = encoder.model(ids).last_hidden_state[0].numpy()
    np.testing.assert_allclose(walk.hidden_states[-1], last, atol=1e-5)  # the walk equals the model's forward
    tagged = ner.tag(text, folders["ner"])
    assert len(tagged.tokens) == tagged.probs.shape[0] and tagged.probs.shape[1] == 3
    answer = qa.answer("Where did I go?", text, folders["qa"], top_k=3)
    assert answer.answers and all(a.text in text for a in answer.answers if not a.is_null)
