#!/usr/bin/env python3
"""Writes small llama-architecture GGUF models with random weights, for scripts/llama-compare.sh.

The weights come from a seeded generator, so every run writes the same bytes; the tokenizer is a
real one, copied key by key from one of llama.cpp's vocab-only files (e.g.
models/ggml-vocab-llama-spm.gguf in its source tree), so llama.cpp tokenizes ordinary text with it.

Needs the PyPI packages gguf (0.19.0) and numpy.

    llama-tiny-model.py --vocab VOCAB.gguf --out DIR [--size tiny|bench|gpu] [--types f32,f16,bf16]

writes DIR/llama-SIZE-TYPE.gguf for each type and prints each file's path.
"""

import argparse
import os
import sys

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover - the message is the point
    sys.exit("error: the Python package gguf is missing (pip install gguf==0.19.0 numpy)")

# Shapes. "tiny" is for CI: small enough that a perplexity run over a few short chunks takes seconds
# yet has GQA (n_head_kv < n_head) and rows that every k-quant's 256-wide blocks divide. "bench" has
# about 0.5 billion parameters, for llama-bench. "gpu" travels to a lent GPU machine with its
# bases (scripts/llama-gpu-pack.sh), so its bytes count: two layers, head size 64 with GQA, and
# no output matrix (tied: llama.cpp's llama loader falls back to the token embedding), which
# halves a file that the 32000-row vocabulary dominates.
SIZES = {
    "tiny": dict(n_layer=4, n_embd=256, n_head=4, n_head_kv=2, n_ff=768),
    "bench": dict(n_layer=28, n_embd=1024, n_head=16, n_head_kv=8, n_ff=4096),
    "gpu": dict(n_layer=2, n_embd=128, n_head=2, n_head_kv=1, n_ff=512, tied=True),
}

FILE_TYPES = {  # llama_ftype values that general.file_type records
    "f32": (gguf.GGMLQuantizationType.F32, 0),
    "f16": (gguf.GGMLQuantizationType.F16, 1),
    "bf16": (gguf.GGMLQuantizationType.BF16, 32),
}

CONTEXT_LENGTH = 2048
ROPE_FREQ_BASE = 10000.0
RMS_EPS = 1e-5
SEED = 20261204
# Each size's generator seed is SEED plus its own fixed offset, so adding a size changes no
# other size's bytes.
SEED_OFFSETS = {"bench": 0, "tiny": 1, "gpu": 2}


def read_tokenizer(path):
    """Every tokenizer.* key of a vocab-only GGUF file, as (key, value type, value)."""
    reader = gguf.GGUFReader(path)
    out = []
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        out.append((key, field.types, field.contents()))
    if not any(k == "tokenizer.ggml.tokens" for k, _, _ in out):
        sys.exit(f"error: {path} has no tokenizer.ggml.tokens")
    return out


def write_tokenizer(writer, entries):
    """Writes the entries with the value types they had in the source file."""
    vt = gguf.GGUFValueType
    for key, types, value in entries:
        if types[0] == vt.ARRAY:
            writer.add_key_value(key, list(value), vt.ARRAY, sub_type=types[1])
        else:
            writer.add_key_value(key, value, types[0])


