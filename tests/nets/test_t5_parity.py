"""The T5 family (core/nets/t5.py) against transformers' T5ForConditionalGeneration (issue #52, item 5): tiny random
checkpoints that transformers writes, with a SentencePiece (Unigram) tokenizer.json trained here by ``tokenizers``,
loaded through the registry from a folder and from the local Hub; offline, t5-small's refusal names the download."""
from __future__ import annotations

import pytest
import torch

from core.loading import registry
from core.text.errors import ModelUnavailableError, UserInputError

TEXTS = ["translate English to French: I am a student.", "translate English to German: the house is wonderful.",
         "summarize: attention is all you need, queries keys and values.", "I love China. Machine learning."]
SOURCE = "translate English to French: I am a student."
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def write_checkpoint(folder, feed_forward_proj: str, tie_word_embeddings: bool, seed: int = 0):
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    tokenizer.train_from_iterator(TEXTS * 5, trainers.UnigramTrainer(
        vocab_size=120, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>", show_progress=False))
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tokenizer.save(str(folder / "tokenizer.json"))
    torch.manual_seed(seed)
    config = transformers.T5Config(
        vocab_size=tokenizer.get_vocab_size(), d_model=32, d_kv=8, d_ff=37, num_layers=2, num_decoder_layers=3,
        num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=20,
        feed_forward_proj=feed_forward_proj, tie_word_embeddings=tie_word_embeddings, decoder_start_token_id=0,
        pad_token_id=0, eos_token_id=1)
    reference = transformers.T5ForConditionalGeneration(config).eval()
    reference.save_pretrained(folder)
    return transformers.T5ForConditionalGeneration.from_pretrained(folder, attn_implementation="eager").eval()


@pytest.fixture(scope="module", params=[("relu", True), ("gated-gelu", False)], ids=["t5", "t5-v1.1"])
def tiny_t5(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("t5")
    return folder, write_checkpoint(folder, *request.param)


def test_logits_and_every_attention_equal_transformers(tiny_t5):
    folder, reference = tiny_t5
    loaded = registry.load("seq2seq", str(folder))
    ids = torch.tensor([loaded.tokenizer.encode(SOURCE).ids])
    assert ids[0, -1] == 1  # </s> closes the source, as T5's post-processor adds it
    decoder_ids = torch.tensor([[0, 5, 9, 3, 17, 4]])
    with torch.inference_mode():
        ours = loaded.model(ids, decoder_ids)
        theirs = reference(input_ids=ids, decoder_input_ids=decoder_ids, output_attentions=True)
    torch.testing.assert_close(ours.logits, theirs.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours.encoder_last_hidden_state, theirs.encoder_last_hidden_state, atol=1e-5, rtol=1e-5)
    for name in ("encoder_attentions", "decoder_attentions", "cross_attentions"):
        assert len(getattr(ours, name)) == len(getattr(theirs, name))
        for a, b in zip(getattr(ours, name), getattr(theirs, name)):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert ours.cross_attentions[0].shape == (1, 4, 6, ids.shape[1])  # target × source, per head
    assert torch.count_nonzero(ours.decoder_attentions[0][0, :, 0, 1:]) == 0  # row 0 reads only itself: masked


def test_greedy_output_equals_generate(tiny_t5):
    folder, reference = tiny_t5
    loaded = registry.load("seq2seq", str(folder))
    ids = torch.tensor([loaded.tokenizer.encode(text).ids for text in [SOURCE]])
    ours = loaded.model.greedy(ids, max_new_tokens=12)
    theirs = reference.generate(ids, max_new_tokens=12, do_sample=False, num_beams=1, use_cache=False)
    assert ours.tolist() == theirs.tolist()
    assert isinstance(loaded.tokenizer.decode(ours[0].tolist()), str)


def test_relative_position_buckets_equal_transformers():
    from transformers.models.t5.modeling_t5 import T5Attention

    from core.nets.t5 import relative_position_bucket

    offsets = torch.arange(-300, 301)[None, :]
    for bidirectional in (True, False):
        for buckets, distance in ((32, 128), (8, 20)):
            expected = T5Attention._relative_position_bucket(offsets, bidirectional, buckets, distance)
            assert torch.equal(relative_position_bucket(offsets, bidirectional, buckets, distance), expected)


def test_served_by_the_local_hub_then_cached(server, tmp_path):
    folder = tmp_path / "t5"
    folder.mkdir()
    reference = write_checkpoint(folder, "relu", True, seed=3)
    server.add_repo("tiny-org/tiny-t5", folder)
    loaded = registry.load("seq2seq", "tiny-org/tiny-t5")
    assert loaded.files.source == "Hub download"
    ids = torch.tensor([loaded.tokenizer.encode(SOURCE).ids])
    assert loaded.model.greedy(ids, 8).tolist() == reference.generate(ids, max_new_tokens=8, do_sample=False, use_cache=False).tolist()


def test_offline_t5_small_names_the_download():
    with pytest.raises(ModelUnavailableError, match="hf download t5-small"):
        registry.load("seq2seq", None)


def test_a_t5_checkpoint_is_not_a_masked_lm(tiny_t5):
    folder, _ = tiny_t5
    with pytest.raises(UserInputError) as refused:
        registry.load("mlm", str(folder))
    assert refused.value.key == "registry.wrong_class"  # said from config.json's T5ForConditionalGeneration
    assert "'t5' checkpoint cannot be used here" in refused.value.message("en")


def test_step_by_step_translation_records_what_generate_writes(tiny_t5):
    """core/seq2seq.translate_t5, the view's per-step record on a T5: its pieces are generate's, and each step's
    cross-attention is the one transformers returns for that prefix."""
    from core.seq2seq import seq2seq

    folder, reference = tiny_t5
    loaded = registry.load("seq2seq", str(folder))
    result = seq2seq.translate_t5(SOURCE, str(folder), max_words=6)
    ids = torch.tensor([loaded.tokenizer.encode(SOURCE).ids])
    generated = reference.generate(ids, max_new_tokens=6, do_sample=False, use_cache=False)[0].tolist()
    assert [step.word for step in result.steps] == [loaded.tokenizer.piece(i) for i in generated[1:]]
    assert result.source == loaded.tokenizer.encode(SOURCE).pieces
    last = result.steps[-1]
    prefix = torch.tensor([[loaded.tokenizer.backend.token_to_id(p) for p in last.prefix]])
    with torch.inference_mode():
        theirs = reference(input_ids=ids, decoder_input_ids=prefix, output_attentions=True)
    for ours, expected in zip(last.cross_attention, theirs.cross_attentions):
        torch.testing.assert_close(ours, expected[0], atol=1e-5, rtol=1e-5)
    assert last.top[0][0] == last.word
