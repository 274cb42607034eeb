#!/usr/bin/env python3
"""The quantized-format oracle test (CTest quant-oracle), with the PyPI package gguf 0.19.0 as the
reference:

  1. dequantization: for every type gguf.quants.dequantize knows (blocks.DEQUANT_TYPES), random
     blocks with finite scales and edge blocks go through ggml_get_type_traits(t)->to_float
     (quant-oracle dequant); the floats must be bit-identical to gguf's;
  2. quantization: for every type gguf.quants.quantize knows (blocks.QUANT_TYPES), float32 rows
     (Gaussian, heavy-tailed, constant, tiny, huge ...) go through ggml_quantize_chunk without an
     importance matrix and through from_float_ref; the bytes must be identical to gguf's.

A type the library under test lacks counts as a failure ("not implemented").

    run.py --prog PATH/quant-oracle --work DIR [--types Q4_0,Q8_0,...]
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import blocks  # noqa: E402
from gguf import quants  # noqa: E402
from gguf.constants import GGML_QUANT_SIZES  # noqa: E402

SEED = 20261204
N_RANDOM_BLOCKS = 512
N_PER_ROW = 512  # whole blocks of every type in QUANT_TYPES (32 and 256 elements)
N_ROWS = 8
MAX_SHOWN = 4  # mismatching cases printed per check


class NotImplementedInLibrary(Exception):
    pass


def call(prog, args):
    out = subprocess.run([prog] + args, capture_output=True, check=False)
    if out.returncode == 2:
        raise NotImplementedInLibrary(out.stdout.decode(errors="replace").strip())
    if out.returncode != 0:
        raise RuntimeError("%s %s: exit %d: %s" % (prog, " ".join(args), out.returncode,
                                                   out.stderr.decode(errors="replace").strip()))


def ggmlx_dequant(prog, work, qtype, data):
    src, dst = os.path.join(work, "in.bin"), os.path.join(work, "out.bin")
    data.tofile(src)
    call(prog, ["dequant", str(int(qtype)), src, dst])
    return np.fromfile(dst, dtype=np.float32)


def ggmlx_quant(prog, work, qtype, rows, by_ref):
    src, dst = os.path.join(work, "in.bin"), os.path.join(work, "out.bin")
    rows.tofile(src)
    if by_ref:
        call(prog, ["quant-ref", str(int(qtype)), src, dst])
    else:
        call(prog, ["quant", str(int(qtype)), str(rows.shape[1]), src, dst])
    return np.fromfile(dst, dtype=np.uint8)


def first_float_mismatch(qtype, data, got, want):
    """None, or where the first differing float is: block, element, both values, the block's bytes."""
    if got.size != want.size:
        return "%d floats, expected %d" % (got.size, want.size)
    gb, wb = got.view(np.uint32), want.reshape(-1).view(np.uint32)
    bad = np.flatnonzero(gb != wb)
    if bad.size == 0:
        return None
    qk, size = GGML_QUANT_SIZES[qtype]
    i = int(bad[0])
    blk = i // qk
    return ("%d floats differ; first: block %d element %d: got %r (0x%08x), expected %r (0x%08x); "
            "block bytes %s" % (bad.size, blk, i % qk, float(got[i]), int(gb[i]), float(want.reshape(-1)[i]),
                                int(wb[i]), data.reshape(-1, size)[blk].tobytes().hex()))


def first_byte_mismatch(qtype, n_per_row, got, want):
    if got.size != want.size:
        return "%d bytes, expected %d" % (got.size, want.size)
    want = want.reshape(-1)
    bad = np.flatnonzero(got != want)
    if bad.size == 0:
        return None
    qk, size = GGML_QUANT_SIZES[qtype]
    blocks_per_row = n_per_row // qk
    i = int(bad[0])
    blk = i // size
    nblk = np.unique(bad // size).size
    return ("%d bytes in %d blocks differ; first: row %d block %d byte %d: got 0x%02x, expected 0x%02x; "
            "block got %s expected %s" % (bad.size, nblk, blk // blocks_per_row, blk % blocks_per_row,
                                          i % size, int(got[i]), int(want[i]),
                                          got[blk * size:(blk + 1) * size].tobytes().hex(),
                                          want[blk * size:(blk + 1) * size].tobytes().hex()))


def check_dequant(prog, work, qtype, rng):
    cases = [("random", blocks.random_blocks(qtype, rng, N_RANDOM_BLOCKS))] + blocks.edge_blocks(qtype, rng)
    problems = []
    for name, data in cases:
        with np.errstate(all="ignore"):
            want = quants.dequantize(data, qtype)
        got = ggmlx_dequant(prog, work, qtype, data)
        d = first_float_mismatch(qtype, data, got, want)
        if d:
            problems.append("%s: %s" % (name, d))
    return len(cases), problems


def check_quant(prog, work, qtype, rng, by_ref):
    problems = []
    cases = blocks.quant_rows(rng, N_PER_ROW, N_ROWS)
    for name, rows in cases:
        with np.errstate(all="ignore"):
            want = quants.quantize(rows, qtype)
        got = ggmlx_quant(prog, work, qtype, rows, by_ref)
        d = first_byte_mismatch(qtype, N_PER_ROW, got, want)
        if d:
            problems.append("%s: %s" % (name, d))
    return len(cases), problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--types", help="comma-separated type names (default: all the package handles)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    only = set(a.types.upper().split(",")) if a.types else None

    checks = [("to_float", t, check_dequant) for t in blocks.DEQUANT_TYPES]
    checks += [("ggml_quantize_chunk", t, lambda p, w, t, r: check_quant(p, w, t, r, False))
               for t in blocks.QUANT_TYPES]
    checks += [("from_float_ref", t, lambda p, w, t, r: check_quant(p, w, t, r, True))
               for t in blocks.QUANT_TYPES]

    failed = 0
    for what, qtype, fn in checks:
        if only and qtype.name not in only:
            continue
        # one generator per check, so a subset (--types) sees the same data as the full run
        rng = np.random.default_rng([SEED, int(qtype), len(what)])
        label = "%-20s %-8s" % (what, qtype.name)
        try:
            n, problems = fn(a.prog, a.work, qtype, rng)
        except NotImplementedInLibrary as e:
            print("FAIL: %s not implemented (%s)" % (label, e))
            failed += 1
            continue
        except RuntimeError as e:
            print("FAIL: %s %s" % (label, e))
            failed += 1
            continue
        if problems:
            print("FAIL: %s %d of %d cases differ from gguf %s" % (label, len(problems), n,
                                                                     "(float bits)" if what == "to_float"
                                                                     else "(bytes)"))
            for p in problems[:MAX_SHOWN]:
                print("        " + p)
            if len(problems) > MAX_SHOWN:
                print("        ... and %d more cases" % (len(problems) - MAX_SHOWN))
            failed += 1
        else:
            print("ok:   %s %d cases bit-exact" % (label, n))

    print("quant-oracle: %s" % ("all passed" if failed == 0 else "%d failed" % failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