def weights(shape_cfg, n_vocab, rng):
    """(name, float32 array) for every tensor of a llama model, in llama.cpp's naming.

    Scales: each matrix's entries have standard deviation 1/sqrt(fan-in), so activations keep
    unit size through the layers and attention scores are not flat; the output matrix is larger
    so that the next-token distribution is peaked (a flat one would make top-token agreement
    meaningless), and the norm weights sit near 1. A tied model has no output matrix; its token
    embedding takes the output matrix's scale, since it serves as both (the input side goes
    through an RMS norm first, so its scale does not matter there).
    """
    n_embd = shape_cfg["n_embd"]
    n_ff = shape_cfg["n_ff"]
    head_dim = n_embd // shape_cfg["n_head"]
    n_embd_kv = head_dim * shape_cfg["n_head_kv"]

    def mat(rows, cols, std):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(std))

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    tied = shape_cfg.get("tied", False)
    out_std = 4.0 * n_embd ** -0.5
    yield "token_embd.weight", mat(n_vocab, n_embd, out_std if tied else 1.0)
    for i in range(shape_cfg["n_layer"]):
        p = f"blk.{i}."
        yield p + "attn_norm.weight", norm(n_embd)
        yield p + "attn_q.weight", mat(n_embd, n_embd, n_embd ** -0.5)
        yield p + "attn_k.weight", mat(n_embd_kv, n_embd, n_embd ** -0.5)
        yield p + "attn_v.weight", mat(n_embd_kv, n_embd, n_embd ** -0.5)
        yield p + "attn_output.weight", mat(n_embd, n_embd, n_embd ** -0.5)
        yield p + "ffn_norm.weight", norm(n_embd)
        yield p + "ffn_gate.weight", mat(n_ff, n_embd, n_embd ** -0.5)
        yield p + "ffn_up.weight", mat(n_ff, n_embd, n_embd ** -0.5)
        yield p + "ffn_down.weight", mat(n_embd, n_ff, n_ff ** -0.5)
    yield "output_norm.weight", norm(n_embd)
    if not tied:
        yield "output.weight", mat(n_vocab, n_embd, out_std)


def write_model(path, size, type_name, tokenizer):
    cfg = SIZES[size]
    qtype, ftype = FILE_TYPES[type_name]
    n_vocab = len(next(v for k, _, v in tokenizer if k == "tokenizer.ggml.tokens"))
    tmp = path + ".tmp"
    writer = gguf.GGUFWriter(tmp, "llama")
    writer.add_name(f"ggmlx random llama {size}")
    writer.add_block_count(cfg["n_layer"])
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(cfg["n_embd"])
    writer.add_feed_forward_length(cfg["n_ff"])
    writer.add_head_count(cfg["n_head"])
    writer.add_head_count_kv(cfg["n_head_kv"])
    writer.add_rope_dimension_count(cfg["n_embd"] // cfg["n_head"])
    writer.add_rope_freq_base(ROPE_FREQ_BASE)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(ftype)
    write_tokenizer(writer, tokenizer)

    # One seed for every type: the F16 and BF16 models are roundings of the F32 one.
    rng = np.random.default_rng(SEED + SEED_OFFSETS[size])
    for name, w in weights(cfg, n_vocab, rng):
        if w.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(name, w)  # norms stay F32, as llama.cpp's converter writes them
        elif qtype == gguf.GGMLQuantizationType.F16:
            writer.add_tensor(name, w.astype(np.float16))
        else:
            # quantize() gives the rows' bytes; the writer turns that byte shape back into elements
            writer.add_tensor(name, gguf.quants.quantize(w, qtype), raw_dtype=qtype)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, path)  # never leaves a half-written model under the final name


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", required=True, help="vocab-only GGUF file whose tokenizer is copied")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--types", default="f32,f16,bf16", help="comma-separated: f32, f16, bf16")
    ap.add_argument("--force", action="store_true", help="rewrite files that already exist")
    args = ap.parse_args()

    types = [t.strip().lower() for t in args.types.split(",") if t.strip()]
    bad = [t for t in types if t not in FILE_TYPES]
    if bad:
        sys.exit(f"error: unknown type(s) {', '.join(bad)}; known: {', '.join(FILE_TYPES)}")
    os.makedirs(args.out, exist_ok=True)
    tokenizer = read_tokenizer(args.vocab)
    for t in types:
        path = os.path.join(args.out, f"llama-{args.size}-{t}.gguf")
        if args.force or not os.path.exists(path):
            write_model(path, args.size, t, tokenizer)
        print(path)


if __name__ == "__main__":
    main()
