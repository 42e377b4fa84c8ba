"""nn.Module code only, one readable file per model family, built bottom-up (nanoGPT style).

These files import torch and each other only downward: a family's file never imports another family's; what
families share lives in one shared module (bert_encoder.py). Submodule names equal the Hugging Face checkpoint keys,
so core/loading/registry.py loads a checkpoint with the family's key normalisation and a strict ``load_state_dict``;
core/loading/families.py says which class a task and a file call for.

    bert_encoder.py  shared: BERT's config, embeddings, attention, layers and encoder; what every head model has
                     (its encoder, the tied decoder); the bare Encoder; the key normalisation
    bert.py          BERT's heads: masked LM (+ NSP), token and sequence classification, QA
    distilbert.py    DistilBERT: BERT's equations under DistilBERT's names, no segments, no pooler
    gpt.py           GPT-2 (a causal Transformer decoder, §12) with a KV cache; also the shipped char-GPT
    recurrent.py     the character/word RNN and LSTM language models of the RNN & LSTM tab (§6)
    elmo.py, nnlm.py, word2vec.py   ELMo's biLM (§7), Bengio's NNLM (§3), word2vec (§4)
"""
