"""nn.Module code only, one readable file per model family, built bottom-up (nanoGPT style).

Submodule names equal the Hugging Face checkpoint keys, so core/registry.py loads a checkpoint with a family's small
key normalisation and a strict ``load_state_dict``:

    bert.py        BERT encoder, embeddings, heads (masked LM, NSP, token/sequence classification, QA)
    distilbert.py  DistilBERT: BERT's equations under DistilBERT's names, no segments, no pooler
    recurrent.py   the character/word RNN and LSTM language models of the RNN & LSTM tab (§6)
    gpt.py         GPT-2 (a causal Transformer decoder, §12) with a KV cache; also the shipped char-GPT
"""
