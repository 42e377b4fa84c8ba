"""The BERT masked-LM tab's handlers (core/mlm/mlm.py, core/mlm/pretraining.py → figures, tables, Markdown).

The layout, presets and lesson are in demo/mlm/mlm.py. Every sentence, figure title and table header a handler returns
is a key of the ``mlm`` section of assets/i18n/*.yaml, rendered in the learner's language (friendly_errors sets it;
``fill_batch`` sets it per request, since Gradio gives a batched call one request per sample).
"""
from __future__ import annotations

from functools import partial

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from core.loading.checkpoints import model_id_or_default
from core.text.errors import LearnerError, ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import
from core.transformer.param_count import PART_KEYS
from demo.server.handlers import friendly_errors, gpu_handler, log, whole_number
from demo.kit.widgets import sig4
from demo.mlm import char_views
from demo.kit import sampling
from demo.server.downloads import SHORT_REASONS, byte_progress, missing_model_card, needs_download, results_visible
from demo.kit.figures import COLORWAY, DIVERGING_SCALE, bar, empty_figure, heatmap
from demo.mlm.figures import candidates_figure, table
from core.text.i18n import language_of
from demo.kit.i18n import t, using_language

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
registry = lazy_import("core.loading.registry")
fm = lazy_import("core.mlm.mlm")
pretraining = lazy_import("core.mlm.pretraining")

EMBEDDING_DIMS_SHOWN = 48  # columns per heatmap: enough to see the patterns, few enough to read at 1280 px


def action_name(action: int) -> str:
    """The learner's name of what BERT's masking did to a token (pretraining.KEEP, MASK, RANDOM or UNCHANGED)."""
    keys = {pretraining.KEEP: "mlm.action_keep", pretraining.MASK: "mlm.action_mask",
            pretraining.RANDOM: "mlm.action_random", pretraining.UNCHANGED: "mlm.action_unchanged"}
    return t(keys[action])


# ----------------------------------------------------------------------------------------------------------------
# Loading, with the reason shown when the checkpoint cannot be had


def load_mlm(model_id: str, progress: gr.Progress) -> registry.LoadedModel:
    return registry.load("mlm", model_id, progress=byte_progress(progress))


def unavailable(exc: ModelUnavailableError, model_id: str | None = None) -> str:
    """The notice when predictions cannot run: the registry's reason, the checkpoint to fetch, what still works."""
    model = model_id_or_default("mlm", model_id)
    return t("mlm.unavailable", reason=str(exc), model=model[:100])


def no_model(exc: ModelUnavailableError, model_id: str | None, shows_key: str, *empty) -> tuple:
    """The outputs of a view whose checkpoint cannot be had: its card in the notice (or the reason, when a download
    would not help), ``empty`` for the results, and their column hidden."""
    model = model_id_or_default("mlm", model_id)
    notice = missing_model_card(model, shows_key, exc) if needs_download(exc) else unavailable(exc, model_id)
    return (notice, *empty, results_visible(False))


def stand_in(exc: ModelUnavailableError, model_id: str | None, shows_key: str, view, text: str, top_k,
             *empty) -> tuple:
    """A Hub checkpoint that is not on this machine: the char-BERT answers in its place (``view``: a function of
    demo/mlm/char_views.py), with a note naming the checkpoint and its `hf download`. When a download would not
    help, or the char-BERT cannot read the text (Chinese: it knows Moby-Dick's characters), the card or the reason
    alone, as before."""
    if not needs_download(exc):
        return no_model(exc, model_id, shows_key, *empty)
    model = model_id_or_default("mlm", model_id)
    key = getattr(exc, "key", None)
    why = t(SHORT_REASONS[key]) if key in SHORT_REASONS else str(exc)
    try:
        return view(text, top_k, t("mlm.char_bert.stands_in", model=model[:100], why=why))
    except UserInputError as refused:
        card = missing_model_card(model, shows_key, exc)
        return (card + "\n\n" + t("mlm.char_bert.cannot", message=str(refused)), *empty, results_visible(False))


