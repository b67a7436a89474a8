"""The table of checkpoint families knows every packaged checkpoint and alias, and its
modality is the one a design's input corpus is chosen by."""

from __future__ import annotations

import pytest

from analysis.prereg.corpora import checkpoint_modality
from analysis.sources.catalog import UNKNOWN_FAMILY, checkpoint_family
from analysis.sources.checkpoints import ALIASES, MINILM_ID
from analysis.sources.packaged import PACKAGED

KNOWN = sorted({MINILM_ID, *ALIASES.values(), *(spec.checkpoint_id for spec in PACKAGED)})


@pytest.mark.parametrize("checkpoint", KNOWN)
def test_every_known_checkpoint_has_a_family_and_the_studys_modality(checkpoint):
    fam = checkpoint_family(checkpoint)
    assert fam.family != UNKNOWN_FAMILY
    assert fam.modality == checkpoint_modality(checkpoint)


def test_aliases_and_case_give_the_canonical_ids_family():
    assert checkpoint_family("gpt2") == checkpoint_family("OpenAI-Community/GPT2")
    assert checkpoint_family("gpt2").family == "GPT-2"
    assert checkpoint_family("qwen2.5-0.5b").family == "Qwen2.5"
    assert checkpoint_family("whisper-base") == checkpoint_family("openai/whisper-tiny.en")
    assert checkpoint_family("local-folder").family == UNKNOWN_FAMILY
