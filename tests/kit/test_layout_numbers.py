"""Numbers and notation as the learner reads them (issue #31, Required 5): 4 significant digits from one helper,
the seed's exact fractions, powers typeset (no raw "^"), no SI prefixes on log or probability axes, titles that fit."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import yaml

from demo.kit import figures
from demo.kit.text_size import PLACED_AT_MOST, POSITIONS, wrap_title
from demo.kit.widgets import sig4, sig4_text
from core.loading import resolve

I18N = Path(__file__).resolve().parents[2] / "assets" / "i18n"


def test_sig4_keeps_four_significant_digits_and_leaves_counts_alone():
    assert sig4(0.058823529411764705) == 0.05882  # the 1/17
    assert sig4(2 / 3) == 0.6667 and sig4(814.6712) == 814.7 and sig4(12345.6) == 12350.0
    assert sig4(np.float32(1 / 3)) == 0.3333 and isinstance(sig4(np.float64(0.5)), float)
    assert sig4(3) == 3 and isinstance(sig4(np.int64(7)), np.integer) and sig4("n/a") == "n/a"
    assert sig4(-math.inf) == -math.inf and math.isnan(sig4(math.nan))


def test_sig4_text_writes_positional_numbers_and_typeset_powers():
    assert [sig4_text(v) for v in (2 / 3, 0.2, 100.0, 12345.6, -0.5, 0.0)] == \
        ["0.6667", "0.2", "100", "12350", "−0.5", "0"]
    assert sig4_text(1.23456e-5) == "1.235 × 10⁻⁵" and sig4_text(3e9) == "3 × 10⁹"
    assert sig4_text(-math.inf) == "−∞"


def test_the_seed_bigram_shows_its_exact_fractions():
    """Seed §2.1: P(词性 | 的) = 2/3 by MLE and (2+1)/(3+12) = 0.2 with add-one: the formula line keeps the fraction."""
    from demo.ngram.ngram import TOY, WORDS, show_counts

    _, formula, table, _ = show_counts(TOY, "", None, WORDS, False, 2, False, "mle", 1, "的", "词性")
    assert "= 2 / 3 = **0.6667**" in formula
    assert table.iloc[0].tolist() == ["词性", 2, 3, 0.6667]  # a number of 4 significant digits, not 0.666666…
    _, formula, _, _ = show_counts(TOY, "", None, WORDS, False, 2, False, "add_k", 1, "的", "词性")
    assert "= 3 / 15 = **0.2**" in formula


# A power written as text: a caret between two operands. Code spans and $…$ / $$…$$ LaTeX may use it.
CODE_OR_LATEX = re.compile(r"`[^`]*`|\$\$.*?\$\$|\$[^$]*\$", re.DOTALL)


def _strings(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_translation_writes_a_power_with_a_caret(lang):
    table = yaml.safe_load((I18N / f"{lang}.yaml").read_text(encoding="utf-8"))
    raw = [text for text in _strings(table) if "^" in CODE_OR_LATEX.sub("", text)]
    assert raw == []


def _axes(layout: dict):
    return [(key, axis) for key, axis in layout.items() if re.fullmatch(r"[xy]axis\d*", key) and isinstance(axis, dict)]


def test_log_axes_print_powers_and_linear_axes_no_si_prefix():
    fig = figures.styled(go.Figure(go.Bar(x=["a", "b"], y=[1e-15, 0.5])), "change")
    fig.update_yaxes(type="log")
    sent = json.loads(fig.to_json())
    assert sent["layout"]["yaxis"]["exponentformat"] == "power"  # 10⁻¹⁵, not "1f"
    template = sent["layout"]["template"]["layout"]
    assert template["yaxis"]["exponentformat"] == template["xaxis"]["exponentformat"] == "none"  # 0.00005, not 50μ


def test_a_long_title_wraps_below_the_toolbar_and_gets_room():
    title = "“bank” in sentence 1 vs sentence 2: cosine similarity per layer, and the weighted sum of all three"
    sent = json.loads(figures.bar(["a", "b"], [0.5, 0.5], title).to_json())
    lines = sent["layout"]["title"]["text"].split("<br>")
    assert len(lines) >= 2 and " ".join(lines) == title
    assert all(figures.text_size(line, figures.TITLE_FONT_SIZE)[0] <= figures.TITLE_WIDTH for line in lines)
    assert sent["layout"]["margin"]["t"] >= figures.TITLE_TOP + 2 * figures.TITLE_FONT_SIZE
    assert sent["layout"]["template"]["layout"]["title"]["pad"]["t"] == figures.TITLE_TOP  # the modebar's strip


@pytest.mark.parametrize("title, first", [
    # before: "…鼠标悬停查看词" / "元和权重", "…自由解码却失" / "败：…", "…各分词器的切分（斜" / "线：…"
    ("所有层 × 头（6 × 12）：每行一层，每列一个头；鼠标悬停查看词元和权重", "所有层 × 头（6 × 12）：每行一层，每列一个头；"),
    ("§11.1：没有掩码，训练损失 0.19（有掩码 0.43），自由解码却失败：完全匹配 0%（有掩码 57%）",
     "§11.1：没有掩码，训练损失 0.19（有掩码 0.43），"),
    ("同一段文本：12 个字符 = 12 个 UTF-8 字节，各分词器的切分（斜线：字节片段“�”）", "同一段文本：12 个字符 = 12 个 UTF-8 字节，各分词器的切分"),
])
def test_a_chinese_title_breaks_after_a_comma_or_a_space_rather_than_inside_a_word(title, first):
    """No segmenter says where a word of 中文 ends, so a line that would end between two of its characters ends after
    the run's last "，" "：" "；", at its last space or before its last "（" instead, where that keeps at least half a
    line (17 of the 256 titles the presets draw in 中文 broke inside a word)."""
    lines = wrap_title({"title": {"text": title}}, figures.TITLE_WIDTH, figures.TITLE_FONT_SIZE)
    assert lines == [first, title[len(first):].lstrip()], lines
    short = wrap_title({"title": {"text": "短，" + "很长的标题没有任何标点" * 5}}, figures.TITLE_WIDTH, figures.TITLE_FONT_SIZE)
    assert short[0] != "短，" and len(short[0]) > 10, short  # the comma is too early: half a line at least


@pytest.mark.parametrize("title, glued", [
    # each wrapped, before, as "…（τ =" / "1 · 不做…", "…1.000（" / "τ = 0.8…" and "…63.1M" / "）" on screen
    ("下一个词元的概率分布（τ = 1 · 不做 top-k，不做 top-p，截断前后的概率质量 1.000）以及其余的词元", "τ = 1"),
    ("截断前后的概率质量仍然是 1.000（τ = 0.8，top-k = 5，top-p = 0.9，其余的词元合为一行）", "（τ"),
    ("每个头的参数量以及整个模型的参数量一起是 d_model² × 4 = 63.1M（这是很长的标题）", "（这"),
    ("每个头的参数量以及整个模型的参数量一起是 d_model² × 4 = 63.1M），这是很长的标题", "M）"),
])
def test_a_title_never_breaks_at_an_equals_sign_or_inside_brackets(title, glued):
    """A line never starts with closing punctuation, never ends with opening punctuation, and "x = y" stays whole."""
    lines = wrap_title({"title": {"text": title}}, figures.TITLE_WIDTH, figures.TITLE_FONT_SIZE)
    assert len(lines) == 2 and "".join(lines).replace(" ", "") == title.replace(" ", ""), lines
    assert glued in lines[0] or glued in lines[1], lines
    assert not lines[1][:1] in "，。、：；！？）" + ")=" and lines[0][-1:] not in "（(=", lines


@pytest.fixture(scope="module")
def default_results():
    """What every view shows on open (its first preset), offline: [(view, {component: value})]."""
    import app

    resolve.set_offline(True)
    reg = app.build_app().preset_registry
    shown = []
    for entry in reg.tabs.values():
        for view in entry.views:
            slug = next((slug for slug, preset in view.presets.items() if preset.values is not None), None)
            if slug is not None:
                shown.append((f"{view.tab}/{view.key}", view.run(slug)))
    return shown


def test_close_points_of_a_scatter_get_labels_on_different_sides_and_a_lone_one_keeps_its_place():
    """Every label of an embedding projection was "top center", so close words (man, woman, girl, boy) were drawn over
    one another (the visual sweep). Now each goes where it covers least of the labels placed before it; one with
    room all around stays above its point. Chromium's count of overlapping labels: tests/e2e/test_layout.py."""
    coords = np.array([[0, 0], [0.01, 0.005], [-0.01, 0.004], [0.003, -0.008], [0.6, 0.5], [-0.6, -0.5],
                       [1, 1], [-1, -1]])  # the last two span the axes, so that the two before them have room
    words = ["man", "woman", "girl", "boy", "paris", "king", "x", "y"]
    figure = figures.scatter(coords, words, ["a"] * 4 + ["b"] * 4, "t", highlight=[True] + [False] * 7)
    placed = {text.replace("<b>", "").replace("</b>", ""): position for trace in figure.data
              for text, position in zip(trace.text, trace.textposition)}
    assert len({placed[word] for word in ("man", "woman", "girl", "boy")}) == 4, placed
    assert placed["paris"] == placed["king"] == "top center" and set(placed.values()) <= set(POSITIONS), placed
    assert placed["x"] != "top center"  # above the highest point, plotly would cut it off at the axis
    three_d = figures.scatter(np.c_[coords, coords[:, 0]], ["a"] * 6, ["a"] * 6, "t")
    assert three_d.data[0].textposition == "top center"  # plotly places 3D labels itself
    many = np.random.default_rng(0).normal(size=(PLACED_AT_MOST + 1, 2))  # more than a plot labels apart
    crowd = figures.scatter(many, [f"w{i}" for i in range(len(many))], ["a"] * len(many), "t")
    assert list(crowd.data[0].textposition) == ["top center"] * len(many)


