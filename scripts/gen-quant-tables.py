#!/usr/bin/env python3
"""Writes src/core/quant/quant-tables.{h,c}: the codebooks of the quantized formats.

The tables are part of the file format (a block stores indices into them), so they must be the
ones upstream's files were written with. They are taken from the PyPI package gguf (0.19.0,
upstream's own Python reader, `gguf.quants`), never typed in by hand:

  ggmlx_kvalues_iq4nl   IQ4_NL.kvalues                 (IQ4_NL, IQ4_XS)
  ggmlx_kvalues_fp4     MXFP4.kvalues (== NVFP4's)     (MXFP4, NVFP4: doubled E2M1 values)
  ggmlx_iq2xxs_grid     IQ2_XXS grid_hex/grid_map      256 points of 8 magnitudes (one byte each)
  ggmlx_iq2xs_grid      IQ2_XS                         512 x 8
  ggmlx_iq2s_grid       IQ2_S                          1024 x 8
  ggmlx_iq3xxs_grid     IQ3_XXS                        256 x 4
  ggmlx_iq3s_grid       IQ3_S                          512 x 4
  ggmlx_iq1s_grid       IQ1_S (IQ1_M has the same)     2048 x 8 values -1/0/1, one int8 byte each
  ggmlx_ksigns_iq2xs    IQ2_XXS.ksigns                 7-bit sign index -> 8 sign bits of even parity
  ggmlx_kmask_iq2xs     bit j = 1 << j

A grid entry packs its values little-endian: value j is byte j of the integer.

Usage: gen-quant-tables.py [--check] [--python-check-only]
  --check   compare with the files in the tree instead of writing them (exit 1 on a difference)
Needs numpy and gguf==0.19.0 (a venv: python3 -m venv v && v/bin/pip install gguf==0.19.0 numpy).
"""
import argparse
import os
import sys

import numpy as np

try:
    import gguf
    import gguf.quants as q
except ImportError:
    sys.exit("gen-quant-tables.py: needs the PyPI package gguf (0.19.0) and numpy")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_H = os.path.join(ROOT, "src", "core", "quant", "quant-tables.h")
OUT_C = os.path.join(ROOT, "src", "core", "quant", "quant-tables.c")


def grid_values(cls):
    """The grid of a codebook class as an (entries, values per entry) int array."""
    cls.init_grid()
    g = np.asarray(cls.grid, dtype=np.float32).reshape(cls.grid_shape)
    r = np.rint(g).astype(np.int64)
    if not np.array_equal(r.astype(np.float32), g):
        sys.exit("%s: grid values are not integers" % cls.__name__)
    return r


def pack(rows, width):
    """Each row of small integers into one little-endian integer, one byte per value."""
    out = []
    for row in rows:
        v = 0
        for j, x in enumerate(row):
            v |= (int(x) & 0xFF) << (8 * j)
        out.append(v)
    assert all(v < (1 << (8 * width)) for v in out)
    return out


def c_array(ctype, name, values, per_line, fmt):
    lines = ["const %s %s[%d] = {" % (ctype, name, len(values))]
    for i in range(0, len(values), per_line):
        lines.append("    " + " ".join(fmt(v) + "," for v in values[i:i + per_line]))
    lines.append("};")
    return "\n".join(lines)


def ksigns_by_rule():
    """The sign index rule, derived independently: the low 7 bits as given, bit 7 makes the parity even."""
    out = []
    for i in range(128):
        parity = bin(i).count("1") & 1
        out.append(i | (parity << 7))
    return out


