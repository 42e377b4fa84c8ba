"""N-gram tab handlers: the seed numbers on screen, tables with rows, figures with data, clear errors."""
import gradio as gr
import pandas as pd
import pytest

from demo.ngram import ngram
from demo.ngram.ngram import CHARS, MOBY, OWN, PRESET_VALUES, TOY, WORDS, generate_text, score_sentences, show_counts


def settings(corpus=TOY, own="", upload=None, unit=WORDS, lowercase=False, n=2, boundaries=False, smoothing="mle", k=1):
    return corpus, own, upload, unit, lowercase, n, boundaries, smoothing, k


def frame(value) -> pd.DataFrame:
    return value.data if hasattr(value, "data") else value  # a pandas Styler or a DataFrame


def test_counts_show_the_seed_numbers():
    info, formula, table, fig = show_counts(*settings(), "的", "词性")
    assert "|V| = 12" in info and "2 / 3 = **0.6667**" in formula
    assert frame(table).iloc[0].tolist()[:3] == ["词性", 2, 3]
    assert fig.data and list(fig.data[0].x)[0] == pytest.approx(2 / 3)
    _, formula, table, _ = show_counts(*settings(smoothing="add_k"), "的", "词性")
    assert "(2 + 1) / (3 + 1 × 12) = 3 / 15 = **0.2**" in formula
    assert "each of 10 unseen tokens" in frame(table).iloc[-1, 0]
    _, formula, _, _ = show_counts(*settings(unit=CHARS), "的", "词")
    assert "2 / 3 = **0.6667**" in formula


def test_counts_notes_for_long_short_and_unknown_contexts():
    info, _, _, _ = show_counts(*settings(n=2), "北京 的", "词性")
    assert "last 1 token" in info
    info, formula, _, fig = show_counts(*settings(n=2), "苹果", "词性")
    assert "Not in the corpus" in info and "0 / 0" in formula and not fig.data
    _, formula, _, _ = show_counts(*settings(corpus=MOBY, lowercase=True, n=3, boundaries=True,
                                             smoothing="kneser_ney"), "the white", "whale")
    assert "Kneser-Ney" in formula and "max(" in formula


def test_scoring_the_motivating_pair():
    info, table_a, table_b, fig = score_sentences(*settings(smoothing="add_k"), "判断 这个 词 的 词性",
                                                  "判断 这个 词 的 磁性")
    assert "A 3× as likely as B" in info and "`这个`" in info
    assert len(frame(table_a)) == 5 == len(frame(table_b)) and len(fig.data) == 2
    info, table_a, _, fig = score_sentences(*settings(), "判断 单词 的 词性", "判断 单词 的 磁性")
    assert "only **A**" in info and "probability **0**" in info
    assert frame(table_a)["P(wᵢ|ctx)"].tolist()[-1] == 0.6667  # 2/3 to 4 significant digits (demo.kit.widgets.sig4)
    assert list(fig.data[1].y)[-1] == 0  # the unseen bigram (的, 磁性), visibly 0
    info, _, table_b, fig = score_sentences(*settings(), "判断 单词 的 词性", "")
    assert "**B:**" not in info and len(frame(table_b)) == 0 and len(fig.data) == 1


def test_generation_table_and_plot():
    info, table, fig = generate_text(*settings(corpus=MOBY, lowercase=True, n=3, boundaries=True,
                                               smoothing="kneser_ney"), "the white", 25, 0.8, 10, 1.0, 7)
    rows = frame(table)
    assert 1 <= len(rows) <= 25 and "**the white**" in info
    assert rows.iloc[0, 4] == 10  # top-k 10: ten tokens kept at the first step
    before, after = fig.data[0], fig.data[1]  # the next-token figure: before and after the cut, 10 kept + the rest
    assert len(before.y) == 21 and [text.startswith("✓") for text in after.text[:20]] == [True] * 10 + [False] * 10
    assert sum(after.x[:10]) == pytest.approx(1, abs=1e-6) and "keeps 10 of" in fig.layout.title.text
    assert "seed 7" in info and "?tab=ngram&preset=moby-trigram&seed=7" in info  # the preset's own settings
    again = generate_text(*settings(corpus=MOBY, lowercase=True, n=3, boundaries=True, smoothing="kneser_ney"),
                          "the white", 25, 0.8, 10, 1.0, 7)
    assert again[0] == info  # seeded
    other, _, _ = generate_text(*settings(corpus=MOBY, lowercase=True, n=3, boundaries=True, smoothing="kneser_ney"),
                                "the white", 24, 0.8, 10, 1.0, 7)
    assert "?tab=" not in other  # not the preset's settings: no link that would show another result


