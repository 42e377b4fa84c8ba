"""The checks whose checkpoints come from the Hub (issue #51): NER, QA, the Hub BERT's fill and the SST-2 class,
with their Why views; and fine-tuning against the GloVe baseline. Offline (the tests' empty HF cache) each shows its
download card; on tiny random checkpoints (tests/conftest.py: tiny_checkpoint, two seeds) each answer equals
transformers' own pipeline or model, and captum for the Why views.

The fine-tuning check runs the tab's training on a small pasted set with a few head steps."""
import numpy as np
import pytest
import torch

from benchmarks.bench_qa import TransformersQA
from core.tasks import finetune_train
from core.checks import classify as classify_checks
from core.checks import get
from core.checks import mlm as mlm_checks
from core.checks import ner as ner_checks
from core.checks import qa as qa_checks
from core.checks.base import grade

pytestmark = pytest.mark.usefixtures("one_torch_thread")

HUB = {"mlm-hub-fill": "bert-base-uncased", "ner-bio": "dslim/bert-base-NER", "ner-iobes": "dslim/bert-base-NER",
       "ner-entities": "dslim/bert-base-NER", "ner-why": "dslim/bert-base-NER",
       "qa-start": "distilbert-base-cased-distilled-squad",
       "qa-end": "distilbert-base-cased-distilled-squad", "qa-why": "distilbert-base-cased-distilled-squad",
       "classify-class": "distilbert-base-uncased-finetuned-sst-2-english",
       "classify-why": "distilbert-base-uncased-finetuned-sst-2-english"}
STEPS = 32
CONLL_LABELS = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]  # dslim's label set


@pytest.mark.parametrize("slug", sorted(HUB))
def test_offline_a_hub_check_shows_the_download_card_never_an_answer(slug):
    check = get(slug)
    setup = check.setup(None)  # the question can still be read
    assert setup.text and setup.model == HUB[slug]
    found = check.answer(None)
    assert found.missing == HUB[slug] and found.value is None
    verdict = grade(check, setup.options[0] if setup.options and check.kind == "choice" else 0)
    assert verdict.detail == {"missing": HUB[slug]} and not verdict.right


def captum_top_token(model, tokenizer, forward, ids, keep) -> int:
    """captum's Gauss–Legendre integrated gradients of ``forward`` on transformers' input embeddings, from the [PAD]
    baseline (the ``keep`` ids stay): the index of the token it credits most."""
    from captum.attr import IntegratedGradients

    table = model.get_input_embeddings()
    x = table(torch.tensor(ids)).detach()
    baseline = table(torch.tensor([i if i in keep else tokenizer.pad_token_id for i in ids])).detach()
    ig = IntegratedGradients(forward).attribute(x[None], baselines=baseline[None], n_steps=STEPS,
                                                method="gausslegendre")[0]
    return int(ig.sum(-1).argmax())


def conll(tiny_checkpoint, tmp_path_factory, seed):
    import json
    import shutil

    folder = tmp_path_factory.mktemp(f"ner_seed{seed}")
    shutil.copytree(tiny_checkpoint("BertForTokenClassification", seed=seed, num_labels=9), folder, dirs_exist_ok=True)
    config = json.loads((folder / "config.json").read_text())
    config.update(id2label={str(i): label for i, label in enumerate(CONLL_LABELS)},
                  label2id={label: i for i, label in enumerate(CONLL_LABELS)})
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


# ----------------------------------------------------------------------------------------------------------------
# NER: per-word tags under "first" from transformers' model, IOBES by its definition, entities from the pipeline


def reference_iobes(tags):
    out = []
    for i, tag in enumerate(tags):
        if tag == "O":
            out.append(tag)
            continue
        kind = tag[2:]
        starts = tag[0] == "B" or i == 0 or tags[i - 1] == "O" or tags[i - 1][2:] != kind
        following = tags[i + 1] if i + 1 < len(tags) else "O"
        continues = following[0] == "I" and following[2:] == kind
        out.append(("B" if continues else "S") + "-" + kind if starts else ("I" if continues else "E") + "-" + kind)
    return out