def badge(loaded: registry.LoadedModel, missing: LearnerError | None = None) -> str:
    """The model's badge; when MiniLM-L6 stands in for the picked checkpoint, why (``missing``)."""
    line = f"<span class='badge'>{loaded.badge}</span>"
    if missing is not None:
        line += "\n\n" + t("mlm.fallback", reason=str(missing))
    return line


# ----------------------------------------------------------------------------------------------------------------
# Fill in the blank


def blank_figure(blanks: list[fm.Blank], title: str) -> go.Figure:
    """One horizontal bar chart of the top-k per blank (side by side, three per row)."""
    return candidates_figure([(t("mlm.blank_n", n=i + 1), [(c.token, c.probability) for c in blank.candidates])
                              for i, blank in enumerate(blanks)], title)


def candidate_table(blanks: list[fm.Blank]) -> gr.Dataframe:
    rows = [[number, rank, c.token, sig4(c.probability)]
            for number, blank in enumerate(blanks, 1) for rank, c in enumerate(blank.candidates, 1)]
    return table(rows, "mlm.col_blank", "mlm.col_rank", "mlm.col_token", "mlm.col_probability")


def rows_of(value) -> list[list]:
    """The rows of a table a handler returned."""
    return value["data"] if isinstance(value, dict) else value


@friendly_errors
@gpu_handler
def fill(model_id: str, text: str, top_k: float, temperature: float = 0.0, sampling_top_k: float = 0,
         top_p: float = 1.0, seed: float = 0, progress=gr.Progress()):
    """→ notice, filled sentence, figure, table, the char-BERT's first-step next-token figure, the results' column
    (hidden while the checkpoint is missing). The sampling controls draw the char-BERT's characters; a Hub
    checkpoint fills in one pass and draws nothing, and its note says so when the controls would sample."""
    fm.clean_text(text)  # empty text: say so before any loading
    controls = (temperature, sampling_top_k, top_p, seed)
    settings = sampling.settings(*controls)  # an impossible setting: its message, whichever the model
    if char_views.is_char_bert(model_id):
        return char_views.fill(text, top_k, settings=settings, link=(model_id, text, top_k, *controls))
    try:
        loaded = load_mlm(model_id, progress)
    except ModelUnavailableError as exc:
        return stand_in(exc, model_id, "downloads.shows_mlm_fill", partial(char_views.fill, settings=settings), text,
                        top_k, "", None, [], None)
    result = fm.fill_mask(loaded, text, int(top_k))
    return _fill_outputs(loaded, result, int(top_k), settings)


def _fill_outputs(loaded: registry.LoadedModel, result: fm.FillMaskResult, top_k: int, settings):
    filled = t("mlm.filled", text=result.filled)
    if len(result.blanks) > 1:
        filled += "\n\n" + t("mlm.filled_independently")
    if result.unknown:
        filled += "\n\n" + t("mlm.unknown_pieces", pieces=", ".join(result.unknown))
    if not settings.greedy:  # the controls would draw: say why nothing was drawn
        filled += "\n\n" + t("mlm.char_bert.one_shot", model=loaded.files.name, settings=sampling.describe(settings))
    title = t("mlm.fill_title", k=top_k, model=loaded.files.name)
    return (badge(loaded), filled, blank_figure(result.blanks, title), candidate_table(result.blanks),
            char_views.plot_shown(None), results_visible(True))


