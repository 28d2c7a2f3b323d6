"""The model under test: a Llama-style decoder from a config, with seeded random weights.

Nothing is downloaded (these machines cannot fetch weights). Weights are drawn by
transformers' own initialiser after ``torch.manual_seed(seed)``, directly on the target
device, then cast to the dtype: the same command gives the same weights on the same
device and torch version. Random weights make near-uniform logits, so greedy tokens can
legitimately flip between two numerically close backends (see :mod:`.correctness`).

The config disables BOS/EOS/PAD so ``generate`` always produces exactly
``max_new_tokens`` tokens: every variant does the same amount of work.
"""

from __future__ import annotations

from typing import Any

from traceview.serve.spec import ModelSpec

#: Context the position embedding is sized for, at least.
MIN_POSITIONS = 2048


def build_model(spec: ModelSpec, positions: int) -> tuple[Any, Any]:
    """(torch, model) ready for ``generate`` in eval mode."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    # attn_implementation is a PreTrainedConfig keyword: transformers 5 wraps the config
    # dataclass's __init__ at runtime to take it (wrap_init_to_accept_kwargs), which the
    # generated signature mypy reads does not show
    config = LlamaConfig(  # type: ignore[call-arg]
        vocab_size=spec.vocab, hidden_size=spec.hidden, intermediate_size=spec.intermediate,
        num_hidden_layers=spec.layers, num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads, max_position_embeddings=max(MIN_POSITIONS, positions),
        tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=None,
        attn_implementation=spec.attn,
    )
    torch.manual_seed(spec.seed)
    with torch.device(spec.device):
        model = LlamaForCausalLM(config)
    model = model.to(getattr(torch, spec.dtype)).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.bos_token_id = None
    model.generation_config.pad_token_id = None
    return torch, model


def generation_config(max_new_tokens: int) -> Any:
    """Greedy decoding with a KV cache, exactly ``max_new_tokens`` tokens."""
    from transformers import GenerationConfig

    return GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                            use_cache=True, eos_token_id=None, bos_token_id=None,
                            pad_token_id=0)
