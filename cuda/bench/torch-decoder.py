#!/usr/bin/env python3
"""torch-decoder.py -- the ggml-demo scheduler check's decoder in PyTorch eager, for scale.

    python3 cuda/bench/torch-decoder.py [--device cuda|cpu] [--json] [--seed N] [--threads N]

The model is tests/sched-model.h with the sizes demo_sched_config (src/tools/demo/demo-sched.c)
gives it, timed the way demo_sched times it, so that its tokens/s can stand beside the demo's
"decoder via the scheduler" figure (scripts/gpu-check.sh puts the two side by side).

Exit status: 0 ran, 1 the output was not finite, 2 torch cannot be imported or the device is
missing (one line on stderr says which).
"""

import argparse
import json
import platform
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except Exception as _e:  # an ImportError, or a broken install failing inside torch
    torch = None
    _import_error = f"{type(_e).__name__}: {_e}"

# demo_sched_config() over sm_config_default(): change these only together with the C side.
N_VOCAB = 256
N_EMBD = 128
N_HEAD = 4
N_FF = 256
N_LAYER = 8
N_TOKENS = 32
NORM_EPS = 1e-5
ROPE_BASE = 10000.0
RUNS = 32  # DEMO_SCHED_RUNS
# The demo's timed loop follows one checked batch that pays its one-time costs; torch's first
# batches pay more of them (cuBLAS handle, lazy kernel loading, the caching allocators), so a
# few are run and thrown away.
WARMUP = 3

HEAD_DIM = N_EMBD // N_HEAD
LAYER_TENSORS = ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")


def make_weights(fill):
    """The model's tensors, each from fill(shape, center, amp, a, b).

    (a, b) name sm_fill's stream for the tensor in tests/sched-model.h, and center +- amp is its
    range, so a caller that wants ggmlx's exact values can produce them; random ones do for
    timing. Matrices are [out, in] as F.linear takes them: ggml's ne0 (in) is the contiguous axis,
    as torch's last one is. Every weight is F32: the demo keeps sm_config_default's wtype.
    """
    def matrix(n_out, n_in, a, b):
        return fill((n_out, n_in), 0.0, 1.0 / n_in ** 0.5, a, b)

    w = {
        "tok_embd": fill((N_VOCAB, N_EMBD), 0.0, 1.0, 1000, 0),
        "out_norm": fill((N_EMBD,), 1.0, 0.2, 1000, 1),
        "output": matrix(N_VOCAB, N_EMBD, 1000, 2),
        "layers": [],
    }
    shapes = {"wq": (N_EMBD, N_EMBD), "wk": (N_EMBD, N_EMBD), "wv": (N_EMBD, N_EMBD),
              "wo": (N_EMBD, N_EMBD), "ffn_gate": (N_FF, N_EMBD), "ffn_up": (N_FF, N_EMBD),
              "ffn_down": (N_EMBD, N_FF)}
    for il in range(N_LAYER):
        layer = {}
        for j, name in enumerate(LAYER_TENSORS):
            if name in shapes:
                layer[name] = matrix(*shapes[name], il, j)
            else:
                layer[name] = fill((N_EMBD,), 1.0, 0.2, il, j)
        w["layers"].append(layer)
    return w


def rms_norm(x, w):
    # spelled out rather than F.rms_norm (torch >= 2.4 only): ggml's rms_norm, then its mul
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + NORM_EPS) * w