@gpu_handler
def fill_batch(model_id: list, text: list, top_k: list, temperature: list | None = None,
               sampling_top_k: list | None = None, top_p: list | None = None, seed: list | None = None,
               request: gr.Request = None) -> tuple[list, ...]:
    """``fill`` for a batch of requests (wired with batch=True: Gradio gathers concurrent requests into one call,
    and the model reads them in one padded forward pass). Each request's own problem (no blank, too long, model not
    available) is shown in its notice instead of failing the other requests of the batch. The parameters keep
    ``fill``'s names (each a list here), since they are the endpoint's parameter names for API clients.

    ``request``: Gradio 6 passes a batched call one gr.Request per sample (queueing.py builds the list in the
    batch's order), a direct call one request or none; each sample's answer comes out in its own learner's
    language."""
    model_ids, texts, top_ks = model_id, text, top_k
    controls = list(zip(*(column if column is not None else [default] * len(texts) for column, default
                          in zip((temperature, sampling_top_k, top_p, seed), char_views.GREEDY))))
    requests = request if isinstance(request, (list, tuple)) else [request] * len(texts)
    languages = [language_of(r) for r in requests]
    outputs: list[tuple] = [None] * len(texts)  # type: ignore[list-item]
    groups: dict[str, list[int]] = {}
    for index, model_id in enumerate(model_ids):
        groups.setdefault(model_id_or_default("mlm", model_id), []).append(index)
    for model_id, indices in groups.items():
        try:
            if char_views.is_char_bert(model_id):  # one text at a time: the iterative fill runs per text
                results, loaded = [None] * len(indices), None
            else:
                loaded = registry.load("mlm", model_id)
                results = fm.fill_mask_batch(loaded, [(texts[i], top_ks[i]) for i in indices])
        except Exception as exc:  # noqa: BLE001 - shown per request, never as a traceback
            results, loaded = [exc] * len(indices), None
        for i, result in zip(indices, results):
            with using_language(languages[i]):
                outputs[i] = _batch_output(loaded, result, model_id, texts[i], top_ks[i], controls[i])
    return tuple(list(column) for column in zip(*outputs))


def _batch_output(loaded, result, model_id: str, text: str, top_k, controls: tuple) -> tuple:
    try:
        settings = sampling.settings(*controls)
        if result is None:
            return char_views.fill(text, top_k, settings=settings, link=(model_id, text, top_k, *controls))
        if isinstance(result, ModelUnavailableError):
            return stand_in(result, model_id, "downloads.shows_mlm_fill", partial(char_views.fill, settings=settings),
                            text, top_k, "", None, [], None)
    except Exception as exc:  # noqa: BLE001 - shown in this request's notice, never as a traceback
        result = exc
    if isinstance(result, Exception):
        if not isinstance(result, UserInputError):
            log.error("fill-mask batch failed", exc_info=result)
        message = str(result) if isinstance(result, UserInputError) else t("errors.internal",
                                                                             name=type(result).__name__)
        return t("mlm.fill_refused", message=message), "", None, [], None, results_visible(False)
    return _fill_outputs(loaded, result, int(top_k), settings)


def word_list(text: str) -> list[tuple[str, int]]:
    """(label, index) for each word of the text; the word boundaries are BERT's, whatever the vocabulary."""
    if not (text or "").strip():
        return []
    tokenizer = fm.bert_word_tokenizer()
    return [(t("mlm.word_choice", word=w.text, n=i + 1), i) for i, w in enumerate(fm.words_of(tokenizer, text))]


@friendly_errors
def word_choices(text: str, chosen: int | None = None):
    """The words of the text, for 'Mask this word' (the list is filled when it is opened or the text changes); the
    chosen position stays chosen while the text still has a word there."""
    choices = word_list(text)
    keep = isinstance(chosen, int) and 0 <= chosen < len(choices)
    return gr.Dropdown(choices=choices, value=chosen if keep else None)


@friendly_errors
def mask_chosen_word(text: str, index):
    """The chosen word hidden as one "_" per character: one blank for a Hub BERT, a word of that many characters for
    the char-BERT."""
    if index is None:
        raise UserInputError("mlm.pick_word")
    return fm.mask_word(fm.bert_word_tokenizer(), text, int(index), per_character=True)


# ----------------------------------------------------------------------------------------------------------------
# Both sides vs left only


