"""The content both sides of the GGUF interop test write: one key of every value type, an array of
every element type (UTF-8 strings among them) and tensors of four types. gguf-interop.c writes the
same content through ggmlx (alignment 32); keep the two in step.

canonical() is the form both readers' results are compared in:
    {"version": 3, "alignment": 32,
     "kv": [[key, type, value] | [key, "arr", element type, [values]], ...],
     "tensors": [[name, ggml type id, [ne0, ne1, ne2, ne3], offset in the data section, data hex], ...]}
f32 values are the float32's exact value as a double, so text from either side compares exactly.
"""
import numpy as np

ARCH = "interop"

SCALARS = [
    ("t.u8", "u8", 200),
    ("t.i8", "i8", -100),
    ("t.u16", "u16", 60000),
    ("t.i16", "i16", -30000),
    ("t.u32", "u32", 4000000000),
    ("t.i32", "i32", -2000000000),
    ("t.f32", "f32", 1.25),
    ("t.bool", "bool", True),
    ("t.str", "str", "h\u00e9llo w\u00f6rld \u20ac \U0001F600"),
    ("t.u64", "u64", 2**64 - 2),
    ("t.i64", "i64", -2**63 + 1),
    ("t.f64", "f64", 6.5e300),
]

ARRAYS = [
    ("a.u8", "u8", [1, 2, 255]),
    ("a.i8", "i8", [-1, 0, 127]),
    ("a.u16", "u16", [1, 65535]),
    ("a.i16", "i16", [-32768, 5]),
    ("a.u32", "u32", [7, 4000000000]),
    ("a.i32", "i32", [-7, 2000000000]),
    ("a.f32", "f32", [0.5, -1e30]),
    ("a.bool", "bool", [True, False, True]),
    ("a.u64", "u64", [2**64 - 1]),
    ("a.i64", "i64", [-2**63, 3]),
    ("a.f64", "f64", [3.25, -0.5]),
    ("a.str", "str", ["alpha", "", "\u00e9t\u00e9", "\u65e5\u672c"]),
]

# name, ggml type id, numpy shape (outermost first, as numpy), bytes
GGML_F32, GGML_F16, GGML_Q8_0, GGML_I32 = 0, 1, 8, 26
TENSORS = [
    ("tok.f32", GGML_F32, (3, 2), 24),
    ("blk.f16", GGML_F16, (8,), 16),
    ("blk.q8_0", GGML_Q8_0, (2, 32), 68),
    ("out.i32", GGML_I32, (1, 4), 16),
]


def tensor_bytes(k, n):
    """The data of tensor k: a pattern gguf-interop.c makes the same way."""
    return bytes((i * 7 + k * 13 + 1) & 0xFF for i in range(n))


def value(type_name, v):
    return float(np.float32(v)) if type_name == "f32" else v


def expected(alignment, with_alignment_key):
    kv = [["general.architecture", "str", ARCH]]
    if with_alignment_key:
        kv.append(["general.alignment", "u32", alignment])
    kv += [[k, t, value(t, v)] for k, t, v in SCALARS]
    kv += [[k, "arr", t, [value(t, x) for x in v]] for k, t, v in ARRAYS]
    tensors, off = [], 0
    for k, (name, ggml_type, shape, nbytes) in enumerate(TENSORS):
        ne = list(reversed(shape)) + [1] * (4 - len(shape))
        tensors.append([name, ggml_type, ne, off, tensor_bytes(k, nbytes).hex()])
        off += nbytes + (-nbytes % alignment)
    return {"version": 3, "alignment": alignment, "kv": kv, "tensors": tensors}
