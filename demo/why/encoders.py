"""Why this answer (issue #35) in the BERT tabs: the masked word (char-BERT or a BERT checkpoint), an NER token's
tag, a QA answer's start and end, a classifier's class (a checkpoint, or the MiniLM fine-tuned in this session).

Each ``build_*`` is one sub-tab, called inside its tab's gr.Tabs(), in the shape of demo/why/why.py's views: the inputs, a
step slider, a button, the preset bar, and in a results column (hidden while the checkpoint is missing: the note
shows the card) one Markdown (answer, f(x) − f(x'), completeness gap) and one gr.HTML (coloured tokens per method and
rollout, the numbers; PNG/SVG/CSV), plus the logit-lens heatmap for the masked LM. core/why/encoders.py computes;
demo/why/why.py formats. As there, the button streams (``stream_*``: gradient × input and rollout first, then integrated
gradients refining) and a preset computes the last stage only (``explain_*``).
"""
from __future__ import annotations

from dataclasses import replace

import gradio as gr

from core.loading.checkpoints import CHAR_BERT_ID, CHECKPOINTS, FINE_TUNED_MINILM_ID, MRPC_ID, SIMILARITY_ZH_ID, SST2_ID
from core.loading.lazy import lazy_import
from core.text.limits import MAX_LONG_TEXT_CHARS, MAX_SHORT_TEXT_CHARS, MAX_TEXT_CHARS
from core.text.seeds import GPT_VS_BERT, PRECIPITATION, SEED_PAIR_EN, SEED_PAIR_ZH, SEED_ZH
from demo.kit import presets
from demo.server.handlers import friendly_errors, gpu_handler
from demo.server.downloads import card_when_missing, model_event
from demo.kit.i18n import label, t
from demo.why.why import (ANIMAL, CHAR_BERT_PRESETS, DEFAULT_STEPS, _explain_char_bert, _or_message, _outputs, _shown,
                      _steps, _steps_slider, details, lens_figure, staged, summary, unchanged)


def class_summary(result, gaps=None) -> str:
    """summary() with the class name quoted: a name from the data or the checkpoint ("positive", "LABEL_1")."""
    return summary(replace(result, answer=f"“{result.answer}”"), None, gaps)

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
attribution = lazy_import("core.why.attribution")
why_encoders = lazy_import("core.why.encoders")
logit_lens = lazy_import("core.why.logit_lens")
finetune_train = lazy_import("core.tasks.finetune_train")

NER_ID, ZH_NER_ID = CHECKPOINTS["ner"]
QA_ID, CHINESE_QA_ID = CHECKPOINTS["qa"][0], CHECKPOINTS["qa"][2]
MLM_ID, ZH_MLM_ID = CHECKPOINTS["mlm"][0], CHECKPOINTS["mlm"][2]


def _session(request: gr.Request | None) -> str:
    """The browser session whose fine-tuning run the classification view explains (demo/tasks/classify.py's key)."""
    return getattr(request, "session_hash", None) or "local"


# ----------------------------------------------------------------------------------------------------------------
# Handlers: (model id, inputs…, steps) → (note, html[, figure]); the results column is added by card_when_missing


def _explain_masked(model_id: str, text: str, steps: float, stream: bool):
    steps, model_id = _steps(steps), str(model_id or "").strip()
    if model_id == CHAR_BERT_ID:
        yield from _explain_char_bert(text, steps, stream, "why-mlm")
        return
    figure = None

    def show(stage, gaps, send_figure):
        nonlocal figure
        result, lens = stage
        figure = figure or lens_figure(lens)
        return summary(result, lens, gaps[0]), details(result, lens, "why-mlm"), unchanged(figure, send_figure)

    yield from staged(why_encoders.explain_masked_word_stages(text, model_id or None, steps, stream=stream), show,
                      stream, whys=lambda stage: [stage[0]])


@friendly_errors
@gpu_handler
@card_when_missing("why.shows_masked", outputs=3)
def explain_masked(model_id: str, text: str, steps: float):
    """The first blank's best guess: the char-BERT's character, or a BERT checkpoint's word, with its logit lens."""
    return attribution.last(_explain_masked(model_id, text, steps, stream=False))


@friendly_errors
@gpu_handler
@card_when_missing("why.shows_masked", outputs=3)
def stream_masked(model_id: str, text: str, steps: float):
    """explain_masked as the button shows it, stage by stage."""
    yield from _explain_masked(model_id, text, steps, stream=True)


def _explain_ner(model_id: str, text: str, token: str, steps: float, stream: bool):
    def show(found, gaps, _):
        which = "chosen" if found.chosen else ("first" if found.entity else "none")
        line = t(f"why.ner_token_{which}", position=found.position, token=_shown(found.token))
        return line + "\n\n" + summary(found.why, None, gaps[0]), details(found.why, None, "why-ner",
                                                                         marked=found.position)

    stages = why_encoders.explain_tag_stages(text, str(model_id or "").strip() or None, token, _steps(steps), stream)
    yield from staged(stages, show, stream, whys=lambda found: [found.why])