@friendly_errors
@gpu_handler
def compare(model_id: str, text: str, top_k: float, progress=gr.Progress()):
    """→ notice, explanation, bidirectional figure, left-only figure, the results' column."""
    fm.clean_text(text)
    if char_views.is_char_bert(model_id):
        return char_views.compare(text, top_k)
    try:
        loaded = load_mlm(model_id, progress)
    except ModelUnavailableError as exc:
        return stand_in(exc, model_id, "downloads.shows_mlm_compare", char_views.compare, text, top_k, "", None, None)
    result = fm.compare_contexts(loaded, text, int(top_k))
    best_full, best_left = result.full.candidates[0], result.left.candidates[0]
    summary = t("mlm.compare_summary", full_text=result.full_text, full_token=best_full.token,
                full_p=f"{best_full.probability:.2f}", left_text=result.left_text, left_token=best_left.token,
                left_p=f"{best_left.probability:.2f}")
    return (badge(loaded), summary, blank_figure([result.full], t("mlm.both_sides_title")),
            blank_figure([result.left], t("mlm.left_only_title")), results_visible(True))


# ----------------------------------------------------------------------------------------------------------------
# Input representation


@friendly_errors
@gpu_handler
def inputs(model_id: str, text: str, pair: str, progress=gr.Progress()):
    """→ notice, highlighted tokens, token table, 4 heatmaps."""
    fm.clean_text(text)
    loaded, missing = registry.load_or_fallback("mlm", model_id, byte_progress(progress))
    rep = pretraining.input_representation(loaded, text, pair or None)
    segment_names = {0: t("mlm.segment_a"), 1: t("mlm.segment_b")}
    highlighted = gr.HighlightedText(
        value=[(token + " ", segment_names[s]) for token, s in zip(rep.tokens, rep.segment_ids)],
        color_map={segment_names[0]: COLORWAY[0], segment_names[1]: COLORWAY[1]})
    rows = [[i, token, loaded.tokenizer.token_to_id(token), s] for i, (token, s)
            in enumerate(zip(rep.tokens, rep.segment_ids))]
    dims = min(EMBEDDING_DIMS_SHOWN, rep.token.shape[1])
    scale = float(np.abs(np.stack([rep.token, rep.segment, rep.position])[..., :dims]).max()) or 1.0
    labels = [str(d) for d in range(dims)]

    def draw(values: np.ndarray, title_key: str, zmax: float) -> go.Figure:
        return heatmap(values[:, :dims], labels, rep.tokens, t(title_key), colorscale=DIVERGING_SCALE, zmid=0,
                       zmin=-zmax, zmax=zmax, x_title=t("mlm.axis_dimension", shown=dims, total=rep.token.shape[1]),
                       y_title=t("mlm.axis_token"), annotate=False, height=360)

    figures = [draw(rep.token, "mlm.emb_token_title", scale), draw(rep.segment, "mlm.emb_segment_title", scale),
               draw(rep.position, "mlm.emb_position_title", scale),
               draw(rep.total, "mlm.emb_sum_title", float(np.abs(rep.total[:, :dims]).max()))]
    note = badge(loaded, missing) + "\n\n" + t("mlm.piece_note")
    if any(_is_cjk(ch) for ch in text + (pair or "")):
        note += "\n\n" + t("mlm.cjk_note")
    if loaded.config.model_type == "distilbert":
        note += "\n\n" + t("mlm.distil_no_segments")
    return (note, highlighted, table(rows, "mlm.col_position", "mlm.col_token", "mlm.col_id", "mlm.col_segment"),
            *figures)


def _is_cjk(ch: str) -> bool:
    """A CJK ideograph: BERT's pre-tokenizer puts spaces around each one, so WordPiece sees one character a word."""
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\uf900" <= ch <= "\ufaff"


# ----------------------------------------------------------------------------------------------------------------
# Masking procedure


