"""The embedded model's fp32 cache: written on first load, and it gives the same model."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")


@pytest.mark.slow
def test_cached_weights_give_identical_logits(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import torch

    from agentnb.providers.hf import loading as hf_local
    from agentnb.providers.hf import smollm2_path

    monkeypatch.setenv("AGENTNB_CACHE_DIR", str(tmp_path))
    first_model, first_tok = hf_local.load_smollm2(smollm2_path())  # converts the GGUF, writes the cache
    folder = tmp_path / hf_local.CACHE_NAME
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    assert not list(tmp_path.glob("*.tmp*"))
    again_model, again_tok = hf_local.load_smollm2(smollm2_path())  # from the cache
    text = again_tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False)
    assert text == first_tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False)
    ids = first_tok(text, return_tensors="pt").input_ids
    with torch.inference_mode():
        a = first_model(ids).logits
        b = again_model(ids).logits
    assert torch.equal(a, b)
