"""The masked-LM tab's handlers (demo/mlm/mlm.py, demo/mlm/handlers.py): what the learner sees, offline and online, in
both languages, batched and one at a time. The masked LM itself is tests/mlm/test_mlm.py."""
from types import SimpleNamespace

import gradio as gr
import pytest
import transformers

from core.mlm import mlm as fm
from core.loading import registry
from core.text.errors import UserInputError
from core.text.i18n import using_language
from demo.mlm import mlm, handlers as mlm_handlers
from tests import chinese_checkpoints

ZH_TEXTS = chinese_checkpoints.MLM_TEXTS
BATCH_TEXTS = ["my dog is [MASK] .", "the man went to the [MASK] to buy a gallon of milk ."]


def noop_progress(*args, **kwargs):
    pass


@pytest.fixture(scope="module")
def pretraining_folder(tiny_checkpoint):
    return str(tiny_checkpoint("BertForPreTraining"))


@pytest.fixture(scope="module")
def chinese_mlm_folder(tmp_path_factory):
    return str(chinese_checkpoints.write_mlm(tmp_path_factory.mktemp("bert_chinese_tiny"), ZH_TEXTS))


def test_demo_fill_compare_nsp_handlers(pretraining_folder):
    notice, filled, figure, table, _, shown = mlm.fill(pretraining_folder, "my _ is [MASK] .", 4,
                                                    progress=noop_progress)
    assert shown == {"__type__": "update", "visible": True}
    assert "BertForPreTraining" in notice and filled.startswith("**Filled in:**")
    assert len(figure.data) == 2 and len(mlm_handlers.rows_of(table)) == 8  # one bar chart per blank, 4 rows per blank
    notice, summary, both, left, _ = mlm.compare(pretraining_folder, mlm.COMPARE_EXAMPLES[0][0], 5,
                                              progress=noop_progress)
    assert "Left only" in summary and len(both.data[0].x) == len(left.data[0].x) == 5
    notice, figure, filled, _ = mlm.nsp(pretraining_folder, *mlm.NSP_EXAMPLES[0], progress=noop_progress)
    assert list(figure.data[0].y) == ["IsNext", "NotNext"] and sum(figure.data[0].x) == pytest.approx(1.0)
    assert "masked LM" in filled


def test_demo_offline_views(pretraining_folder):
    # Offline the char-BERT answers in bert-base-uncased's place (tests/mlm/test_mlm_char_demo.py), naming the download.
    notice, _, figure, table, _, shown = mlm.fill("bert-base-uncased", "my dog is _____ .", 5, progress=noop_progress)
    assert "`hf download bert-base-uncased`" in notice and "char-BERT" in notice
    assert len(mlm_handlers.rows_of(table)) == 5 and len(figure.data) == 5  # one row and one chart per character
    assert shown == {"__type__": "update", "visible": True}
    note, highlighted, table, *figures = mlm.inputs("bert-base-uncased", "my dog is cute", "he likes playing",
                                                     progress=noop_progress)
    assert "MiniLM" in note and len(mlm_handlers.rows_of(table)) == 10
    assert highlighted.value[6] == {"token": "he ", "class_or_confidence": "segment B (1)"}
    assert len(figures) == 4 and all(f.data[0].z.shape[0] == 10 for f in figures)
    highlighted, table, counts, positions, summary = mlm.masking("bert-base-uncased", "my dog is hairy", 0, 1000)
    assert len(mlm_handlers.rows_of(table)) == 1 and sum(counts.data[0].x) == pytest.approx(1.0) and "max(1, round" in summary
    assert sum(positions.data[0].y) == pytest.approx(1.0)  # one token chosen per draw
    rows, text = mlm.card("bert-base-uncased")
    assert "108,808,704" in text and "109,482,240" in text and "82,944" in text and "590,592" in text
    assert len(mlm_handlers.rows_of(rows)) > 10


@pytest.mark.parametrize("nothing", [None, "", "  "])
def test_a_masking_call_that_names_no_checkpoint_says_so_not_none(nothing):
    """An API call's null (or a cleared picker) is tokenised with MiniLM-L6's vocabulary, and the note says no
    checkpoint was named: it used to say "None is not on this machine" (the API sweep)."""
    for lang, said in [("en", "No checkpoint was named"), ("zh", "没有填写检查点")]:
        with using_language(lang):
            *_, summary = mlm.masking(nothing, "my dog is hairy", 0, 1000)
            line = registry.tokens_line(nothing, UserInputError("registry.no_id"))
        assert said in summary and "None" not in summary and "MiniLM" in summary, summary
        assert line.startswith(said) and "None" not in line and registry.MINILM_ID in line, line


def test_demo_bad_input_becomes_gr_error(pretraining_folder):
    with pytest.raises(gr.Error, match="Put \\[MASK\\]"):
        mlm.fill(pretraining_folder, "my dog is hairy", 5, progress=noop_progress)
    with pytest.raises(gr.Error, match="Type a sentence"):
        mlm.masking("bert-base-uncased", "", 0, 1000)
    with pytest.raises(gr.Error, match="Pick a word"):
        mlm.mask_chosen_word("my dog", None)
    assert mlm.mask_chosen_word("my dog is hairy", 3) == "my dog is _____"  # one "_" per character


