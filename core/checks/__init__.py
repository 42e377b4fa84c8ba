"""Every "Your turn" check (issue #51), in tab order (app.TABS), then in the order each tab's module defines them.

One module per tab holds that tab's checks (core/checks/<tab>.py, a list CHECKS); core/checks/base.py holds the
types and ``grade``. The per-tab modules import the models they run only when a check runs, so importing this
registry stays cheap."""
from __future__ import annotations

from core.checks import attention, classify, embeddings, lstm, mlm, ner, ngram, overview, qa, seq2seq, transformer
from core.checks.base import TABS, Check
from core.text.errors import UserInputError, as_sent

MODULES = [overview, ngram, embeddings, lstm, attention, transformer, seq2seq, mlm, ner, qa, classify]  # seq2seq: the
# Transformer tab's encoder–decoder (issue #52)

CHECKS: dict[str, Check] = {
    check.slug: check
    for tab in TABS for module in MODULES for check in module.CHECKS if check.tab == tab
}


def checks_for(tab: str) -> list[Check]:
    return [check for check in CHECKS.values() if check.tab == tab]


def get(slug: str) -> Check:
    """The check named ``slug``; a clear message for a slug that names none (a forged or outdated link)."""
    check = CHECKS.get(slug) if isinstance(slug, str) else None
    if check is None:
        raise UserInputError("checks.unknown", slug=as_sent(slug)[:60])
    return check