@pytest.mark.parametrize("preset", PRESET_VALUES)
def test_every_preset_runs(preset):
    model = (*preset[:2], None, *preset[2:8])  # the presets leave the upload out
    context, word, a, b, prompt, steps, t, top_k, top_p, seed = preset[8:]
    assert len(frame(show_counts(*model, context, word)[2])) > 0
    assert len(frame(score_sentences(*model, a, b)[1])) > 0
    assert len(frame(generate_text(*model, prompt, steps, t, top_k, top_p, seed)[1])) > 0


def test_own_text_pasted_and_uploaded(tmp_path):
    own = "the cat sat on the mat\nthe dog sat on the log\n"
    _, formula, _, _ = show_counts(*settings(corpus=OWN, own=own), "the", "cat")
    assert "count(the, cat) / count(the) = 1 / 4" in formula
    path = tmp_path / "corpus.txt"
    path.write_text("a b c\nb c d\n", encoding="utf-8")
    _, formula, _, _ = show_counts(*settings(corpus=OWN, own=own, upload=str(path)), "b", "c")
    assert "2 / 2" in formula  # the upload is used instead of the box


def test_bad_input_gets_a_clear_message(tmp_path):
    with pytest.raises(gr.Error, match="corpus is empty"):
        show_counts(*settings(corpus=OWN, own="  \n "), "a", "b")
    with pytest.raises(gr.Error, match="None of the tokens"):
        score_sentences(*settings(), "apple pie", "")
    with pytest.raises(gr.Error, match="Sentence A is empty"):
        score_sentences(*settings(), "", "")
    with pytest.raises(gr.Error, match="longest sentence"):
        show_counts(*settings(corpus=OWN, own="a b\nc d\n", n=4), "a", "b")
    with pytest.raises(gr.Error, match="k must be positive"):
        show_counts(*settings(smoothing="add_k", k=0), "的", "词性")
    with pytest.raises(gr.Error, match="temperature"):
        generate_text(*settings(), "的", 5, -1, 5, 1.0, 0)
    with pytest.raises(gr.Error, match="top-p"):
        generate_text(*settings(), "的", 5, 1, 5, 1.5, 0)
    with pytest.raises(gr.Error, match="seed"):
        generate_text(*settings(), "的", 5, 1, 5, 1.0, -3)
    info, _, fig = generate_text(*settings(), "的", 5, 0, 0, 0, 0)  # τ = 0, no top-k, top-p 0: said, not refused
    assert "greedy" in info and "top-p 0 keeps only" not in info and fig.data
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * (5 * 1024 * 1024))
    with pytest.raises(gr.Error, match="only one distinct token"):
        show_counts(*settings(corpus=OWN, upload=str(big), unit=CHARS, n=5), "a", "a")
    binary = tmp_path / "latin1.txt"
    binary.write_bytes("café".encode("latin-1"))
    with pytest.raises(gr.Error, match="not valid UTF-8"):
        show_counts(*settings(corpus=OWN, upload=str(binary)), "a", "b")
    with pytest.raises(gr.Error, match="over 5 MB"):
        show_counts(*settings(corpus=OWN, own="ab" * (3 * 1024 * 1024)), "a", "b")


def test_tab_builds_with_its_api_names():
    with gr.Blocks() as blocks:
        ngram.build()
    deps = {fn.api_name: fn for fn in blocks.fns.values()}
    assert {"ngram_counts", "ngram_score", "ngram_generate", "ngram_all_preset", "ngram_lesson"} <= set(deps)
    # the preset bar's one event takes the preset's slug: add-one gives the seed's (2 + 1) / (3 + 12) = 0.2
    shown = deps["ngram_all_preset"].fn("add-one", False)
    assert any(isinstance(v, str) and "= 3 / 15 = **0.2**" in v for v in shown.values())