def test_tab_builds_with_its_api_names():
    with gr.Blocks() as blocks:
        mlm.build()
    names = {fn.api_name for fn in blocks.fns.values()}
    assert {"mlm_fill", "mlm_words", "mlm_mask_word", "mlm_compare", "mlm_inputs", "mlm_masking", "mlm_nsp",
            "mlm_card", "mlm_bank"} <= names


def test_batched_handler_gives_each_request_its_own_answer(pretraining_folder):
    notices, filled, figures, tables, _, shown = mlm.fill_batch([pretraining_folder] * 3,
                                                             [BATCH_TEXTS[0], "no blank here", BATCH_TEXTS[1]],
                                                             [4, 4, 3])
    assert len(notices) == len(filled) == len(figures) == len(tables) == len(shown) == 3
    assert "cannot be filled in" in notices[1] and "no blank" in notices[1] and tables[1] == []
    assert [update["visible"] for update in shown] == [True, False, True]  # the refused request's results hidden
    for i, (text, k) in enumerate([(BATCH_TEXTS[0], 4), (BATCH_TEXTS[1], 3)]):
        alone = mlm.fill(pretraining_folder, text, k, progress=noop_progress)
        j = 0 if i == 0 else 2
        assert filled[j] == alone[1] and notices[j] == alone[0]
        assert [row[:3] for row in mlm_handlers.rows_of(tables[j])] == [row[:3] for row in mlm_handlers.rows_of(alone[3])]


def zh_request():
    """What friendly_errors reads from a browser that chose 中文 (the header toggle's cookie)."""
    return SimpleNamespace(headers={"cookie": "plm_lang=zh", "accept-language": "en-US"})


def test_fill_answers_in_chinese_and_refuses_in_chinese(chinese_mlm_folder):
    notice, filled, figure, table, _, _ = mlm.fill(chinese_mlm_folder, ZH_TEXTS[0], 3, progress=noop_progress,
                                             request=zh_request())
    assert filled.startswith("**填空结果：**") and "每个空格的前 3 个候选" in figure.layout.title.text
    assert table["headers"] == ["空格", "名次", "词元", "概率"] and len(table["data"]) == 3
    with pytest.raises(gr.Error) as refused:
        mlm.fill(chinese_mlm_folder, "今天天气很好", 3, progress=noop_progress, request=zh_request())
    assert refused.value.message.startswith("没有可填的空格。")
    with using_language("zh"):  # core's errors render in the current language wherever they are shown
        with pytest.raises(UserInputError) as error:
            fm.fill_mask(registry.load("mlm", chinese_mlm_folder), "x" * 20_001)
        assert str(error.value) == "文本有 20,001 个字符，上限是 20,000。请缩短。"


def test_offline_chinese_preset_says_what_to_fetch_in_the_learners_language():
    preset = next(p for p in mlm.FILL_PRESETS if p.slug == "weather-zh-short")
    model_id, text, top_k, *_ = preset.values  # then the sampling controls (issue #36)
    notice, filled, figure, table, _, _ = mlm.fill(model_id, text, top_k, progress=noop_progress, request=zh_request())
    assert "hf download bert-base-chinese\n" in notice and "本机还没有这个模型" in notice and table == []
    notice, *_ = mlm.fill(model_id, text, top_k, progress=noop_progress)
    assert "hf download bert-base-chinese\n" in notice and "is not on this machine" in notice


def test_batched_fill_answers_each_request_in_its_own_language(chinese_mlm_folder):
    """Gradio 6 gives a batched function one gr.Request per sample (queueing.py); each gets its own language."""
    english = SimpleNamespace(headers={"accept-language": "en-US"})
    notices, filled, figures, tables, _, _ = mlm.fill_batch([chinese_mlm_folder] * 3, ["没有空格", "没有空格", ZH_TEXTS[0]],
                                                      [3, 3, 3], request=[zh_request(), english, zh_request()])
    assert notices[0].startswith("**这句话无法填空。** 没有可填的空格")
    assert notices[1].startswith("**This sentence cannot be filled in.** There is no blank")
    assert filled[2].startswith("**填空结果：**") and tables[2]["headers"][0] == "空格"


def test_wordpiece_splits_chinese_into_characters_in_both_vocabularies(chinese_mlm_folder):
    """The tokenizer view's 中文 preset: bert-base-chinese's vocabulary and bert-base-uncased's (MiniLM-L6, the
    offline fallback) both read 我学中文 as four single-character tokens (BERT's pre-tokenizer isolates CJK)."""
    preset = next(p for p in mlm.INPUT_PRESETS if p.slug == "wordpiece-zh")
    _, first, second = preset.values
    expected = ["[CLS]", *first, "[SEP]", *second, "[SEP]"]
    for model_id in (chinese_mlm_folder, preset.values[0]):  # the tiny Chinese folder; offline, MiniLM-L6
        note, highlighted, table, *figures = mlm.inputs(model_id, first, second, progress=noop_progress,
                                                        request=zh_request())
        assert [row[1] for row in mlm_handlers.rows_of(table)] == expected
        assert "每个汉字单独隔开" in note or "把每个汉字单独隔开" in note
        assert table["headers"] == ["位置", "词元", "编号", "句段"]
    reference = transformers.AutoTokenizer.from_pretrained(chinese_mlm_folder)
    assert reference.tokenize(first) == list(first)