def rope_neox(x, cos, sin):
    # GGML_ROPE_TYPE_NEOX rotates element i with element i + hd/2 (not 2i with 2i+1);
    # ext_factor 0 and freq_scale 1 leave plain cos/sin
    half = HEAD_DIM // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def forward(w, ids, pos, mask):
    """Logits [T, n_vocab] (F32) for token ids [T], positions [T] and the additive mask [T, T]."""
    T = ids.shape[0]
    half = HEAD_DIM // 2
    # ggml's rope kernel derives the angles from pos inside each op; eager torch computes them
    # once per batch, as a torch user would
    inv_freq = ROPE_BASE ** (-torch.arange(half, dtype=torch.float32, device=pos.device) * 2.0 / HEAD_DIM)
    ang = pos.to(torch.float32)[:, None] * inv_freq[None, :]  # [T, half]
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]  # broadcast over the heads
    x = w["tok_embd"][ids]  # get_rows
    for L in w["layers"]:
        cur = rms_norm(x, L["attn_norm"])
        q = F.linear(cur, L["wq"]).view(T, N_HEAD, HEAD_DIM)
        k = F.linear(cur, L["wk"]).view(T, N_HEAD, HEAD_DIM)
        v = F.linear(cur, L["wv"]).view(T, N_HEAD, HEAD_DIM)
        q = rope_neox(q, cos, sin).transpose(0, 1)  # heads as the batch: [H, T, hd]
        k = rope_neox(k, cos, sin).transpose(0, 1)
        # explicit matmul/softmax rather than scaled_dot_product_attention: the C graph has no
        # fused attention (mul_mat, soft_max_ext with the mask and 1/sqrt(hd), mul_mat)
        kq = torch.matmul(q, k.transpose(1, 2))  # [H, T queries, T keys]
        kq = torch.softmax(kq * (1.0 / HEAD_DIM ** 0.5) + mask, dim=-1)
        kqv = torch.matmul(kq, v.transpose(0, 1))  # [H, T, hd]
        cur = kqv.transpose(0, 1).reshape(T, N_EMBD)  # a copy, as ggml_cont_2d
        h = x + F.linear(cur, L["wo"])
        cur = rms_norm(h, L["ffn_norm"])
        cur = F.silu(F.linear(cur, L["ffn_gate"])) * F.linear(cur, L["ffn_up"])  # swiglu_split
        x = h + F.linear(cur, L["ffn_down"])
    return F.linear(rms_norm(x, w["out_norm"]), w["output"])


def causal_mask(T):
    return torch.full((T, T), float("-inf")).triu_(1)  # 0 where key <= query, as sm_graph_set_inputs


def fail(msg):
    print(f"torch-decoder: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    p = argparse.ArgumentParser(description="The demo's scheduler decoder in PyTorch eager.")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of the line")
    p.add_argument("--seed", type=int, default=42, help="of the weights and inputs (default 42)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (default: torch's own choice)")
    args = p.parse_args()

    if torch is None:
        fail(f"cannot import torch ({_import_error})")
    if args.device == "cuda" and not torch.cuda.is_available():
        fail(f"no CUDA device (torch {torch.__version__}, built for CUDA {torch.version.cuda or 'none'}, "
             "torch.cuda.is_available() is false)")
    dev = torch.device(args.device)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    # ggmlx multiplies F32 matrices with CUBLAS_COMPUTE_32F, which never uses TF32: nor may torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_grad_enabled(False)

    gen = torch.Generator().manual_seed(args.seed)

    def fill(shape, center, amp, a, b):
        # drawn on the host and moved once, as sm_model_alloc fills the weight buffers
        return ((torch.rand(shape, generator=gen) * 2.0 - 1.0) * amp + center).to(dev)

    w = make_weights(fill)
    pin = dev.type == "cuda"

    def inputs():
        # sm_graph_set_inputs writes ids, pos and the mask from the host before every batch; the
        # same uploads here. Pinned memory and non_blocking keep them from stalling the host, as
        # the scheduler's two input copies keep its loop from stalling.
        ids = torch.randint(0, N_VOCAB, (N_TOKENS,), generator=gen)
        host = (ids, torch.arange(N_TOKENS, dtype=torch.int32), causal_mask(N_TOKENS))
        if pin:
            host = tuple(t.pin_memory() for t in host)
        return tuple(t.to(dev, non_blocking=pin) for t in host)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(WARMUP):
        out = forward(w, *inputs())
    sync()

    # the demo's loop: enqueue every batch, synchronize once at the end
    t0 = time.perf_counter()
    for _ in range(RUNS):
        out = forward(w, *inputs())
    sync()
    sec = time.perf_counter() - t0

    if not bool(torch.isfinite(out).all()):
        print("torch-decoder: the logits of the last batch are not finite", file=sys.stderr)
        return 1

    tps = RUNS * N_TOKENS / sec if sec > 0 else 0.0
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"CPU {platform.machine()}"
    if args.json:
        print(json.dumps({
            "name": "torch-decoder",
            "tokens_per_s": round(tps, 1),
            "ms_per_batch": round(1000.0 * sec / RUNS, 4),
            "layers": N_LAYER, "n_tokens": N_TOKENS, "runs": RUNS, "warmup": WARMUP,
            "n_vocab": N_VOCAB, "n_embd": N_EMBD, "n_head": N_HEAD, "n_ff": N_FF,
            "dtype": "float32",
            "device": args.device, "device_name": name,
            "threads": torch.get_num_threads(),
            "seed": args.seed,
            "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        }, indent=2))
    else:
        print(f"torch-decoder: {tps:.0f} tokens/s ({N_LAYER} layers, {N_TOKENS} tokens per batch, "
              f"{RUNS} batches, device {name}, torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
