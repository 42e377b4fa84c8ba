"""Reading text the learner pasted or uploaded, safely.

Uploads are read as bytes with a size cap and decoded as UTF-8; nothing is ever unpickled or executed.
"""
from __future__ import annotations

import os
import unicodedata

from core.errors import UserInputError
from core.limits import MAX_UPLOAD_BYTES


def read_text_upload(path: str | os.PathLike, max_bytes: int = MAX_UPLOAD_BYTES) -> str:
    """Return the text of an uploaded file, or raise UserInputError saying why it cannot be used."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise UserInputError(f"Could not read the uploaded file ({exc.strerror}).") from exc
    if size > max_bytes:
        raise UserInputError(
            f"The file is {size / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB. Upload a smaller plain-text file."
        )
    with open(path, "rb") as handle:
        raw = handle.read(max_bytes + 1)
    return decode_text(raw)


def decode_text(raw: bytes) -> str:
    """Decode UTF-8 bytes (a BOM is allowed) into NFC-normalised text; binary data is refused."""
    if b"\x00" in raw[:4096]:
        raise UserInputError("This looks like a binary file. Upload plain UTF-8 text (.txt).")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserInputError(
            f"The file is not valid UTF-8 (bad byte at position {exc.start}). Save it as UTF-8 text and upload again."
        ) from exc
    return normalize_text(text)


def normalize_text(text: str) -> str:
    """NFC-normalise; drop control characters other than newlines and tabs, and unpaired surrogates (which cannot
    be encoded as UTF-8 at all), so that odd Unicode never reaches a model."""
    text = unicodedata.normalize("NFC", text)
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs"))