@friendly_errors
@gpu_handler
@card_when_missing("why.shows_ner", outputs=2)
def explain_ner(model_id: str, text: str, token: str, steps: float):
    """One token's tag (the learner's word or #, else the first entity token)."""
    return attribution.last(_explain_ner(model_id, text, token, steps, stream=False))


@friendly_errors
@gpu_handler
@card_when_missing("why.shows_ner", outputs=2)
def stream_ner(model_id: str, text: str, token: str, steps: float):
    """explain_ner as the button shows it, stage by stage."""
    yield from _explain_ner(model_id, text, token, steps, stream=True)


def _explain_qa(model_id: str, question: str, context: str, steps: float, stream: bool):
    def show(found, gaps, _):
        lines = [t("why.qa_answer", answer=found.answer, start=found.positions[0], end=found.positions[1])]
        if found.windows > 1:
            lines.append(t("why.qa_window", window=found.window + 1, windows=found.windows))
        parts = []
        for result, position, end, seen in ((found.start, found.positions[0], False, gaps[0]),
                                            (found.end, found.positions[1], True, gaps[1])):
            heading = t("why.qa_end_heading" if end else "why.qa_start_heading", token=_shown(result.answer))
            lines += [heading, summary(result, None, seen)]
            parts.append(details(result, None, "why-qa-end" if end else "why-qa-start", marked=position))
        return "\n\n".join(lines), "".join(parts)

    stages = why_encoders.explain_span_stages(question, context, str(model_id or "").strip() or None, _steps(steps),
                                              stream)
    yield from staged(stages, show, stream, whys=lambda found: [found.start, found.end])


@friendly_errors
@gpu_handler
@card_when_missing("why.shows_qa", outputs=2)
def explain_qa(model_id: str, question: str, context: str, steps: float):
    """The best answer's start and its end, each explained on the window it was found in."""
    return attribution.last(_explain_qa(model_id, question, context, steps, stream=False))


@friendly_errors
@gpu_handler
@card_when_missing("why.shows_qa", outputs=2)
def stream_qa(model_id: str, question: str, context: str, steps: float):
    """explain_qa as the button shows it, stage by stage."""
    yield from _explain_qa(model_id, question, context, steps, stream=True)


def _class_stages(model_id: str, text_a: str, text_b: str, steps: float, session: str | None, stream: bool):
    """A checkpoint's class, or (FINE_TUNED_MINILM_ID) the MiniLM of ``session``'s fine-tuning run; ``session`` None:
    none (a preset, the same for every learner), so head (a) before training."""
    model_id = str(model_id or "").strip()
    if model_id != FINE_TUNED_MINILM_ID:
        stages = why_encoders.explain_class_stages(text_a, text_b, model_id or None, _steps(steps), stream)
        yield from staged(stages, lambda result, gaps, _: (class_summary(result, gaps[0]),
                                                           details(result, None, "why-classify", marked=0)), stream)
        return
    outcome = finetune_train.RUNS.result(session) if session is not None else None
    lines = [t("why.untrained_note") if outcome is None else
             t("why.finetuned_note", layers=outcome.unfrozen, accuracy=f"{outcome.tuned_accuracy:.3f}",
               labels=", ".join(outcome.data.labels))]
    if str(text_b or "").strip():
        lines.append(t("why.pair_ignored"))

    def show(result, gaps, _):
        return "\n\n".join([*lines, class_summary(result, gaps[0])]), details(result, None, "why-classify", marked=0)

    yield from staged(why_encoders.explain_session_class_stages(text_a, outcome, _steps(steps), stream), show, stream)


@card_when_missing("why.shows_classify", outputs=2)
def _explain_class(model_id: str, text_a: str, text_b: str, steps: float, session: str | None):
    return attribution.last(_class_stages(model_id, text_a, text_b, steps, session, stream=False))


@card_when_missing("why.shows_classify", outputs=2)
def _stream_class(model_id: str, text_a: str, text_b: str, steps: float, session: str | None):
    yield from _class_stages(model_id, text_a, text_b, steps, session, stream=True)


@friendly_errors
@gpu_handler
def explain_classify(model_id: str, text_a: str, text_b: str, steps: float, request: gr.Request = None):
    """The class: a checkpoint's, or this session's fine-tuned MiniLM's (before fine-tuning: head (a) untrained)."""
    return _explain_class(model_id, text_a, text_b, steps, _session(request))


@friendly_errors
@gpu_handler
def stream_classify(model_id: str, text_a: str, text_b: str, steps: float, request: gr.Request = None):
    """explain_classify as the button shows it, stage by stage."""
    yield from _stream_class(model_id, text_a, text_b, steps, _session(request))