@friendly_errors
def masking(model_id: str, text: str, seed: float, draws: float):
    """→ highlighted draw, table, counts figure, per-position figure, summary."""
    fm.clean_text(text)
    tokenizer, _, missing = registry.tokenizer_or_fallback(model_id)  # MiniLM-L6: bert-base-uncased's vocabulary
    if char_views.is_char_bert(model_id):  # its masking is this very code, on characters (core/mlm/masking.py)
        note = "\n\n" + t("mlm.char_bert.masking_note")
    else:
        named = str(model_id or "").strip()  # an API call's null or a cleared picker names nothing
        note = "" if not missing else "\n\n" + (t("mlm.masking_fallback", model=named[:100]) if named
                                                 else t("mlm.masking_unnamed"))
    result = pretraining.bert_masking(tokenizer, text, whole_number(seed, t("mlm.seed_name")),
                                      whole_number(draws, t("mlm.draws_name"), 1))
    highlighted = [(token + " ", None if action == pretraining.KEEP else action_name(action))
                   for token, action in zip(result.corrupted, result.actions)]
    rows = [[i, before, after, action_name(action)] for i, (before, after, action)
            in enumerate(zip(result.tokens, result.corrupted, result.actions)) if action != pretraining.KEEP]
    chosen_total = sum(result.counts.values())
    names = {name: action_name(action) for action, name in pretraining.ACTION_NAMES.items()}
    shares = {names[name]: count / chosen_total for name, count in result.counts.items()}
    counts_fig = bar(list(shares), list(shares.values()), t("mlm.counts_title", chosen=f"{chosen_total:,}"),
                     value_title=t("mlm.axis_share_chosen"), highlight=[True, False, False], height=300)
    positions_fig = bar([f"{i}:{token}" for i, token in enumerate(result.tokens)],
                        [c / result.draws for c in result.chosen_by_position],
                        t("mlm.positions_title", draws=f"{result.draws:,}"), horizontal=False,
                        value_title=t("mlm.axis_share_draws"))
    summary = t("mlm.masking_summary", candidates=result.candidates, chosen=result.chosen_per_draw,
                share=f"{result.chosen_per_draw / result.candidates:.0%}") + note
    return (highlighted, table(rows, "mlm.col_position", "mlm.col_original", "mlm.col_model_reads",
                               "mlm.col_what_happened"), counts_fig, positions_fig, summary)


# ----------------------------------------------------------------------------------------------------------------
# Next-sentence prediction


@friendly_errors
@gpu_handler
def nsp(model_id: str, first: str, second: str, progress=gr.Progress()):
    """→ notice, figure, filled pair, the results' column."""
    fm.clean_text(first, "mlm.empty_first")
    fm.clean_text(second, "mlm.empty_second")
    if char_views.is_char_bert(model_id):
        raise UserInputError("mlm.char_bert.no_nsp")
    try:
        loaded = load_mlm(model_id, progress)
    except ModelUnavailableError as exc:
        return no_model(exc, model_id, "downloads.shows_mlm_nsp", None, "")
    is_next = fm.next_sentence(loaded, first, second)
    fig = bar(["IsNext", "NotNext"], [is_next, 1 - is_next], t("mlm.nsp_title"),
              value_title=t("mlm.axis_probability"), highlight=[is_next >= 0.5, is_next < 0.5], height=260)
    filled = ""
    if fm.BLANK.search(first) or fm.BLANK.search(second):  # pre-training did both tasks on the same input
        result = fm.fill_mask(loaded, first, 1, pair=second)
        filled = t("mlm.nsp_filled", text=result.filled)
    return badge(loaded), fig, filled, results_visible(True)


# ----------------------------------------------------------------------------------------------------------------
# Model card