def build():
    tables = []  # (ctype, name, values, per_line, fmt, comment)
    h = lambda w: (lambda v: "0x%0*x" % (2 * w, v))
    dec = lambda v: "%d" % v

    kv_iq4 = [int(v) for v in q.IQ4_NL.kvalues]
    kv_fp4 = [int(v) for v in q.MXFP4.kvalues]
    if list(q.NVFP4.kvalues) != list(q.MXFP4.kvalues):
        sys.exit("NVFP4 and MXFP4 tables differ in this gguf package")
    tables.append(("int8_t", "ggmlx_kvalues_iq4nl", kv_iq4, 16, dec, "IQ4_NL.kvalues"))
    tables.append(("int8_t", "ggmlx_kvalues_fp4", kv_fp4, 16, dec, "MXFP4.kvalues (the doubled E2M1 values)"))

    for cls, name, width in ((q.IQ2_XXS, "ggmlx_iq2xxs_grid", 8), (q.IQ2_XS, "ggmlx_iq2xs_grid", 8),
                             (q.IQ2_S, "ggmlx_iq2s_grid", 8), (q.IQ3_XXS, "ggmlx_iq3xxs_grid", 4),
                             (q.IQ3_S, "ggmlx_iq3s_grid", 4), (q.IQ1_S, "ggmlx_iq1s_grid", 8)):
        vals = grid_values(cls)
        if vals.shape[1] != width:
            sys.exit("%s: %d values per entry, expected %d" % (cls.__name__, vals.shape[1], width))
        ctype = "uint64_t" if width == 8 else "uint32_t"
        tables.append((ctype, name, pack(vals, width), 4 if width == 8 else 8, h(width),
                       "%s grid (%d x %d)" % (cls.__name__, vals.shape[0], width)))
    if not np.array_equal(grid_values(q.IQ1_S), grid_values(q.IQ1_M)):
        sys.exit("IQ1_S and IQ1_M grids differ in this gguf package")

    ks = list(q.IQ2_XXS.ksigns)
    if ks != ksigns_by_rule():
        sys.exit("IQ2_XXS.ksigns does not follow the even-parity rule")
    tables.append(("uint8_t", "ggmlx_ksigns_iq2xs", ks, 16, h(1), "IQ2_XXS.ksigns"))
    tables.append(("uint8_t", "ggmlx_kmask_iq2xs", [1 << j for j in range(8)], 8, h(1), "bit j"))
    return tables


def render(tables):
    src = "gguf %s (gguf.quants)" % getattr(gguf, "__version__", "0.19.0")
    head = ("/*\n * quant-tables.h -- the codebooks of the quantized formats (generated by\n"
            " * scripts/gen-quant-tables.py from the PyPI package %s: do not edit).\n"
            " * A grid entry packs its values little-endian, one byte each.\n */\n"
            "#ifndef GGMLX_QUANT_TABLES_H\n#define GGMLX_QUANT_TABLES_H\n\n#include <stdint.h>\n\n"
            "/* exported from libggml-base: the CPU kernels in libggml-cpu read them too */\n"
            "#if defined(__GNUC__) && !defined(_WIN32)\n"
            "#    define GGMLX_QUANT_TABLE_API __attribute__((visibility(\"default\")))\n"
            "#else\n#    define GGMLX_QUANT_TABLE_API\n#endif\n\n" % src)
    body_h = "".join("extern GGMLX_QUANT_TABLE_API const %s %s[%d]; /* %s */\n" % (t[0], t[1], len(t[2]), t[5])
                     for t in tables)
    out_h = head + body_h + "\n#endif\n"
    out_c = ("/* quant-tables.c -- generated by scripts/gen-quant-tables.py from the PyPI package %s:\n"
             " * do not edit. */\n#include \"quant-tables.h\"\n" % src)
    for t in tables:
        out_c += "\n/* %s */\n" % t[5] + c_array(t[0], t[1], t[2], t[3], t[4]) + "\n"
    return out_h, out_c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    out_h, out_c = render(build())
    if a.check:
        bad = [p for p, s in ((OUT_H, out_h), (OUT_C, out_c)) if not os.path.exists(p) or open(p).read() != s]
        for p in bad:
            print("gen-quant-tables.py: %s differs from the gguf package's tables (run the script)" % p)
        if not bad:
            print("gen-quant-tables.py: tables agree with the gguf package")
        return 1 if bad else 0
    with open(OUT_H, "w") as f:
        f.write(out_h)
    with open(OUT_C, "w") as f:
        f.write(out_c)
    print("wrote %s, %s" % (OUT_H, OUT_C))
    return 0


if __name__ == "__main__":
    sys.exit(main())
