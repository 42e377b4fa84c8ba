"""No English left for the learner outside the translation tables (issue #19).

An AST scan of app.py, demo/ and core/ finds:

- **UI literals**: a string literal that reaches the page as it is: ``label=``/``info=``/``placeholder=`` of any
  ``gr.*`` component, ``value=`` of the components whose value is text for the reader (Markdown, HTML, buttons), the
  first argument of ``gr.Markdown``/``gr.HTML``/``gr.Button``/``gr.Tab``/``gr.Accordion``/…, ``headers=`` of
  ``gr.Dataframe``, and the message and ``title=`` of ``gr.Error``/``gr.Warning``/``gr.Info``. A name bound to a
  module-level string is followed to that string.
- **Error raises**: ``raise UserInputError(...)`` / ``ModelUnavailableError(...)`` in core/ and demo/ whose first
  argument is not a key of assets/i18n/en.yaml (a sentence, an f-string, a formatted or computed string).

A literal counts as English when, after taking out what is not prose (``code``, $maths$, HTML tags, URLs, {fields}),
it still has a word of two or more letters written in lower case or capitalised ("Count", "the seed") that the 中文
table does not also use outside brackets (so "softmax", "top-k", "Transformer" or "GPT" — kept as they are in 中文 —
are not English, and neither are model ids like ``bert-base-uncased``, names like ``GloVe``/``word2vec``, CSS,
numbers, symbols or file names, which never sit in those places or have no such word). Keys ("ngram.intro") and
strings inside ``label()``/``t()``/``text()`` calls are what the scan asks for. Seed sentences a model reads are
``value=`` of a Textbox/Dropdown and are not scanned.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from core.text import i18n

ROOT = Path(__file__).resolve().parent.parent

LEARNER_ERRORS = {"UserInputError", "ModelUnavailableError"}
UI_KEYWORDS = {"label", "info", "placeholder"}
TEXT_VALUE_COMPONENTS = {"Markdown", "HTML", "Button", "DownloadButton", "UploadButton", "ClearButton", "LoginButton"}
FIRST_ARG_COMPONENTS = TEXT_VALUE_COMPONENTS | {"Tab", "TabItem", "Accordion", "Error", "Warning", "Info"}
MESSAGES = {"Error", "Warning", "Info"}
KEY_FUNCTIONS = {"label", "t", "text", "_", "i18n_label"}  # their string arguments are keys, not prose

_NOT_PROSE = [
    re.compile(r"\$\$.*?\$\$", re.S), re.compile(r"\$[^$\n]+\$"),  # maths
    re.compile(r"```.*?```", re.S), re.compile(r"`[^`]*`"),  # code
    re.compile(r"<[^<>]*>"),  # HTML tags (their attributes too)
    re.compile(r"https?://\S+|\]\([^)]*\)"),  # URLs, Markdown link targets
    re.compile(r"\{[^{}]*\}"),  # {fields}
    re.compile(r"&[a-z]+;"),  # HTML entities
    re.compile(r"\b[A-Za-z_]+\("),  # function notation: count(h c), max(…)
]
_WORD = re.compile(r"[A-Za-z0-9_]+")
_PROSE_WORD = re.compile(r"[A-Za-z][a-z]+")  # "Count", "the"; not "BERT", "GloVe", "word2vec", "ngram_count", "k"
_BRACKETED = re.compile(r"（[^）]*）|\([^)]*\)")
# A model id, path or file name: "bert-base-uncased", "uer/gpt2-chinese-cluecorpussmall", "model.safetensors".
_ID = re.compile(r"(?<!\S)[\w.-]*(?:[/.]\w|\w-\w+-\w)[\w./-]*(?!\S)")
# Terms of the field that 中文 NLP writing keeps in Latin letters.
TERMS = {"softmax", "argmax", "logit", "logits", "token", "tokens"}


def neutral_words() -> set[str]:
    """Latin words the 中文 table uses as they are: outside the (English term) brackets of a first use, {fields},
    code, maths, HTML and model ids."""
    words = set(TERMS)
    for value in i18n.table("zh").values():
        for pattern in [*_NOT_PROSE, _ID, _BRACKETED]:
            value = pattern.sub(" ", value)
        words |= {w.lower() for w in _WORD.findall(value)}
    return words


NEUTRAL = neutral_words()
ZH_VALUES = list(i18n.table("zh").values())
ZH_SET = {value.strip() for value in ZH_VALUES}
KEYS = set(i18n.table("en"))


def english_words(literal: str) -> list[str]:
    """The English prose words in a literal ([] for keys, ids, symbols, code, maths...): a word 中文 does not use,
    or a phrase of several words that no 中文 string contains ("A Hugging Face id", but not "Hugging Face")."""
    if literal in KEYS or literal.strip() in ZH_SET:  # a key, or a 中文 string as the table has it
        return []
    for pattern in [*_NOT_PROSE, _ID]:
        literal = pattern.sub(" ", literal)
    words = [word for word in _WORD.findall(literal) if _PROSE_WORD.fullmatch(word)]
    foreign = [word for word in words if word.lower() not in NEUTRAL]
    if foreign or len(words) < 2:
        return foreign
    phrase = " ".join(literal.split())
    return [] if any(phrase in value for value in ZH_VALUES) else words


def _gr_name(call: ast.Call) -> str | None:
    """"Markdown" for gr.Markdown(...) (also gr.components.Markdown), else None."""
    func = call.func
    if isinstance(func, ast.Attribute):
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id == "gr":
            return func.attr
    return None


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


class Scan(ast.NodeVisitor):
    def __init__(self, path: str, tree: ast.Module):
        self.path, self.found = path, []
        # Module-level NAME = "string" (or a parenthesised concatenation), to follow gr.Markdown(INTRO).
        self.constants: dict[str, ast.AST] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.constants[node.targets[0].id] = node.value

    def strings(self, node: ast.AST, follow: bool = True):
        """The literal string pieces an expression is made of (not those inside key calls)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node, node.value
        elif isinstance(node, ast.JoinedStr):
            for part in node.values:
                yield from self.strings(part, follow)
        elif isinstance(node, ast.FormattedValue):
            yield from self.strings(node.value, follow)
        elif isinstance(node, ast.BinOp):
            yield from self.strings(node.left, follow)
            yield from self.strings(node.right, follow)
        elif isinstance(node, ast.IfExp):
            yield from self.strings(node.body, follow)
            yield from self.strings(node.orelse, follow)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for element in node.elts:
                yield from self.strings(element, follow)
        elif isinstance(node, ast.Call):
            if _call_name(node) in KEY_FUNCTIONS:
                return
            if isinstance(node.func, ast.Attribute) and node.func.attr in {"format", "strip", "join"}:
                yield from self.strings(node.func.value, follow)
                for arg in node.args:
                    yield from self.strings(arg, follow)
        elif isinstance(node, ast.Name) and follow and node.id in self.constants:
            yield from self.strings(self.constants[node.id], follow=False)

    def report(self, node: ast.AST, where: str, what: str):
        self.found.append(f"{self.path}:{getattr(node, 'lineno', '?')}: {where}: {what!r}")

    def check_ui(self, node: ast.AST, where: str):
        for literal_node, literal in self.strings(node):
            words = english_words(literal)
            if words:
                line_node = literal_node if hasattr(literal_node, "lineno") else node
                self.report(line_node, where, literal if len(literal) <= 70 else literal[:67] + "...")

    def visit_Call(self, node: ast.Call):
        name = _gr_name(node)
        if name is not None:
            for keyword in node.keywords:
                if keyword.arg in UI_KEYWORDS or keyword.arg == "title" and name in MESSAGES \
                        or keyword.arg == "value" and name in TEXT_VALUE_COMPONENTS:
                    self.check_ui(keyword.value, f"gr.{name}({keyword.arg}=)")
                elif keyword.arg == "headers" and name in {"Dataframe", "DataFrame"}:
                    self.check_ui(keyword.value, f"gr.{name}(headers=)")
            if name in FIRST_ARG_COMPONENTS and node.args:
                self.check_ui(node.args[0], f"gr.{name}(…)")
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise):
        exc = node.exc
        if isinstance(exc, ast.Call) and _call_name(exc) in LEARNER_ERRORS:
            if not exc.args:
                self.report(node, f"raise {_call_name(exc)}", "no message key")
            elif not self.is_key(exc.args[0]):
                shown = ast.unparse(exc.args[0])
                self.report(node, f"raise {_call_name(exc)}", shown if len(shown) <= 70 else shown[:67] + "...")
        self.generic_visit(node)

    def is_key(self, node: ast.AST) -> bool:
        """A literal key of en.yaml; or a name/attribute/expression we cannot read (a key chosen at run time,
        ``exc.key``), unless it is bound to a module-level string that is no key."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str) and node.value in KEYS
        if isinstance(node, ast.IfExp):
            return self.is_key(node.body) and self.is_key(node.orelse)
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.is_key(self.constants[node.id])
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return True
        return False  # an f-string, a concatenation, str(...), a .format(...): a sentence made here


def scanned_files() -> list[str]:
    files = ["app.py", *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "demo").rglob("*.py")))]
    files += [str(p.relative_to(ROOT)) for p in sorted((ROOT / "core").rglob("*.py"))]
    return files


def test_the_scan_reads_every_package():
    """demo/ and core/ are packages of packages: the scan walks into them (a move cannot empty it)."""
    files = scanned_files()
    assert sum(name.startswith("demo/") for name in files) >= 55
    assert sum(name.startswith("core/") for name in files) >= 90
    assert {"demo/tasks/qa.py", "core/loading/resolve.py", "core/nets/bert.py"} <= set(files)


def offenders(path: str) -> list[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"), filename=path)
    scan = Scan(path, tree)
    scan.visit(tree)
    return sorted(scan.found, key=lambda line: int(line.split(":")[1]) if line.split(":")[1].isdigit() else 0)


@pytest.mark.parametrize("path", scanned_files())
def test_no_english_for_the_learner_outside_the_tables(path):
    found = offenders(path)
    assert not found, "English for the learner outside assets/i18n (use label()/t() or an error key):\n" + \
        "\n".join(found)


# ---------------------------------------------------------------------------------------------------------------
# The scan itself: it finds what it must and leaves alone what is not English prose.

SAMPLE = '''
import gradio as gr
from core.text.errors import UserInputError, ModelUnavailableError
INTRO = "Counts become probabilities."
KEY = "common.checkpoint"
def build():
    gr.Markdown(INTRO)
    gr.Markdown(label("app.intro"))
    gr.Button("Count", variant="primary")
    gr.Textbox(label="Your text", value="The cat sat on the mat.", placeholder="e.g. text")
    gr.Dropdown(["bert-base-uncased", "gpt2"], value="bert-base-uncased", label=label("common.checkpoint"))
    gr.Slider(1, 5, label="n", info="$P(w_t \\\\mid w_{t-1})$")
    gr.Number(label="top-k")
    gr.HTML("<div class='ladder'></div>")
    gr.Tab(f"{name} · GPT-2")
    gr.Dataframe(headers=["token", "p", "next word"])
    raise gr.Error(f"Unknown word {word!r}")
def handler(x):
    if x:
        raise UserInputError("common.whole_number", name="x")
    if x is None:
        raise UserInputError(KEY)
    if x == 1:
        raise UserInputError(exc.key, **exc.fields)
    if x == 2:
        raise UserInputError(f"Enter at most {limit} words.")
    if x == 3:
        raise ModelUnavailableError("Not downloaded: hf download " + model_id)
    raise UserInputError(stopped_note(x))
'''


def test_the_scan_finds_english_and_nothing_else():
    tree = ast.parse(SAMPLE)
    scan = Scan("sample.py", tree)
    scan.visit(tree)
    found = [line.split(": ", 1)[1] for line in scan.found]
    assert found == [
        "gr.Markdown(…): 'Counts become probabilities.'",
        "gr.Button(…): 'Count'",
        "gr.Textbox(label=): 'Your text'",
        "gr.Textbox(placeholder=): 'e.g. text'",
        "gr.Dataframe(headers=): 'next word'",
        "gr.Error(…): 'Unknown word '",
        "raise UserInputError: \"f'Enter at most {limit} words.'\"",
        "raise ModelUnavailableError: \"'Not downloaded: hf download ' + model_id\"",
        "raise UserInputError: 'stopped_note(x)'",
    ], found
    assert scan.found[1].startswith("sample.py:9: ")  # file:line


@pytest.mark.parametrize("literal", [
    "bert-base-uncased", "distilbert-base-cased-distilled-squad", "uer/gpt2-chinese-cluecorpussmall", "gpt2",
    "GloVe", "word2vec", "MiniLM-L6", "[MASK]", "BERT", "GPT-2", "softmax", "top-k", "n", "k", "3.14", "→", "·",
    "model.safetensors", "ngram_count", "common.checkpoint", "$\\frac{QK^T}{\\sqrt{d_k}}$", "`hf download gpt2`",
    "<span class='badge'></span>", "{device}", "🔁", "中文", "",
])
def test_not_english(literal):
    assert english_words(literal) == []


@pytest.mark.parametrize("literal", ["Count", "Checkpoint", "Press Count.", "the seed", "Temperature",
                                     "Unknown word", "A Hugging Face id", "Next tokens"])
def test_english(literal):
    assert english_words(literal)
