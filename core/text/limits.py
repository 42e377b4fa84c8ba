"""Caps on what the learner can send, and the defaults and choices of the controls that set them, in one place so
the UI and core agree on them. Torch-free: the tabs read these while the app is built (core/loading/lazy.py)."""

MAX_UPLOAD_BYTES = 5 * 1024 * 1024  # uploads (corpora) are capped at 5 MB
MAX_TEXT_CHARS = 20_000  # free text in the BERT tabs; longer text is refused with a message
MAX_MODEL_TOKENS = 512  # BERT's learned position table has 512 rows
MAX_MASKS = 10
MAX_GENERATE = 500  # tokens one generation may add (the LSTM and GPT tabs)
MAX_SCORED_TOKENS = 200  # tokens of one sentence the n-gram tab scores: each is a factor, a table row and a bar

# Free-text boxes. Each gr.Textbox declares one of these as its max_length (the browser stops typing there), and the
# server refuses a longer value from any client with a message naming the box and the cap (demo/server/serving.py, check_caps).
# They keep what a view echoes bounded; the views' own, tighter limits (a 300-character LSTM strip, ≤ 20 words)
# still apply with their own messages.
MAX_WORD_CHARS = 100  # a box for one word
MAX_LIST_CHARS = 500  # a list of words, numbers or token names; a context or prompt for a toy model
MAX_SHORT_TEXT_CHARS = 2_000  # a sentence or two for a model drawn token by token
MAX_LONG_TEXT_CHARS = 100_000  # a corpus typed in, labelled lines pasted, QA's context (cut to MAX_TEXT_CHARS)
MAX_CUSTOM_CHOICE_CHARS = 300  # a Hub id or local folder typed into a checkpoint picker, or another typed choice
MAX_ECHO_CHARS = 80  # the most of what the learner typed that a message repeats, cut with "…" (core/text/errors.py)

# The NNLM (core/embeddings/nnlm.py): context words, and seconds one training run may take
NNLM_MAX_CONTEXT = 4
NNLM_MAX_SECONDS = 120

# Masked LM (core/mlm/mlm.py, core/mlm/pretraining.py)
FILL_BATCH = 16  # fill-mask requests per forward pass when Gradio batches them
MAX_DRAWS = 100_000  # draws of BERT's masking procedure, to count what happens to each token
# The char-BERT (core/mlm/char.py): a blank is one [MASK] per character, filled one character per forward pass
DEFAULT_BLANK_CHARS = 4  # characters a blank stands for when the caller does not say
MAX_BLANK_CHARS = 20
MAX_CHAR_BERT_STEPS = 3000  # a char-BERT run in the tab (core/mlm/char_retrain.py); the time budget ends it first
MAX_FILLED_CHARS = 40  # [MASK]s in one text, all blanks together: the iterative fill runs the model once per character

# NER (core/tasks/ner.py): how word labels are made from WordPiece labels (the pipeline's aggregation strategies)
NER_STRATEGIES = ("simple", "first", "average", "max")

# Extractive QA (core/tasks/qa.py)
QA_DEFAULT_MAX_SEQ_LEN = 384  # the pipeline's default window (question + context + 3 special tokens)
QA_DEFAULT_MAX_ANSWER_LEN = 15  # tokens
QA_MAX_TOP_K = 20

# Fine-tuning (core/tasks/finetune.py, core/tasks/finetune_train.py): the controls' defaults and caps
DEFAULT_SEED = 0  # the train/held-out split's and the head's random seed
DEFAULT_HEAD_STEPS = 150  # full-batch Adam steps for the head on frozen features
DEFAULT_LAYERS = 1  # top layers unfrozen in stage (b)
DEFAULT_EPOCHS = 4
MAX_HEAD_STEPS, MAX_LAYERS, MAX_EPOCHS = 500, 6, 20