@friendly_errors
@gpu_handler
def explain_classify_preset(model_id: str, text_a: str, text_b: str, steps: float):
    """explain_classify for a preset: the same for every learner, so no session's fine-tuned model."""
    return _explain_class(model_id, text_a, text_b, steps, None)


# ----------------------------------------------------------------------------------------------------------------
# Presets from the seed

P = presets.Preset
ZH_WEATHER = GPT_VS_BERT["zh"][0].replace("__", "[MASK]")  # 今天天气很[MASK]，我们不得不取消户外运动
MASKED_PRESETS = [
    *(P(p.slug, p.label, (CHAR_BERT_ID, *p.values), p.section) for p in CHAR_BERT_PRESETS),
    P("why-bert-bank", label("why.preset_bert_bank"), (MLM_ID, "I deposited my pay cheque at the [MASK].",
                                                       DEFAULT_STEPS), "§13"),
    P("why-bert-it-animal", label("why.preset_bert_animal"),
      (MLM_ID, "The animal didn't cross the street because [MASK] was too tired.", DEFAULT_STEPS), "§9"),
    P("why-bert-thinking-machines", label("why.preset_bert_thinking"),
      (MLM_ID, "Thinking [MASK] can read the words on both sides.", DEFAULT_STEPS), "§9"),
    P("why-bert-jintian-tianqi-hen", label("why.preset_bert_zh"), (ZH_MLM_ID, ZH_WEATHER, DEFAULT_STEPS), "§13.1"),
]
NER_PRESETS = [
    P("why-ner-wolfgang", label("why.preset_ner_first"), (NER_ID, "My name is Wolfgang and I live in Berlin.", "",
                                                          DEFAULT_STEPS), "§14.4"),
    P("why-ner-berlin", label("why.preset_ner_berlin"), (NER_ID, "My name is Wolfgang and I live in Berlin.",
                                                         "Berlin", DEFAULT_STEPS), "§14.4"),
    P("why-ner-bank", label("why.preset_ner_bank"), (NER_ID, "We had a picnic on the river bank near Oxford.",
                                                     "bank", DEFAULT_STEPS), "§14.4"),
    P("why-ner-aiyinsitan", label("why.preset_ner_zh"), (ZH_NER_ID, "愛因斯坦在柏林發表演講。", "", DEFAULT_STEPS),
      "§14.4"),
]
# The QA view is its tab's only sub-tab, so its default shows when the tab opens: a short one (one sentence).
# The QA tab has no sub-tab bar of its own, so this view's default runs when the tab opens: two explanations (start
# and end) of a 6-layer model, at 8 Gauss–Legendre steps about a quarter of 32's time on a CPU (the completeness
# gap it shows says what the fewer steps cost; the learner can raise them).
QA_OPEN_STEPS = 8
QA_PRESETS = [
    P("why-qa-it-animal", label("why.preset_qa_animal"), (QA_ID, "What was too tired?", ANIMAL + ".",
                                                          QA_OPEN_STEPS), "§9"),
    P("why-qa-precipitation", label("why.preset_qa_fall"), (QA_ID, "What causes precipitation to fall?",
                                                            PRECIPITATION, DEFAULT_STEPS), "§14.3"),
    P("why-qa-thinking-machines", label("why.preset_qa_thinking"),
      (QA_ID, "Which word does Thinking attend to?",
       "In the seed's attention example, Thinking attends to Machines with weight 0.88 and to itself with 0.12.",
       DEFAULT_STEPS), "§9"),
    P("why-qa-zuigao-wendu", label("why.preset_qa_zh"), (CHINESE_QA_ID, *SEED_ZH, DEFAULT_STEPS), "§14.3"),
]
CLASSIFY_PRESETS = [
    P("why-classify-fine-tuned", label("why.preset_cls_tuned"),
      (FINE_TUNED_MINILM_ID, "The staff were friendly and the room was clean.", "", DEFAULT_STEPS), "§14.2"),
    P("why-classify-sst2", label("why.preset_cls_sst2"),
      (SST2_ID, "A gripping story with an ending I did not see coming.", "", DEFAULT_STEPS), "§14.1"),
    P("why-classify-thinking-machines", label("why.preset_cls_thinking"),
      (MRPC_ID, "Thinking machines read the words on both sides.", "Machines that think read both sides of a word.",
       DEFAULT_STEPS), "§9"),
    P("why-classify-bank", label("why.preset_cls_bank"),
      (MRPC_ID, "I deposited my pay cheque at the bank.", "We had a picnic on the river bank.", DEFAULT_STEPS),
      "§14.1"),
    P("why-classify-pair-en", label("why.preset_cls_pair_en"), (MRPC_ID, *SEED_PAIR_EN, DEFAULT_STEPS), "§14.1"),
    P("why-classify-pair-zh", label("why.preset_cls_pair_zh"), (SIMILARITY_ZH_ID, *SEED_PAIR_ZH, DEFAULT_STEPS),
      "§14.1"),
]


