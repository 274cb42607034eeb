"""Blocks and rows the quant-oracle test feeds to both sides (run.py).

Dequantization inputs are random bytes with every scale field overwritten by a finite value (a
non-finite scale is invalid data, ggml_validate_row_data refuses it), plus edge blocks: zero,
negative zero, subnormal, negative and largest scales, each with all-equal quant bytes that put
every quant at its smallest, largest or a middle value. Quantization inputs are float32 rows.
"""
import numpy as np

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

# Where each format keeps its fp16 scales (byte offsets in a block); the rest are quant bytes.
# IQ1_M has no scale field of its own (its fp16 is spread over four nibbles, see put_iq1m_scale),
# MXFP4 keeps a one-byte E8M0 exponent and NVFP4 four UE4M3 bytes.
FP16_FIELDS = {
    T.Q4_0: (0,), T.Q4_1: (0, 2), T.Q5_0: (0,), T.Q5_1: (0, 2), T.Q8_0: (0,),
    T.Q2_K: (80, 82), T.Q3_K: (108,), T.Q4_K: (0, 2), T.Q5_K: (0, 2), T.Q6_K: (208,),
    T.TQ1_0: (52,), T.TQ2_0: (64,),
    T.IQ2_XXS: (0,), T.IQ2_XS: (0,), T.IQ2_S: (0,), T.IQ3_XXS: (0,), T.IQ3_S: (0,),
    T.IQ1_S: (0,), T.IQ4_NL: (0,), T.IQ4_XS: (0,),
    T.IQ1_M: (),
}

DEQUANT_TYPES = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K,
                 T.TQ1_0, T.TQ2_0, T.MXFP4, T.NVFP4, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS,
                 T.IQ3_S, T.IQ1_S, T.IQ1_M, T.IQ4_NL, T.IQ4_XS]

QUANT_TYPES = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0, T.MXFP4]

# fp16 bit patterns of the edge scales: +0, -0, smallest and largest subnormal, -smallest
# subnormal, 1, -1, -0.5, largest finite and its negative
EDGE_FP16 = (0x0000, 0x8000, 0x0001, 0x03FF, 0x8001, 0x3C00, 0xBC00, 0xB800, 0x7BFF, 0xFBFF)
EDGE_E8M0 = (0, 1, 2, 126, 127, 128, 254)
EDGE_UE4M3 = (0x00, 0x01, 0x07, 0x08, 0x38, 0x7E, 0x7F)
# quant bytes all equal: every quant 0, every quant at its largest, and alternating bit patterns
EDGE_FILLS = (0x00, 0xFF, 0x55, 0xAA, 0x0F, 0xF0, 0x88, 0x77)


def block_size(qtype):
    return GGML_QUANT_SIZES[qtype][1]


def random_finite_fp16(rng, n):
    """n fp16 bit patterns, uniform over the finite ones (subnormals and both zeros included)."""
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32)
    inf_nan = (bits & 0x7C00) == 0x7C00
    bits[inf_nan] &= ~np.uint32(0x4000)  # clears an exponent bit: still random, now finite
    return bits.astype(np.uint16)


def put_iq1m_scale(block, bits):
    """IQ1_M's fp16 scale is the top nibbles of its four little-endian u16 scales (bytes 48..55),
    lowest fp16 nibble first."""
    for i in range(4):
        b = 48 + 2 * i + 1
        block[b] = (block[b] & 0x0F) | (((int(bits) >> (4 * i)) & 0x0F) << 4)


def put_scales(qtype, block, fp16_bits, byte_scale):
    """Writes fp16_bits into every fp16 scale field (byte_scale into MXFP4/NVFP4's byte scales)."""
    if qtype == T.IQ1_M:
        put_iq1m_scale(block, fp16_bits)
    elif qtype == T.MXFP4:
        block[0] = byte_scale
    elif qtype == T.NVFP4:
        block[0:4] = byte_scale
    else:
        for off in FP16_FIELDS[qtype]:
            block[off] = int(fp16_bits) & 0xFF
            block[off + 1] = int(fp16_bits) >> 8


def random_blocks(qtype, rng, n):
    size = block_size(qtype)
    blocks = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
    for b in blocks:
        if qtype == T.MXFP4:
            b[0] = rng.integers(0, 255)  # 0xFF is E8M0's NaN
        elif qtype == T.NVFP4:
            pass  # every UE4M3 byte decodes to a finite scale
        elif qtype == T.IQ1_M:
            put_iq1m_scale(b, random_finite_fp16(rng, 1)[0])
        else:
            # each field its own value: d and m (or dmin) of different signs and sizes
            for off in FP16_FIELDS[qtype]:
                v = int(random_finite_fp16(rng, 1)[0])
                b[off], b[off + 1] = v & 0xFF, v >> 8
    return blocks


def edge_blocks(qtype, rng):
    """(name, blocks) pairs: every edge scale with every fill, and the fills with random scales."""
    size = block_size(qtype)
    if qtype == T.MXFP4:
        scales = [(0, e) for e in EDGE_E8M0]
    elif qtype == T.NVFP4:
        scales = [(0, u) for u in EDGE_UE4M3]
    else:
        scales = [(h, 0) for h in EDGE_FP16]
    out = []
    for fill in EDGE_FILLS:
        blocks = np.full((len(scales) + 1, size), fill, dtype=np.uint8)
        for b, (h, byte) in zip(blocks, scales):
            put_scales(qtype, b, h, byte)
        # and once with random quant bytes around the first edge scale, for formats where an
        # all-equal fill misses the extremes of a packed field
        blocks[-1] = rng.integers(0, 256, size=size, dtype=np.uint8)
        put_scales(qtype, blocks[-1], scales[0][0], scales[0][1])
        out.append(("fill 0x%02X" % fill, blocks))
    return out


def quant_rows(rng, n_per_row, nrows):
    """(name, float32 rows) pairs for the quantizers."""
    def shaped(a):
        return np.ascontiguousarray(a, dtype=np.float32).reshape(nrows, n_per_row)

    n = n_per_row * nrows
    gauss = rng.standard_normal(n)
    ramp = np.tile(np.linspace(-1.0, 1.0, n_per_row), nrows)
    return [
        ("gaussian", shaped(gauss)),
        ("student-t(3)", shaped(rng.standard_t(3, n))),
        ("cauchy", shaped(rng.standard_cauchy(n))),
        ("gaussian with outliers", shaped(np.where(rng.random(n) < 0.01, 50.0 * gauss, gauss))),
        ("all zero", shaped(np.zeros(n))),
        ("all equal 0.7", shaped(np.full(n, 0.7))),
        ("all equal -3.25", shaped(np.full(n, -3.25))),
        ("ramp -1..1 (exact halves)", shaped(ramp)),
        ("small integers", shaped(rng.integers(-8, 9, n))),
        ("tiny 1e-6", shaped(gauss * 1e-6)),
        ("tiny 1e-30", shaped(gauss * 1e-30)),
        ("near FLT_MIN 1e-37", shaped(gauss * 1e-37)),
        ("huge 6e4", shaped(gauss * 6e4)),
        ("huge 1e30", shaped(gauss * 1e30)),
    ]