def test_endpoint_through_gradio_client():
    from gradio_client import Client

    with gr.Blocks() as blocks:
        ngram.build()
    blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        client = Client(blocks.local_url, verbose=False)
        info, formula, table, plot = client.predict(TOY, "", None, WORDS, False, 2, False, "add_k", 1, "的", "词性",
                                                    api_name="/ngram_counts")
        assert "= **0.2**" in formula and "|V| = 12" in info and table["data"]
    finally:
        blocks.close()


def test_first_open_preset_and_add_one_preset_show_the_seed_numbers():
    """The default (first) preset is what the tab shows on open: P(词性 | 的) = 2/3; add-one gives 0.2 (seed §2.1)."""
    from demo.ngram.ngram import PRESETS as VIEW_PRESETS, run_preset

    by_slug = {p.slug: p for p in VIEW_PRESETS}
    info, formula, table, fig, *_ = run_preset(*VIEW_PRESETS[0].resolved())
    assert "= 2 / 3 = **0.6667**" in formula and len(frame(table)) > 0 and fig.data
    _, formula, *_ = run_preset(*by_slug["add-one"].resolved())
    assert "(2 + 1) / (3 + 1 × 12) = 3 / 15 = **0.2**" in formula
    _, formula, *_ = run_preset(*by_slug["char-de"].resolved())
    assert "= 2 / 3 = **0.6667**" in formula  # character tokens: P(词 | 的)


def test_results_and_errors_in_chinese():
    """Under using_language("zh") the summary, the figure title and the errors are 中文, and unknown characters are
    named in the message; English by default."""
    from core.text.i18n import using_language

    with using_language("zh"):
        info, formula, table, fig = show_counts(*settings(), "的", "词性")
        with pytest.raises(gr.Error) as empty:
            score_sentences(*settings(), "", "")
        with pytest.raises(gr.Error) as unknown:
            score_sentences(*settings(unit=CHARS), "苹果派", "")
    assert info.startswith("**语料**：种子文章的玩具语料") and "不同的词" in info and "2 / 3 = **0.6667**" in formula
    assert fig.layout.title.text.startswith("“的”之后最可能的下一个词元")
    assert empty.value.message == "句子 A 是空的。请输入一个要打分的句子。"
    assert unknown.value.message.startswith("这个句子中没有一个词元在语料中出现过（苹, 果, 派）")
    info, _, _, fig = show_counts(*settings(), "的", "词性")
    assert info.startswith("**Corpus:** Seed toy corpus") and fig.layout.title.text.startswith("Most likely")
    with pytest.raises(gr.Error, match=r"None of the tokens of this sentence occur in the corpus \(苹, 果, 派\)"):
        score_sentences(*settings(unit=CHARS), "苹果派", "")


def test_tang_poems_preset_counts_characters_like_nltk():
    """The classical-Chinese preset (ten Tang quatrains, character bigrams): count(明) = 3, count(明, 月) = 2, so
    P(月 | 明) = 2/3, and every count in its table equals nltk's bigram counts over the same characters, each
    sentence (a couplet ending in 。) counted on its own."""
    from nltk import ConditionalFreqDist
    from nltk.util import bigrams

    from core.text.corpora import load_corpus

    preset = next(p for p in ngram.PRESETS if p.slug == "tang-chars")
    info, formula, table, fig, *_ = ngram.run_preset(*preset.resolved())
    sentences = [[ch for ch in couplet + "。" if not ch.isspace()]
                 for line in load_corpus("tang_poems").splitlines() for couplet in line.split("。") if couplet.strip()]
    followers = ConditionalFreqDist(pair for sentence in sentences for pair in bigrams(sentence))
    assert dict(followers["明"]) == {"月": 2, "时": 1}
    rows = frame(table)
    seen = rows[~rows["w"].str.startswith("(")]
    assert dict(zip(seen["w"], seen["count(ctx,w)"])) == dict(followers["明"])
    assert set(seen["count(ctx)"]) == {followers["明"].N()}
    vocabulary = {ch for sentence in sentences for ch in sentence}
    assert f"|V| = {len(vocabulary)}" in info and "count(明, 月) / count(明) = 2 / 3 = **0.6667**" in formula
    assert list(fig.data[0].y)[0] == "月"
