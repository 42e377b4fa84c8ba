"""Question-answering latency: our core.tasks.qa pipeline vs transformers' question-answering pipeline, same weights.

transformers 5 removed QuestionAnsweringPipeline, so ``TransformersQA`` below is that pipeline (its last version,
4.5x) put back together from what transformers still ships: the fast tokenizer call with the pipeline's arguments,
the transformers model run window by window (batch 1, as the pipeline does), the pipeline's own span decoder
``select_starts_ends`` (still in transformers.pipelines.document_question_answering), and its word-aligned character
offsets and answer merging. The tests use it as the correctness reference too.

Context: 300 words (several sentences), one question, top-k 1, default windows (384 tokens). Two models with random
weights: tiny (2 layers, hidden 32) and bert-base-sized (12 layers, hidden 768). Run: python -m benchmarks.bench_qa
"""
from __future__ import annotations

import argparse
import inspect
import tempfile

import numpy as np
import torch

from benchmarks.common import paired_median_seconds, print_table, row
from core.tasks import qa
from core.loading import registry
from core.loading.checkpoints import MINILM_ID
from core.loading.resolve import resolve
from core.text import seeds

QUESTION = "Where do water droplets collide with ice crystals?"


class TransformersQA:
    """transformers' QuestionAnsweringPipeline (v4.5x, fast tokenizer, align_to_words=True) on transformers 5."""

    def __init__(self, folder: str, device: torch.device | None = None):
        import transformers

        self.device = device or torch.device("cpu")
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        self.model = transformers.AutoModelForQuestionAnswering.from_pretrained(folder).to(self.device).eval()
        accepted = inspect.signature(self.model.forward).parameters  # DistilBERT takes no token_type_ids
        self.input_names = [name for name in self.tokenizer.model_input_names if name in accepted]

    def __call__(self, question: str, context: str, top_k: int = 1, doc_stride: int | None = None,
                 max_answer_len: int = 15, max_seq_len: int | None = None,
                 handle_impossible_answer: bool = False) -> list[dict]:
        from transformers.pipelines.document_question_answering import select_starts_ends

        # preprocess
        if max_seq_len is None:
            max_seq_len = min(self.tokenizer.model_max_length, 384)
        if doc_stride is None:
            doc_stride = min(max_seq_len // 2, 128)
        encoded = self.tokenizer(text=question, text_pair=context, padding="do_not_pad", truncation="only_second",
                                 max_length=max_seq_len, stride=doc_stride, return_token_type_ids=True,
                                 return_overflowing_tokens=True, return_offsets_mapping=True,
                                 return_special_tokens_mask=True)
        min_null_score = 1000000
        answers = []
        for span in range(len(encoded["input_ids"])):
            ids = encoded["input_ids"][span]
            p_mask = [tok != 1 for tok in encoded.sequence_ids(span)]
            for cls_index in np.nonzero(np.array(ids) == self.tokenizer.cls_token_id)[0]:
                p_mask[cls_index] = 0
            # _forward
            inputs = {name: torch.tensor([encoded[name][span]], device=self.device) for name in self.input_names}
            with torch.no_grad():
                output = self.model(**inputs)
            # postprocess
            starts, ends, scores, min_null_score = select_starts_ends(
                output.start_logits.cpu().numpy(), output.end_logits.cpu().numpy(), p_mask,
                np.array([encoded["attention_mask"][span]]), min_null_score, top_k * 2 + 10,
                handle_impossible_answer, max_answer_len)
            enc = encoded[span]
            for s, e, score in zip(starts, ends, scores):
                try:
                    start_index = enc.word_to_chars(enc.token_to_word(s), sequence_index=1)[0]
                    end_index = enc.word_to_chars(enc.token_to_word(e), sequence_index=1)[1]
                except Exception:  # noqa: BLE001 - the pipeline's own fallback to token offsets
                    start_index, end_index = enc.offsets[s][0], enc.offsets[e][1]
                target = context[start_index:end_index]
                same = next((a for a in answers if a["answer"].lower() == target.lower()), None)
                if same:
                    same["score"] += score.item()
                else:
                    answers.append({"score": score.item(), "start": start_index, "end": end_index, "answer": target})
        if handle_impossible_answer:
            answers.append({"score": min_null_score, "start": 0, "end": 0, "answer": ""})
        return sorted(answers, key=lambda a: a["score"], reverse=True)[:top_k]


def context_of(words: int) -> str:
    """A context of about ``words`` words: the precipitation paragraph, repeated."""
    base = seeds.PRECIPITATION.split()
    return " ".join((base * (words // len(base) + 1))[:words])


def write_checkpoint(folder: str, size: str) -> str:
    import transformers

    torch.manual_seed(0)
    if size == "tiny":
        config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=37)
    else:
        config = transformers.BertConfig(vocab_size=30522)  # bert-base: 12 layers, hidden 768, 12 heads
    transformers.BertForQuestionAnswering(config).eval().save_pretrained(folder)
    minilm = resolve(MINILM_ID, need="tokenizer").directory  # its tokenizer files only
    transformers.BertTokenizerFast.from_pretrained(str(minilm)).save_pretrained(folder)
    return folder


def run(quick: bool = False) -> list[dict]:
    context = context_of(300)
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for size, repeats in (("tiny", 5 if quick else 30), ("bert-base", 2 if quick else 20)):
            # random weights, bert-base-sized (the Hub is unreachable here): time depends on shapes, not values
            folder = write_checkpoint(f"{root}/{size}", size)
            loaded = registry.load("qa", folder)
            reference = TransformersQA(folder, loaded.device)
            ours, theirs = paired_median_seconds(lambda: qa.answer(QUESTION, context, folder),
                                                 lambda: reference(QUESTION, context), repeats)
            rows.append(row(f"QA {size} (random weights): 300-word context, {loaded.device.type} fp32", ours * 1e3,
                            theirs * 1e3, "ms", "ratio ≤ 1.0", target_ratio=1.0))
            long_context = context_of(1500)  # several windows: ours batches them, the pipeline runs one by one
            ours, theirs = paired_median_seconds(lambda: qa.answer(QUESTION, long_context, folder),
                                                 lambda: reference(QUESTION, long_context), max(2, repeats // 3))
            windows = len(qa.answer(QUESTION, long_context, folder).windows)
            rows.append(row(f"QA {size}: 1500-word context ({windows} windows)", ours * 1e3, theirs * 1e3, "ms",
                            "ratio ≤ 1.0", target_ratio=1.0))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    print_table(run(parser.parse_args().quick))
