"""BERT masked LM tab (issue #7): fill in blanks, both sides vs left only, what goes in, masking, NSP, the card.

The layout, examples, presets and lesson; the handlers are in demo/mlm/handlers.py. Every string the learner sees is
a key of the ``mlm`` section of assets/i18n/*.yaml.
"""
from __future__ import annotations

import gradio as gr

from core.loading.checkpoints import CHAR_BERT_ID, CHECKPOINTS
from core.text.limits import FILL_BATCH, MAX_DRAWS, MAX_TEXT_CHARS, MAX_WORD_CHARS
from demo.server import result_cache
from demo.kit import lessons, presets, sampling
from demo.mlm import train as mlm_train
from demo.why import encoders as why_encoders
from demo.mlm import char_views
from demo.kit.widgets import TABLE_BUTTONS, LATEX, model_picker
from demo.server.downloads import TOKENIZER, model_event
from demo.kit.figures import COLORWAY
from demo.kit.i18n import label
from demo.mlm.handlers import (bank, card, compare, fill, fill_batch, inputs, mask_chosen_word, masking, nsp,
                               word_choices)

TITLE = "BERT masked LM"
HISTORY = [(13, "2018", "BERT", "pretrain", "my-dog-is")]  # the Overview's timeline

# A blank written as underscores is one [MASK] for a Hub BERT and one [MASK] per underscore for the char-BERT, which
# answers offline: "_____" asks it for five characters (seed §6's "my dog is hairy").
FILL_EXAMPLES = [
    [char_views.HAIRY],
    ["The capital of France is [MASK]."],
    ["The man went to the _ and bought a gallon of [mask]."],
    ["今天天气很[MASK]，我们不得不取消户外运动。"],
    ["今天天气很[MASK]。"],  # seed §13.1 on bert-base-chinese
]
COMPARE_EXAMPLES = [
    ["The weather today is very ___, so we had to cancel the outdoor game."],
    ["今天天气很[MASK]，我们不得不取消户外运动。"],
    ["She opened the ____ and let the cat out of the house."],
]
INPUT_EXAMPLES = [
    ["my dog is cute", "he likes playing"],
    ["strawberries are flightless", "unaffable penguins"],
    ["my dog is hairy", ""],
    ["我学中文", "北京大学"],  # WordPiece: every Chinese character is one token
]
MASKING_EXAMPLES = [
    ["my dog is hairy", 0, 10_000],
    ["The man went to the store and bought a gallon of milk because the fridge was empty.", 1, 10_000],
]
NSP_EXAMPLES = [
    ["the man went to [MASK] store", "he bought a gallon [MASK] milk"],  # seed §6: IsNext
    ["the man [MASK] to the store", "penguin [MASK] are flightless birds"],  # seed §6: NotNext
    ["my dog is cute", "he likes playing"],
]
BANK_EXAMPLES = [
    ["bank", "I deposited my pay cheque at the bank.", "We had a picnic on the river bank.",
     "The bank raised its interest rates."],
    ["bat", "The bat flew out of the cave at dusk.", "He swung the bat and hit the ball.",
     "A bat hung upside down in the barn."],
]

MLM_ID = CHECKPOINTS["mlm"][0]  # bert-base-uncased: the seed's model; offline, views fall back to MiniLM
ZH_ID = "bert-base-chinese"  # 21,128 entries, one per Chinese character (and some English pieces)
P = presets.Preset
GREEDY = char_views.GREEDY  # a Hub checkpoint fills in one pass: the sampling controls stay at their default
# model, text, top-k shown, temperature, top-k cut, top-p, seed; the char-BERT's presets are demo/mlm/char_views.py's
FILL_PRESETS = [P("my-dog-is", label("mlm.preset_my_dog_is"), (MLM_ID, FILL_EXAMPLES[0][0], 5, *GREEDY), "§13"),
                P("capital-of-france", label("mlm.preset_capital"), (MLM_ID, FILL_EXAMPLES[1][0], 5, *GREEDY), "§13"),
                P("gallon-of-milk", label("mlm.preset_gallon"), (MLM_ID, FILL_EXAMPLES[2][0], 5, *GREEDY), "§13"),
                *char_views.FILL_PRESETS,
                P("weather-zh", label("mlm.preset_weather_zh"), (ZH_ID, FILL_EXAMPLES[3][0], 5, *GREEDY), "§13.1"),
                P("weather-zh-short", label("mlm.preset_weather_zh_short"), (ZH_ID, FILL_EXAMPLES[4][0], 5, *GREEDY),
                  "§13.1")]