@friendly_errors
def card(model_id: str):
    """→ table, explanation."""
    if char_views.is_char_bert(model_id):
        return char_views.card()
    c = pretraining.model_card(model_id)
    cfg = c.config
    total_name = t("mlm.card_total_bert") if c.pooler else t("mlm.card_total_distil")
    rows = [[total_name if part == "total" else _part(part), f"{count:,}"] for part, count in c.breakdown.items()]
    rows += [[_part(part), f"{count:,}"] for part, count in c.heads.items()]
    rows.append([t("mlm.card_total_heads"), f"{c.breakdown['total'] + sum(c.heads.values()):,}"])
    kind = t("mlm.card_kind_distil") if cfg.model_type == "distilbert" else "BERT"
    source = t("mlm.card_source_config") if c.source == pretraining.CONFIG_FILE else t("mlm.card_source_known")
    gap = c.breakdown["total"] - c.seed_formula
    rest = gap - c.omitted_biases - c.pooler
    text = t("mlm.card_text", model=c.model_id, kind=kind, source=source, layers=cfg.num_hidden_layers,
             hidden=cfg.hidden_size, heads=cfg.num_attention_heads, ffn=cfg.intermediate_size,
             vocab=f"{cfg.vocab_size:,}", positions=cfg.max_position_embeddings, formula=f"{c.seed_formula:,}",
             total=f"{c.breakdown['total']:,}", gap=f"{gap:,}", biases=f"{c.omitted_biases:,}")
    if c.pooler:
        text += " " + t("mlm.card_pooler", pooler=f"{c.pooler:,}")
    if rest:
        text += " " + t("mlm.card_ffn_rest", rest=f"{rest:,}")
    if c.model_id in pretraining.SEED_SIZES:
        text += "\n\n" + _seed_sizes()
    return table(rows, "mlm.col_part", "mlm.col_parameters"), text


def _part(name: str) -> str:
    """A row of core.transformer.param_count's breakdown in the learner's language."""
    return t(f"mlm.part.{PART_KEYS[name]}") if name in PART_KEYS else name


def _seed_sizes() -> str:
    """BERT-base beside BERT-large, both counted from their configs: where the extra parameters sit."""
    base, large = (pretraining.model_card(model_id).breakdown for model_id in pretraining.SEED_SIZES)
    embeddings = {name: sum(v for k, v in parts.items() if k.startswith("embeddings:"))
                  for name, parts in (("base", base), ("large", large))}
    layers = {name: parts["total"] - embeddings[name] - parts.get("pooler", 0)
              for name, parts in (("base", base), ("large", large))}
    return t("mlm.card_sizes", base=f"{base['total']:,}", large=f"{large['total']:,}",
             ratio=f"{large['total'] / base['total']:.2f}", large_layers=f"{layers['large']:,}",
             base_layers=f"{layers['base']:,}", large_embeddings=f"{embeddings['large']:,}",
             base_embeddings=f"{embeddings['base']:,}")


# ----------------------------------------------------------------------------------------------------------------
# Contextual vs static


@friendly_errors
@gpu_handler
def bank(model_id: str, word: str, first: str, second: str, third: str, progress=gr.Progress()):
    """→ notice, contextual figure, static figure, explanation."""
    progress(0.1, desc=t("mlm.bank_progress"))
    loaded, missing = registry.load_or_fallback("mlm", model_id)
    result = pretraining.contextual_vs_static(loaded, word, [first, second, third])
    labels = [f"{i + 1}: {s[:28]}{'…' if len(s) > 28 else ''}" for i, s in enumerate(result.sentences)]
    numbers = [str(i + 1) for i in range(len(labels))]  # the columns by number: three sentences overlapped there
    contextual = heatmap(result.contextual, numbers, labels,
                         t("mlm.bank_contextual_title", word=result.word, model=result.contextual_model),
                         zmin=0, zmax=1, height=380)
    if result.static is None:
        static = empty_figure(result.static_note or t("mlm.bank_no_static"))
    else:
        static = heatmap(np.round(result.static, 6), numbers, labels,
                         t("mlm.bank_static_title", word=result.word, model=result.static_model),
                         zmin=0, zmax=1, height=380)
    off = result.contextual[~np.eye(len(labels), dtype=bool)]
    text = t("mlm.bank_text", word=result.word, low=f"{off.min():.2f}", high=f"{off.max():.2f}")
    return badge(loaded, missing), contextual, static, text