# ----------------------------------------------------------------------------------------------------------------
# Layout: one sub-tab per call (inside the tab's gr.Tabs())


def _view(tab: str, key: str, sub_tab: gr.Tab, task: str, model, fields: list, fn, preset_fn, preset_list,
          api_name: str, figure: bool = False) -> dict[str, presets.View]:
    """The steps, button, preset bar and outputs after the view's own fields; its events and its View. ``fn``: the
    button's streaming handler; ``preset_fn``: the last stage alone, for presets and first open."""
    steps = _steps_slider(preset_list[0].resolved()[-1])
    button = gr.Button(label("why.explain"), variant="primary")
    bar = gr.Column()
    note, result, plot, results = _outputs(figure)  # results hidden while the checkpoint is missing: note = card
    inputs = [model, *fields, steps]
    outputs = [note, result, *([plot] if figure else []), results]
    model_event(button.click, {task: model}, fn, inputs, outputs, api_name=api_name, queue={},
                cache_results=True)  # a session's fine-tuned model has no revision: never shared
    view = presets.View(tab, key, inputs, outputs, _or_message(preset_fn, 1, int(figure)), preset_list,
                        where=sub_tab)
    with bar:
        view.buttons()
    return {key: view}


def _model(task: str, first: tuple[str, ...], value: str, key: str) -> gr.Dropdown:
    return gr.Dropdown([*first, *CHECKPOINTS[task]], value=value, label=label(key), allow_custom_value=True)


def build_masked() -> dict[str, presets.View]:
    """The BERT masked LM tab's sub-tab: the char-BERT (offline) or a BERT checkpoint's first blank."""
    with gr.Tab(label("why.tab"), id="why-mlm") as tab:
        gr.Markdown(label("why.intro_masked"))
        model = _model("mlm", (CHAR_BERT_ID,), CHAR_BERT_ID, "why.model_masked")
        text = gr.Textbox(label=label("why.text_masked"), value=MASKED_PRESETS[0].values[1], max_length=MAX_TEXT_CHARS)
        return _view("mlm", "why_masked", tab, "mlm", model, [text], stream_masked, explain_masked, MASKED_PRESETS,
                     "mlm_why", figure=True)


def build_ner() -> dict[str, presets.View]:
    """The NER tab's sub-tab: why one token gets its tag."""
    with gr.Tab(label("why.tab"), id="why-ner") as tab:
        gr.Markdown(label("why.intro_ner"))
        model = _model("ner", (), NER_ID, "why.model_checkpoint")
        text = gr.Textbox(label=label("ner.text_label"), value=NER_PRESETS[0].values[1], max_length=MAX_TEXT_CHARS)
        token = gr.Textbox(label=label("why.token"), info=label("why.token_info"), max_length=MAX_SHORT_TEXT_CHARS)
        return _view("ner", "why", tab, "ner", model, [text, token], stream_ner, explain_ner, NER_PRESETS, "ner_why")


def build_qa() -> dict[str, presets.View]:
    """The QA tab's sub-tab: why the answer starts and ends where it does."""
    with gr.Tab(label("why.tab"), id="why-qa") as tab:
        gr.Markdown(label("why.intro_qa"))
        model = _model("qa", (), QA_ID, "why.model_checkpoint")
        question = gr.Textbox(label=label("qa.question_label"), value=QA_PRESETS[0].values[1],
                              max_length=MAX_TEXT_CHARS)
        context = gr.Textbox(label=label("qa.context_label"), value=QA_PRESETS[0].values[2], lines=4,
                             max_length=MAX_LONG_TEXT_CHARS)
        return _view("qa", "why", tab, "qa", model, [question, context], stream_qa, explain_qa, QA_PRESETS, "qa_why")


def build_classify() -> dict[str, presets.View]:
    """The Classification tab's sub-tab: why the class; offline on the MiniLM fine-tuned in this session."""
    with gr.Tab(label("why.tab"), id="why-classify") as tab:
        gr.Markdown(label("why.intro_classify"))
        model = _model("classify", (FINE_TUNED_MINILM_ID,), FINE_TUNED_MINILM_ID, "why.model_classify")
        text_a = gr.Textbox(label=label("classify.text_a_label"), value=CLASSIFY_PRESETS[0].values[1],
                            max_length=MAX_TEXT_CHARS)
        text_b = gr.Textbox(label=label("classify.text_b_label"), max_length=MAX_TEXT_CHARS)
        return _view("classify", "why", tab, "classify", model, [text_a, text_b], stream_classify,
                     explain_classify_preset, CLASSIFY_PRESETS, "classify_why")