COMPARE_PRESETS = [P("gpt-vs-bert", label("mlm.preset_gpt_vs_bert"), (MLM_ID, COMPARE_EXAMPLES[0][0], 8), "§13.1"),
                   P("gpt-vs-bert-zh", label("mlm.preset_gpt_vs_bert_zh"), (ZH_ID, COMPARE_EXAMPLES[1][0], 8),
                     "§13.1"),
                   P("opened-the", label("mlm.preset_opened_the"), (MLM_ID, COMPARE_EXAMPLES[2][0], 8), "§13.1"),
                   P("char-gpt-vs-char-bert", label("mlm.preset_char_sides"), (CHAR_BERT_ID, COMPARE_EXAMPLES[0][0], 8),
                     "§13.1"),
                   P("char-sides-opened", label("mlm.preset_char_opened"), (CHAR_BERT_ID, COMPARE_EXAMPLES[2][0], 8),
                     "§13.1")]
INPUT_PRESETS = [P("bert-input", label("mlm.preset_bert_input"), (MLM_ID, *INPUT_EXAMPLES[0]), "§13"),
                 P("wordpiece", label("mlm.preset_wordpiece"), (MLM_ID, *INPUT_EXAMPLES[1]), "§13"),
                 P("single-sentence", label("mlm.preset_single_sentence"), (MLM_ID, *INPUT_EXAMPLES[2]), "§13"),
                 P("wordpiece-zh", label("mlm.preset_wordpiece_zh"), (ZH_ID, *INPUT_EXAMPLES[3]), "§13")]
MASKING_PRESETS = [P("mlm-80-10-10", label("mlm.preset_80_10_10"), (MLM_ID, *MASKING_EXAMPLES[0]), "§13"),
                   P("masking-long", label("mlm.preset_masking_long"), (MLM_ID, *MASKING_EXAMPLES[1]), "§13")]
NSP_PRESETS = [P("nsp-isnext", label("mlm.preset_nsp_isnext"), (MLM_ID, *NSP_EXAMPLES[0]), "§13"),
               P("nsp-notnext", label("mlm.preset_nsp_notnext"), (MLM_ID, *NSP_EXAMPLES[1]), "§13"),
               P("nsp-dog", label("mlm.preset_nsp_dog"), (MLM_ID, *NSP_EXAMPLES[2]), "§13")]
CARD_PRESETS = [P("bert-base-parameters", label("mlm.preset_card_bert"), (MLM_ID,), "§13"),
                P("distilbert-parameters", label("mlm.preset_card_distil"), ("distilbert-base-uncased",), "§13"),
                P("bert-chinese-parameters", label("mlm.preset_card_chinese"), (ZH_ID,), "§13"),
                P("bert-large-parameters", label("mlm.preset_card_large"), ("bert-large-uncased",), "§13.2")]
BANK_PRESETS = [P("contextual-bank", label("mlm.preset_bank"), (MLM_ID, *BANK_EXAMPLES[0]), "§13"),
                P("contextual-bat", label("mlm.preset_bat"), (MLM_ID, *BANK_EXAMPLES[1]), "§13")]