def reference_ner(folder, text, word):
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForTokenClassification.from_pretrained(folder).eval()
    encoded = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = encoded.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        labels = model(**encoded).logits[0].argmax(-1).tolist()
    words, tags = [], []
    for position, word_id in enumerate(encoded.word_ids()):
        if word_id is not None and (not words or words[-1][0] != word_id):  # the word's first token
            words.append((word_id, text[offsets[position][0]:offsets[position][1]]))
            tags.append(model.config.id2label[labels[position]])
        elif word_id is not None:
            words[-1] = (word_id, words[-1][1] + text[offsets[position - 1][1]:offsets[position][1]])
    index = [w for _, w in words].index(word)
    pipe = transformers.pipeline("token-classification", model=folder, tokenizer=folder, device=-1,
                                 aggregation_strategy="first")
    return tags[index], reference_iobes(tags)[index], len(pipe(text))


@pytest.mark.parametrize("seed", [0, 1])
def test_ner_checks_equal_transformers(seed, tiny_checkpoint, tmp_path_factory, monkeypatch):
    folder = conll(tiny_checkpoint, tmp_path_factory, seed)
    monkeypatch.setattr(ner_checks, "MODEL_ID", folder)
    for own in (None, "Queequeg and [Tashtego] met Daggoo near Nantucket."):
        text, word = ner_checks.marked(own)
        bio, iobes, entities = reference_ner(folder, text, word)
        assert get("ner-bio").answer(own).value == bio
        assert get("ner-iobes").answer(own).value == iobes
        assert get("ner-entities").answer(own).value == entities
        assert bio in get("ner-bio").setup(own).options and iobes in get("ner-iobes").setup(own).options


def captum_tag(folder, text, word):
    """captum on transformers' BertForTokenClassification: the word's first token's most probable tag, from the
    [PAD] baseline ([CLS], [SEP] kept)."""
    import transformers

    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    model = transformers.BertForTokenClassification.from_pretrained(folder, attn_implementation="eager").eval()
    encoded = tokenizer(text, return_offsets_mapping=True)
    ids = encoded["input_ids"]
    start = text.index(word)
    position = next(i for i, (a, b) in enumerate(encoded["offset_mapping"]) if a == start and b > a)
    with torch.no_grad():
        target = int(model(torch.tensor([ids])).logits[0, position].argmax())
    keep = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id}

    def forward(embeds):
        return model(inputs_embeds=embeds, token_type_ids=torch.zeros(embeds.shape[:2], dtype=torch.long)
                     ).logits[:, position].softmax(-1)[:, target]

    return captum_top_token(model, tokenizer, forward, ids, keep), tokenizer.convert_ids_to_tokens(ids)


@pytest.mark.parametrize("seed", [0, 1])
def test_ner_why_equals_captum(seed, tiny_checkpoint, tmp_path_factory, monkeypatch):
    folder = conll(tiny_checkpoint, tmp_path_factory, seed)
    monkeypatch.setattr(ner_checks, "MODEL_ID", folder)
    text, word = ner_checks.marked(None)
    best, tokens = captum_tag(folder, text, word)
    assert get("ner-why").setup(None).options == tuple(tokens)
    assert get("ner-why").answer(None).value == best


