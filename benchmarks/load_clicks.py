"""What a class clicks in benchmarks/load_test.py: one main event per tab with arguments that work offline, the
learner's own text beside the preset of the moment (issue #38 §3), the profiles, each learner's clicks in order and
the pauses between them (--think, issue 56)."""
from __future__ import annotations

import random

# One main endpoint per tab, with arguments that work offline (bundled models). Keyword names are the handlers'
# parameter names, as gradio_client exposes them.
CALLS: dict[str, dict] = {
    "ngram_counts": dict(own_text="", upload=None, context="的", word="词性"),
    "embeddings_analogy": dict(a="king", b="man", c="woman", topn=5),
    "lstm_inspect": dict(text="Call me Ishmael. Some years ago", signal="forget gate f", units=24),
    "attention_multihead": dict(sentence="i have a dream", d_model=512, heads=8, causal=False),
    "attention_model": dict(model_id="sentence-transformers/all-MiniLM-L6-v2",
                            text="The animal didn't cross the street because it was too tired.", pair="",
                            layer=1, head=1, hide_special=False),
    "mlm_inputs": dict(model_id="bert-base-uncased", text="my dog is cute", pair="he likes playing"),
    "ner_convert": dict(line="爱/B-PER 因/I-PER 斯坦/I-PER 在/O 柏林/B-LOC 发表/O 演讲/O"),
    "qa_layout": dict(model_id="distilbert-base-cased-distilled-squad", question="What causes precipitation to fall?",
                      context="In meteorology, precipitation falls under gravity.", doc_stride=128, max_seq_len=384),
}
# The classroom profile adds every other tab's main event (issue 21 §8: "over all tabs"). Offline, the BERT-task
# checkpoints are not here: those events answer with their "not on this machine" view (NER still tokenises, QA and
# classification still show the input layout), which is what a class sees on an offline machine.
CLASSROOM_CALLS: dict[str, dict] = {
    "overview_score": dict(text="the cat sat on the mat"),
    "transformer_block": dict(model_id="sentence-transformers/all-MiniLM-L6-v2",
                              text="The animal didn't cross the street because it was too tired.", token="it",
                              layer=3),
    "transformer_gpt_next": dict(model_id="char-gpt", text="Call me Ishmael. Some years ago", temperature=1.0,
                                 top_k=10),
    "mlm_fill": dict(model_id="bert-base-uncased", text="my dog is [MASK] .", top_k=5),
    "ner_tag": dict(text="My name is Wolfgang and I live in Berlin.", model_id="dslim/bert-base-NER",
                    strategy="first"),
    "qa_answer": dict(model_id="distilbert-base-cased-distilled-squad", question="What causes precipitation to fall?",
                      context="In meteorology, precipitation falls under gravity.", max_answer_len=30, top_k=3,
                      doc_stride=128, max_seq_len=384, no_answer=False),
    "classify_run": dict(model_id="textattack/bert-base-uncased-MRPC", task="sentence pair",
                         text_a="I like you very much.", text_b="I am very fond of you.", max_length=128),
}
CALLS.update(CLASSROOM_CALLS)
# Events that the browser runs in two steps (demo/server/downloads.py): ``<name>_download`` with the checkpoint id(s),
# then ``<name>``. The load test does the same and times both together, as the learner waits for both.
DOWNLOAD_FIRST = {"attention_model": ["model_id"], "mlm_inputs": ["model_id"], "transformer_block": ["model_id"],
                  "transformer_gpt_next": ["model_id"], "mlm_fill": ["model_id"], "ner_tag": ["model_id"],
                  "qa_answer": ["model_id"], "classify_run": ["model_id"]}


# The learner's own text (issue #38 §3): in a class, half the clicks are the preset of the moment (CALLS as they
# are), half a text the learner typed. Own text: the preset's text field with two words appended that depend on the
# learner and the click, so own requests rarely repeat (and never those of the preset).
OWN_TEXT = {"ngram_counts": "context", "lstm_inspect": "text", "attention_multihead": "sentence",
            "attention_model": "text", "mlm_inputs": "text", "ner_convert": "line", "qa_layout": "question",
            "overview_score": "text", "transformer_block": "text", "transformer_gpt_next": "text",
            "mlm_fill": "text", "ner_tag": "text", "qa_answer": "question", "classify_run": "text_a"}
OWN_WORDS = ("river", "garden", "music", "winter", "doctor", "window", "letter", "summer", "market", "forest",
             "teacher", "bridge", "island", "silver", "dinner", "morning", "engine", "castle", "pocket", "planet",
             "harbor", "valley", "candle", "mirror", "rocket", "basket", "circle", "butter", "dragon", "jungle",
             "ladder", "meadow")
OWN_ANALOGIES = (("paris", "france", "italy"), ("king", "man", "woman"), ("big", "bigger", "small"),
                 ("walk", "walked", "run"), ("tokyo", "japan", "china"))


def arguments(name: str, learner: int, click: int, own: bool) -> dict:
    """The keyword arguments of one click: the preset's, or (``own``) the learner's own text."""
    kwargs = dict(CALLS[name])
    if not own:
        return kwargs
    if name == "embeddings_analogy":
        kwargs.update(zip("abc", OWN_ANALOGIES[(learner + click) % len(OWN_ANALOGIES)]))
    elif name == "ner_convert":
        kwargs["line"] += f" {OWN_WORDS[learner % len(OWN_WORDS)]}/O {OWN_WORDS[click % len(OWN_WORDS)]}/O"
    elif name in OWN_TEXT:
        field = OWN_TEXT[name]
        words = f"{OWN_WORDS[learner % len(OWN_WORDS)]} {OWN_WORDS[click % len(OWN_WORDS)]}"
        kwargs[field] = (kwargs[field].replace(" [MASK]", f" {words} [MASK]") if "[MASK]" in kwargs[field]
                         else f"{kwargs[field]} {words}")
    return kwargs


PROFILES = {"default": dict(users=32, seconds=60, endpoints=[name for name in CALLS if name not in CLASSROOM_CALLS],
                            own_share=0.0, think=0.0),
            "classroom": dict(users=64, seconds=60, endpoints=list(CALLS), own_share=0.5, think=8.0)}


def pauses(index: int, think: float, seed: int = 0):
    """Learner ``index``'s pauses before each of its actions, in seconds, without end: exponentially distributed with
    mean ``think`` (a reader's time between clicks), seeded per learner; all 0 when ``think`` is 0 (no pause)."""
    if think < 0:
        raise ValueError(f"think time must be ≥ 0, not {think}")
    draw = random.Random(f"think {seed} {index}")  # apart from clicks()' draw: the same clicks with or without pauses
    while True:
        yield draw.expovariate(1.0 / think) if think > 0 else 0.0


def clicks(index: int, endpoints: list[str], own_share: float):
    """Learner ``index``'s clicks, in order, without end: (endpoint, its keyword arguments). Round-robin from a
    different tab per learner; seeded per learner, so every run (and either client) makes the same clicks."""
    turn, draw = index, random.Random(index)
    while True:
        name = endpoints[turn % len(endpoints)]
        turn += 1
        yield name, arguments(name, index, turn, own=draw.random() < own_share)