# (seed §, question, answer, view key, preset)
LESSON = [
    ("§13", label("mlm.lesson_1_q"), label("mlm.lesson_1_a"), "card", "bert-base-parameters"),
    ("§13", label("mlm.lesson_2_q"), label("mlm.lesson_2_a"), "inputs", "bert-input"),
    ("§13", label("mlm.lesson_3_q"), label("mlm.lesson_3_a"), "masking", "mlm-80-10-10"),
    ("§13", label("mlm.lesson_4_q"), label("mlm.lesson_4_a"), "inputs", "wordpiece-zh"),
    ("§13.1", label("mlm.lesson_5_q"), label("mlm.lesson_5_a"), "fill", "weather-zh-short"),
]


def build() -> None:
    gr.Markdown(label("mlm.intro"), latex_delimiters=LATEX)
    lesson_slot = gr.Column()
    with gr.Row():
        model_id = model_picker("mlm", first=(CHAR_BERT_ID,))  # the char-BERT: trained here, always offline
        notice = gr.Markdown(label("mlm.notice_start"))
    gr.Markdown(label("mlm.checkpoints"))
    with gr.Tabs(overflow_behavior="wrap"):
        with gr.Tab(label("mlm.tab_fill"), id="fill") as fill_tab:
            with gr.Row():
                text = gr.Textbox(value=FILL_EXAMPLES[0][0], label=label("mlm.fill_text_label"), scale=4,
                                  max_length=MAX_TEXT_CHARS)
                top_k = gr.Slider(1, 20, value=5, step=1, label=label("mlm.top_k"), scale=1)
            # issue #36: the char-BERT's iterative fill draws each character with the controls of every tab that
            # generates; open, as they are there (a Hub checkpoint's one-shot fill says it draws nothing)
            with gr.Accordion(label("mlm.char_bert.sampling_accordion"), open=True):
                fill_controls = sampling.controls(*GREEDY, max_top_k=char_views.MAX_TOP_K)
            with gr.Row():
                # The words come from the tokenizer when the list is opened or the text changes, not while the app
                # is built (which would load the tokenizer, and torch with it: core/loading/lazy.py).
                word = gr.Dropdown(choices=[], value=None, label=label("mlm.word_to_hide"), scale=3)
                mask_button = gr.Button(label("mlm.mask_word_button"), scale=1)
                fill_button = gr.Button(label("mlm.fill_button"), variant="primary", scale=1)
            fill_bar = gr.Column()
            with gr.Column() as fill_results:  # hidden while the checkpoint is missing: its card is the notice
                filled = gr.Markdown()
                fill_plot = gr.Plot(label=label("mlm.predictions"), show_label=False)
                # under the figure, full width: sampling gives it 10 columns, which a column beside it cut to 440 px
                fill_table = gr.Dataframe(headers=[""] * 4, interactive=False, label=label("mlm.fill_table"),
                                          buttons=TABLE_BUTTONS)
                next_char_plot = gr.Plot(show_label=False, visible=False)  # the char-BERT's first draw: its cut
            fill_inputs = [model_id, text, top_k, *fill_controls]
            fill_outputs = [notice, filled, fill_plot, fill_table, next_char_plot, fill_results]
            gr.on([text.change, word.focus], word_choices, [text, word], word, api_name="mlm_words")
            mask_button.click(mask_chosen_word, [text, word], text, api_name="mlm_mask_word")
            # batch=True: requests that arrive together (a class pressing Fill at once) share one forward pass;
            # benchmarks/batching.py measures the throughput against fill (unbatched).
            model_event(fill_button.click, {"mlm": model_id}, fill_batch, fill_inputs, fill_outputs,
                        api_name="mlm_fill", batch=True, max_batch_size=result_cache.max_batch(FILL_BATCH),
                        cache_results=True)
            # The first sub-tab: shown (and computed) when the tab opens.
            fill_view = presets.View("mlm", "fill", fill_inputs, fill_outputs, fill, FILL_PRESETS, where=fill_tab,
                                     seed=fill_controls[3])
            with fill_bar:
                fill_view.buttons()

        with gr.Tab(label("mlm.tab_compare"), id="compare") as compare_tab:
            gr.Markdown(label("mlm.compare_intro"))
            with gr.Row():
                compare_text = gr.Textbox(value=COMPARE_EXAMPLES[0][0], label=label("mlm.one_blank_label"), scale=4,
                                          max_length=MAX_TEXT_CHARS)
                compare_k = gr.Slider(1, 20, value=8, step=1, label=label("mlm.top_k"), scale=1)
            compare_button = gr.Button(label("mlm.compare_button"), variant="primary")
            with gr.Column() as compare_results:
                compare_md = gr.Markdown()
                with gr.Row():
                    both_plot, left_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            compare_outputs = [notice, compare_md, both_plot, left_plot, compare_results]
            model_event(compare_button.click, {"mlm": model_id}, compare, [model_id, compare_text, compare_k],
                        compare_outputs, api_name="mlm_compare")
            presets.View("mlm", "compare", [model_id, compare_text, compare_k], compare_outputs,
                         compare, COMPARE_PRESETS, where=compare_tab).buttons()

        with gr.Tab(label("mlm.tab_inputs"), id="input") as inputs_tab:
            gr.Markdown(label("mlm.inputs_intro"))
            with gr.Row():
                first = gr.Textbox(value="my dog is cute", label=label("mlm.sentence_a"), max_length=MAX_TEXT_CHARS)
                second = gr.Textbox(value="he likes playing", label=label("mlm.sentence_b_optional"),
                                    max_length=MAX_TEXT_CHARS)
            inputs_button = gr.Button(label("mlm.inputs_button"), variant="primary")
            inputs_md = gr.Markdown()
            with gr.Row():
                tokens = gr.HighlightedText(label=label("mlm.tokens_by_segment"), combine_adjacent=False, scale=3,
                                            color_map={"segment A (0)": COLORWAY[0], "segment B (1)": COLORWAY[1]})
                token_table = gr.Dataframe(headers=[""] * 4, interactive=False,
                                           label=label("mlm.tokens_table"), scale=2, max_height=320,
                                           buttons=TABLE_BUTTONS)
            with gr.Row():
                token_plot, segment_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            with gr.Row():
                position_plot, sum_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            model_event(inputs_button.click, {"mlm": model_id}, inputs, [model_id, first, second],
                        [inputs_md, tokens, token_table, token_plot, segment_plot, position_plot, sum_plot],
                        api_name="mlm_inputs", queue={}, cache_results=True)
            inputs_view = presets.View("mlm", "inputs", [model_id, first, second],
                                       [inputs_md, tokens, token_table, token_plot, segment_plot, position_plot,
                                        sum_plot], inputs, INPUT_PRESETS, where=inputs_tab)
            inputs_view.buttons()

        with gr.Tab(label("mlm.tab_masking"), id="masking") as masking_tab:
            gr.Markdown(label("mlm.masking_intro"))
            with gr.Row():
                masking_text = gr.Textbox(value="my dog is hairy", label=label("mlm.sentence"), scale=4,
                                          max_length=MAX_TEXT_CHARS)
                seed = gr.Number(value=0, precision=0, label=label("mlm.seed"), scale=1)
                draws = gr.Slider(100, MAX_DRAWS, value=10_000, step=100, label=label("mlm.draws"),
                                  scale=2)
            masking_button = gr.Button(label("mlm.masking_button"), variant="primary")
            with gr.Row():
                draw_view = gr.HighlightedText(label=label("mlm.one_draw"), combine_adjacent=False,
                                               scale=3)
                draw_table = gr.Dataframe(headers=[""] * 4,
                                          interactive=False, label=label("mlm.chosen_tokens"), scale=2,
                                          buttons=TABLE_BUTTONS)
            masking_md = gr.Markdown()
            with gr.Row():
                counts_plot, positions_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            # its tokenizer comes through the download step; the handler runs on the view's own slots
            model_event(masking_button.click, {TOKENIZER: model_id}, masking, [model_id, masking_text, seed, draws],
                        [draw_view, draw_table, counts_plot, positions_plot, masking_md], api_name="mlm_masking",
                        queue={})
            masking_view = presets.View("mlm", "masking", [model_id, masking_text, seed, draws],
                                        [draw_view, draw_table, counts_plot, positions_plot, masking_md], masking,
                                        MASKING_PRESETS, where=masking_tab)
            masking_view.buttons()

        with gr.Tab(label("mlm.tab_nsp"), id="nsp") as nsp_tab:
            gr.Markdown(label("mlm.nsp_intro"))
            with gr.Row():
                nsp_first = gr.Textbox(value=NSP_EXAMPLES[0][0], label=label("mlm.sentence_a"),
                                       max_length=MAX_TEXT_CHARS)
                nsp_second = gr.Textbox(value=NSP_EXAMPLES[0][1], label=label("mlm.sentence_b"),
                                        max_length=MAX_TEXT_CHARS)
            nsp_button = gr.Button(label("mlm.nsp_button"), variant="primary")
            with gr.Column() as nsp_results:
                nsp_plot = gr.Plot(show_label=False)
                nsp_md = gr.Markdown()
            nsp_outputs = [notice, nsp_plot, nsp_md, nsp_results]
            model_event(nsp_button.click, {"mlm": model_id}, nsp, [model_id, nsp_first, nsp_second], nsp_outputs,
                        api_name="mlm_nsp")
            presets.View("mlm", "nsp", [model_id, nsp_first, nsp_second], nsp_outputs, nsp,
                         NSP_PRESETS, where=nsp_tab).buttons()

        with gr.Tab(label("mlm.tab_card"), id="card") as card_tab:
            card_button = gr.Button(label("mlm.card_button"), variant="primary")
            card_md = gr.Markdown()
            card_table = gr.Dataframe(headers=[""] * 2, interactive=False,
                                      label=label("mlm.card_table"), buttons=TABLE_BUTTONS)
            card_button.click(card, model_id, [card_table, card_md], api_name="mlm_card")
            card_view = presets.View("mlm", "card", [model_id], [card_table, card_md], card, CARD_PRESETS,
                                     where=card_tab)
            card_view.buttons()

        with gr.Tab(label("mlm.tab_bank"), id="bank") as bank_tab:
            gr.Markdown(label("mlm.bank_intro"))
            with gr.Row():
                bank_word = gr.Textbox(value="bank", label=label("mlm.word"), scale=1, max_length=MAX_WORD_CHARS)
                bank_1 = gr.Textbox(value=BANK_EXAMPLES[0][1], label=label("mlm.sentence_1"), scale=2,
                                    max_length=MAX_TEXT_CHARS)
                bank_2 = gr.Textbox(value=BANK_EXAMPLES[0][2], label=label("mlm.sentence_2"), scale=2,
                                    max_length=MAX_TEXT_CHARS)
                bank_3 = gr.Textbox(value=BANK_EXAMPLES[0][3], label=label("mlm.sentence_3"), scale=2,
                                    max_length=MAX_TEXT_CHARS)
            bank_button = gr.Button(label("mlm.bank_button"), variant="primary")
            bank_md = gr.Markdown()
            with gr.Row():
                contextual_plot, static_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            model_event(bank_button.click, {"mlm": model_id}, bank, [model_id, bank_word, bank_1, bank_2, bank_3],
                        [notice, contextual_plot, static_plot, bank_md], api_name="mlm_bank")
            presets.View("mlm", "bank", [model_id, bank_word, bank_1, bank_2, bank_3],
                         [notice, contextual_plot, static_plot, bank_md], bank, BANK_PRESETS, where=bank_tab).buttons()
        why_encoders.build_masked()  # why this word or character: attributions and the logit lens (issue #35)

        mlm_train.build()  # retrain the char-BERT: a short run in the session's training slot

    views = {"card": card_view, "inputs": inputs_view, "masking": masking_view, "fill": fill_view}
    with lesson_slot:
        lessons.lesson_table(LESSON, views)