def test_every_figure_a_view_opens_with_leaves_its_margins_to_plotlys_automargin(default_results):
    """Issue #50: no label is clipped because plotly's automargin grows each margin to fit the tick labels, colour
    bars and legends it draws (demo/figure_margins.py, which estimated them on the server, is gone, and with it the
    browser test that drew every figure). So no figure a view opens with turns it off: every axis keeps the
    template's ``automargin``, and the layout never sets ``margin.autoexpand`` false."""
    checked = 0
    for name, results in default_results:
        for value in results.values():
            if not isinstance(value, go.Figure):
                continue
            layout = json.loads(value.to_json())["layout"]
            template = layout["template"]["layout"]
            assert template["xaxis"]["automargin"] is True and template["yaxis"]["automargin"] is True, name
            assert (layout.get("margin") or {}).get("autoexpand", True) is True, name
            for key, axis in _axes(layout):
                automargin = axis.get("automargin", template[key[0] + "axis"]["automargin"])
                assert automargin is True or (isinstance(automargin, str) and automargin), (name, key, automargin)
                checked += 1
    assert checked > 20


def test_no_figure_a_view_opens_with_prints_si_prefixes_on_a_log_or_probability_axis(default_results):
    checked = 0
    for name, results in default_results:
        for value in results.values():
            if not isinstance(value, go.Figure):
                continue
            layout = json.loads(value.to_json())["layout"]
            template = layout.get("template", {}).get("layout", {})
            for key, axis in _axes(layout):
                fmt = axis.get("exponentformat") or template.get(key[0] + "axis", {}).get("exponentformat")
                if axis.get("type") == "log":
                    assert fmt == "power", (name, key)
                else:
                    assert fmt in ("none", "power"), (name, key, fmt)  # never plotly's SI "B"
                assert "tickformat" not in axis or not axis["tickformat"].endswith("s"), (name, key)  # d3 SI
                checked += 1
    assert checked > 20


def test_no_table_a_view_opens_with_shows_more_than_four_significant_digits(default_results):
    import pandas as pd

    long = []
    for name, results in default_results:
        for value in results.values():
            frame = getattr(value, "data", value)  # a Styler's frame
            if isinstance(value, dict) and "data" in value:
                rows = value["data"]
            elif isinstance(frame, pd.DataFrame):
                rows = frame.values.tolist()
            else:
                continue
            long += [(name, cell) for row in rows for cell in row
                     if isinstance(cell, float) and math.isfinite(cell) and cell != sig4(cell)]
    assert long == []
