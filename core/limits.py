"""Caps on what the learner can send, in one place so the UI and core agree on them."""

MAX_UPLOAD_BYTES = 5 * 1024 * 1024  # uploads (corpora) are capped at 5 MB
MAX_TEXT_CHARS = 20_000  # free text in the BERT tabs; longer text is refused with a message
MAX_MODEL_TOKENS = 512  # BERT's learned position table has 512 rows
MAX_MASKS = 10
