"""demo/transformer/tokenizer_lab.py, the Transformer & GPT tab's "Tokenizer lab" sub-tab: its presets fill every output, the
figure marks byte fragments without relying on colour, the merge steps replay, both languages, clear errors."""
from __future__ import annotations

import gradio as gr
import pytest

from core.text.i18n import using_language
from demo.kit import token_figures
from demo.transformer import tokenizer_lab


def run(slug: str):
    preset = {p.slug: p for p in tokenizer_lab.PRESETS}[slug]
    return tokenizer_lab.run_preset(*preset.resolved())


def test_straw_berries_fills_every_output_offline():
    note, stats, strips, step_note, step_plot, merges = run("straw-berries")
    names = stats.iloc[:, 0].tolist()
    assert names == ["Unicode characters", "UTF-8 bytes", "WordPiece (MiniLM-L6)", "BPE learned here"]
    rows = {name: row for name, row in zip(names, stats.values.tolist())}
    assert rows["WordPiece (MiniLM-L6)"][2:5] == [2, 0.1667, 6]  # straw ##berries: 2 tokens, 12 characters
    assert rows["Unicode characters"][2:5] == [12, 1, 1] and rows["UTF-8 bytes"][5] == 0
    wordpiece = strips.data[2]
    assert list(wordpiece.text) == ["straw", "##berries"] and list(wordpiece.base) == [0, 5]  # the seed's example
    assert [trace.y[0] for trace in strips.data] == names and sum(strips.data[0].x) == 12  # bytes = characters
    assert "hf download gpt2" in note and "hf download bert-base-chinese" in note  # the two missing: one card each
    assert "core/transformer/bpe.py" in note and "vocabulary 1,000 = 256 byte symbols + 744 merges" in note
    assert step_note.startswith("**Merge 1**") and "“␣” + “t” → “␣t”" in step_note
    assert step_plot.data[0].y[0].startswith("␣ + t") and len(merges) == 40
    assert merges.iloc[0, 1:5].tolist() == ["␣", "t", "␣t", 32763]


def test_chinese_preset_marks_the_byte_fragments():
    note, stats, strips, step_note, step_plot, merges = run("wo-xue-zhongwen")
    rows = {row[0]: row for row in stats.values.tolist()}
    assert rows["UTF-8 bytes"][2:6] == [12, 3, 0.3333, 12] and rows["Unicode characters"][5] == 0
    byte_row = strips.data[1]
    assert list(byte_row.marker.pattern.shape) == ["/"] * 12 and all(text.startswith("�") for text in byte_row.text)
    assert set(byte_row.marker.line.color) == {token_figures.FRAGMENT_LINE}  # hatched and outlined: not told by colour alone
    learned = strips.data[3]  # the BPE learned on the Tang poems: fragments hatched, whole characters not
    hatched = [shape == "/" for shape in learned.marker.pattern.shape]
    assert sum(hatched) == rows["BPE learned here"][5] > 0
    assert all(text.startswith("�") == flag for text, flag in zip(learned.text, hatched))
    assert "Byte fragments" in note and "UTF-8 bytes (12)" in note
    assert "Merge 4" in step_note and "→ “。”" in step_note  # the Tang poems' BPE rebuilds a character from bytes


def test_one_sentence_two_languages():
    note, stats, strips, *_ = run("two-languages")
    rows = {row[0]: row for row in stats.values.tolist()}
    chars, bytes_ = rows["Unicode characters"][2], rows["UTF-8 bytes"][2]
    assert (chars, bytes_) == (33, 23 + 10 * 3) and f"**{chars}** characters and **{bytes_}** UTF-8 bytes" in note
    assert rows["WordPiece (MiniLM-L6)"][3] < 1 < rows["UTF-8 bytes"][3]  # subwords: fewer tokens than characters


def test_the_step_slider_replays_another_merge_without_retraining():
    preset = tokenizer_lab.EXAMPLES[0]
    first = tokenizer_lab.show_step(*preset[:3], 1)
    tenth = tokenizer_lab.show_step(*preset[:3], 10)
    assert first[0].startswith("**Merge 1**") and tenth[0].startswith("**Merge 10**")
    assert tenth[2].equals(first[2])  # the same training (cached), the same merges table
    last = tokenizer_lab.show_step(*preset[:3], 40)
    assert last[0].startswith("**Merge 40**")


def test_results_in_chinese():
    with using_language("zh"):
        note, stats, strips, step_note, *_ = run("wo-xue-zhongwen")
    assert stats.columns[0] == "分词器" and stats.iloc[1, 0] == "UTF-8 字节"
    assert note.startswith("文本有 **4** 个字符") and "hf download gpt2" in note and step_note.startswith("**第 4 次合并**")
    assert "各分词器的切分" in strips.layout.title.text


@pytest.mark.parametrize("values, message", [
    (("", "moby_dick", 1000, 1), "empty"),
    (("x" * 2500, "moby_dick", 1000, 1), "at most 2,000"),
    (("abc", "moby_dick", 100, 1), "between 260 and 5000"),
    (("abc", "moby_dick", None, 1), "between 260 and 5000"),
    (("abc", "moby_dick", 1000, 41), "between 1 and 40"),
    (("abc", "no-such-corpus", 1000, 1), "Pick a corpus"),
])
def test_bad_input_gets_a_clear_message(values, message):
    with pytest.raises(gr.Error, match=message):
        tokenizer_lab.cut_text(*values)


def test_the_sub_tab_builds_with_its_api_names_and_opens_on_its_default():
    with gr.Blocks() as blocks:
        with gr.Tabs():
            view = tokenizer_lab.build_tab()
    names = {dep.api_name for dep in blocks.fns.values()}
    assert {"transformer_tokenizer_lab", "transformer_tokenizer_lab_step", "transformer_tokenizer_lab_open",
            "transformer_tokenizer_lab_preset"} <= names
    updates = view.run()
    values = list(updates.values())
    assert "strawberries" in values and any(getattr(v, "iloc", None) is not None for v in values)


def test_odd_unicode_is_cleaned_counted_by_code_point_and_said():
    """A combining accent is composed (NFC), control characters are dropped, and an emoji made of several code points
    is counted as they are, with a note saying so."""
    note, stats, *_ = tokenizer_lab.cut_text("cafe\u0301\u0007 👩\u200d💻", "toy_zh", 300, 1)
    rows = {row[0]: row for row in stats.values.tolist()}
    assert rows["Unicode characters"][2] == 4 + 1 + 3  # café, a space, woman + zero-width joiner + laptop
    assert rows["UTF-8 bytes"][2] == 5 + 1 + 4 + 3 + 4 and "several code points" in note