def test_iobes_reference_on_the_seed_pattern():
    assert reference_iobes(["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "I-LOC", "I-PER"]) == \
        ["B-PER", "E-PER", "O", "B-LOC", "I-LOC", "E-LOC", "S-PER"]


# ----------------------------------------------------------------------------------------------------------------
# QA: the span from transformers' question-answering computation, word by character offsets; Why by captum


def captum_start(folder, question, context, start_token):
    import transformers

    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    model = transformers.BertForQuestionAnswering.from_pretrained(folder, attn_implementation="eager").eval()
    encoded = tokenizer(question, context)
    ids, segments = encoded["input_ids"], torch.tensor([encoded["token_type_ids"]])
    allowed = torch.tensor([s == 1 for s in encoded["token_type_ids"]])
    allowed[-1] = False  # the last [SEP]
    allowed[0] = True  # [CLS] (the null answer)
    keep = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id}

    def forward(embeds):
        logits = model(inputs_embeds=embeds, token_type_ids=segments.expand(embeds.shape[0], -1)).start_logits
        return logits.masked_fill(~allowed, -10000.0).softmax(-1)[:, start_token]

    return captum_top_token(model, tokenizer, forward, ids, keep)


@pytest.mark.parametrize("seed", [0, 1])
def test_qa_checks_equal_transformers(seed, tiny_checkpoint, monkeypatch):
    folder = str(tiny_checkpoint("BertForQuestionAnswering", seed=seed))
    monkeypatch.setattr(qa_checks, "MODEL_ID", folder)
    reference = TransformersQA(folder)
    for own in (None, "Where did the Pequod sail from?\nThe Pequod sailed from Nantucket on a cold Christmas day."):
        question, context = qa_checks.question_context(own)
        best = reference(question, context)[0]
        words = context.split()
        ends = np.cumsum([len(w) + 1 for w in words]) - 1  # the character after each word
        assert get("qa-start").answer(own).value == int(np.searchsorted(ends, best["start"], side="right"))
        assert get("qa-end").answer(own).value == int(np.searchsorted(ends, best["end"] - 1, side="right"))
        assert get("qa-start").setup(own).options == tuple(words)
    question, context = qa_checks.question_context(None)
    from core.tasks import qa

    start = qa.answer(question, context, folder).best.token_start
    assert get("qa-why").answer(None).value == captum_start(folder, question, context, start)


# ----------------------------------------------------------------------------------------------------------------
# The Hub BERT's fill and the SST-2 class: transformers' pipelines; the class's Why: captum


@pytest.mark.parametrize("seed", [0, 1])
def test_hub_bert_fill_equals_the_fill_mask_pipeline(seed, tiny_checkpoint, monkeypatch):
    import transformers

    folder = str(tiny_checkpoint("BertForMaskedLM", seed=seed))
    monkeypatch.setattr(mlm_checks, "HUB_MODEL", folder)
    expected = transformers.pipeline("fill-mask", model=folder, tokenizer=folder, device=-1)(mlm_checks.HUB_TEXT,
                                                                                            top_k=4)
    found = get("mlm-hub-fill").answer(None)
    assert found.value == expected[0]["token_str"]
    assert set(get("mlm-hub-fill").setup(None).options) == {e["token_str"] for e in expected}


def captum_class(folder, text, target):
    import transformers

    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    model = transformers.BertForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    ids = tokenizer(text)["input_ids"]
    keep = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id}

    def forward(embeds):
        return model(inputs_embeds=embeds, token_type_ids=torch.zeros(embeds.shape[:2], dtype=torch.long)
                     ).logits.softmax(-1)[:, target]

    return captum_top_token(model, tokenizer, forward, ids, keep)


@pytest.mark.parametrize("seed", [0, 1])
def test_class_and_its_why_equal_transformers(seed, tiny_checkpoint, monkeypatch):
    import transformers

    folder = str(tiny_checkpoint("BertForSequenceClassification", seed=seed, num_labels=2))
    monkeypatch.setattr(classify_checks, "MODEL_ID", folder)
    expected = transformers.pipeline("text-classification", model=folder, top_k=None, device="cpu")(
        classify_checks.TEXT)
    expected = expected[0] if isinstance(expected[0], list) else expected
    found = get("classify-class").answer(None)
    assert found.value == expected[0]["label"] and get("classify-class").setup(None).options == ("LABEL_0", "LABEL_1")
    target = int(expected[0]["label"][-1])
    assert get("classify-why").answer(None).value == captum_class(folder, classify_checks.TEXT, target)


