"""What the loading side refuses or reports, driven through the local Hub (tests/hub_server.py) over real HTTP:
a checkpoint of another kind refused from its config.json (requests counted on the Hub), names shown as typed,
`hf download` hints only for Hub ids, "downloaded now" vs "from Hugging Face cache", and a full disk mid-download."""
from __future__ import annotations

import pytest

from core.loading import registry, resolve
from core.text.errors import UserInputError
from core.text.i18n import using_language

GPT2_REPO, NER_REPO = "tiny-org/tiny-gpt2", "tiny-org/tiny-bert-ner"


def hub_requests(server, model_id: str) -> list[str]:
    return [path for _, path in server.requests if model_id in path]


@pytest.mark.parametrize("task", ["mlm", "encoder", "ner"])
def test_a_causal_lm_typed_into_a_bert_view_is_refused_after_two_requests(server, tiny_gpt2_checkpoint, task):
    server.add_repo(GPT2_REPO, tiny_gpt2_checkpoint("bpe"))
    with pytest.raises(UserInputError) as refused:
        resolve.fetch(task, GPT2_REPO)  # the app's download step
    assert str(refused.value) == (f"'{GPT2_REPO}' is a causal LM (GPT2LMHeadModel), not the kind of model this view "
                                  "runs: use it in Transformer & GPT.")
    asked = hub_requests(server, GPT2_REPO)
    assert len(asked) == 2 and asked[0].startswith(f"/api/models/{GPT2_REPO}/") and asked[1].endswith("/config.json")
    assert "因果语言模型" in refused.value.message("zh") and "“Transformer 与 GPT”" in refused.value.message("zh")
    with resolve.downloads_elsewhere(), pytest.raises(UserInputError, match="causal LM"):
        registry.load(task, GPT2_REPO)  # the model step after the download step: the refusal, no new request
    assert len(hub_requests(server, GPT2_REPO)) == 2


def test_a_token_tagger_typed_into_classification_is_refused_from_its_config(server, conll_ner_checkpoint):
    server.add_repo(NER_REPO, conll_ner_checkpoint)
    with pytest.raises(UserInputError) as refused:
        registry.load("classify", NER_REPO)
    assert "tags tokens (BertForTokenClassification)" in str(refused.value) and "use it in NER" in str(refused.value)
    assert len(hub_requests(server, NER_REPO)) == 2
    assert registry.load("ner", NER_REPO).files.model_id == NER_REPO  # the same id, in its own tab, downloads
    before = len(server.requests)
    with using_language("zh"), pytest.raises(UserInputError) as again:
        registry.load("qa", NER_REPO)  # now cached: refused from the cached config, no request
    assert "给每个词元打标签" in again.value.message("zh") and "“命名实体识别”" in again.value.message("zh")
    assert len(server.requests) == before


def test_a_label_map_of_tags_says_ner_when_the_config_names_no_architecture(server, conll_ner_checkpoint, tmp_path):
    import json
    import shutil

    folder = tmp_path / "no-architectures"
    shutil.copytree(conll_ner_checkpoint, folder)
    config = json.loads((folder / "config.json").read_text())
    del config["architectures"]
    (folder / "config.json").write_text(json.dumps(config))
    server.add_repo(NER_REPO, folder)
    with pytest.raises(UserInputError, match=r"tags tokens \(B-MISC\).*use it in NER"):
        resolve.fetch("classify", NER_REPO)
    assert len(hub_requests(server, NER_REPO)) == 2


def test_a_bare_encoder_is_refused_by_the_views_that_need_a_head(server, tiny_checkpoint):
    server.add_repo("tiny-org/bare", tiny_checkpoint("BertModel"))
    for task in ("mlm", "qa", "causal-lm"):
        with pytest.raises(UserInputError, match=r"an encoder without a task head \(BertModel\).*use it in Attention"):
            resolve.fetch(task, "tiny-org/bare")
    asked = hub_requests(server, "tiny-org/bare")  # each try lists the repo; config.json is fetched once
    assert len(asked) == 4 and sum(path.endswith("/config.json") for path in asked) == 1
    assert resolve.fetch("encoder", "tiny-org/bare").source == "Hub download"
