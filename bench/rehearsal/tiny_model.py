"""A tiny llama-architecture model written with the `gguf` package (llama.cpp's own writer): random weights, a
byte-level vocabulary, 2 layers of width 64, under 1 MB. It answers nonsense, and that is all the rehearsal needs:
a real model file a CUDA llama-server loads onto the GPU, allocating model, KV and compute buffers, with no hub.
"""

from __future__ import annotations

from pathlib import Path

EMBED, HEADS, FEED, LAYERS, CONTEXT = 64, 4, 128, 2, 8192
SPECIAL = ["<unk>", "<s>", "</s>"]
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6


def write_tiny_model(path: Path, seed: int = 7) -> Path:
    """Write the model to `path` (needs numpy and gguf); returns the path."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    tokens = SPECIAL + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581the", "\u2581a", "\u2581fox"]
    types = [TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_CONTROL] + [TOKEN_BYTE] * 256 + [TOKEN_NORMAL] * 3
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("agentbench-tiny")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBED)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FEED)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_rope_dimension_count(EMBED // HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)

    def tensor(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    tensor("token_embd.weight", len(tokens), EMBED)
    writer.add_tensor("output_norm.weight", np.ones(EMBED, dtype=np.float32))
    tensor("output.weight", len(tokens), EMBED)
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(EMBED, dtype=np.float32))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(EMBED, dtype=np.float32))
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensor(f"{block}.{part}.weight", EMBED, EMBED)
        tensor(f"{block}.ffn_gate.weight", FEED, EMBED)
        tensor(f"{block}.ffn_up.weight", FEED, EMBED)
        tensor(f"{block}.ffn_down.weight", EMBED, FEED)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