# ----------------------------------------------------------------------------------------------------------------
# Fine-tuning against the GloVe baseline: accuracies recomputed from each model's own predictions


POSITIVE = ["what a lovely warm day", "the food was great and fresh", "i loved this happy film",
            "a wonderful kind teacher", "such a beautiful bright garden", "the best gift ever"]
NEGATIVE = ["what a horrible cold day", "the food was awful and stale", "i hated this sad film",
            "a terrible rude teacher", "such an ugly dark garden", "the worst gift ever"]


def labelled(scrambled=False):
    """Labelled lines; scrambled: every other sentence labelled positive, whatever it says."""
    if scrambled:
        return "\n".join(f"{'positive' if i % 2 else 'negative'}\t{s}" for i, s in enumerate(POSITIVE + NEGATIVE))
    return "\n".join([f"positive\t{s}" for s in POSITIVE] + [f"negative\t{s}" for s in NEGATIVE])


@pytest.mark.slow
@pytest.mark.parametrize("flip", [False, True], ids=["sentiment", "scrambled"])
def test_finetune_check_compares_the_held_out_accuracies(flip, monkeypatch):
    monkeypatch.setattr(classify_checks, "HEAD_STEPS", 40)
    runs = []
    real_train = finetune_train.train

    def remembered(*args, **kwargs):
        for update in real_train(*args, **kwargs):
            runs.append(update)
            yield update

    monkeypatch.setattr(finetune_train, "train", remembered)
    found = get("classify-finetune").answer(labelled(flip))
    outcome = runs[-1]
    data, classes = outcome.data, len(outcome.data.labels)
    glove = next(b for b in outcome.baselines if b.name_key == "classify.baseline_glove")
    predicted = {name: [] for name in ("glove", "tuned")}
    for example in data.test:
        rows = outcome.predict(example.text)
        predicted["glove"].append(int(np.argmax(glove.probabilities(example.text, classes))))
        predicted["tuned"].append(int(np.argmax(rows[-1][1])))
    truth = [data.labels.index(e.label) for e in data.test]
    accuracy = {name: float(np.mean(np.array(p) == truth)) for name, p in predicted.items()}
    assert dict(found.scores) == pytest.approx({"fine-tuned": accuracy["tuned"], "glove": accuracy["glove"]})
    assert found.value == ("fine-tuned" if accuracy["tuned"] >= accuracy["glove"] else "glove")


# ----------------------------------------------------------------------------------------------------------------
# Under their real ids, through the local Hub: the first answer downloads the checkpoint the check names


def test_through_the_local_hub_the_ner_and_qa_checks_fetch_their_real_ids_and_answer_like_transformers(
        server, conll_ner_checkpoint, tiny_checkpoint):
    """dslim/bert-base-NER and the SQuAD DistilBERT served by tests/hub_server.py (tiny random weights under the real
    ids): no MODEL_ID is patched; the check downloads what it names, then answers as transformers does on the same
    files."""
    qa_folder = str(tiny_checkpoint("BertForQuestionAnswering", seed=3))
    server.add_repo(ner_checks.MODEL_ID, conll_ner_checkpoint)
    server.add_repo(qa_checks.MODEL_ID, qa_folder)
    text, word = ner_checks.marked(None)
    bio, iobes, _ = reference_ner(str(conll_ner_checkpoint), text, word)
    found = get("ner-bio").answer(None)
    assert found.missing is None and found.value == bio
    assert get("ner-iobes").answer(None).value == iobes
    question, context = qa_checks.question_context(None)
    best = TransformersQA(qa_folder)(question, context)[0]
    ends = np.cumsum([len(w) + 1 for w in context.split()]) - 1
    assert get("qa-start").answer(None).value == int(np.searchsorted(ends, best["start"], side="right"))
    assert server.count("config.json") >= 2  # both came over HTTP from the local Hub
