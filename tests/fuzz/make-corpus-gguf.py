#!/usr/bin/env python3
"""Writes the seed corpus of fuzz-gguf: small GGUF files that between them use every value type,
arrays of each, the alignment key, several tensor types and shapes, and both versions read.

    python3 tests/fuzz/make-corpus-gguf.py tests/fuzz/corpus-gguf

Only the standard library: the files are spelled byte by byte (struct), so the corpus does not
depend on any GGUF writer.
"""
import os
import struct
import sys

# value type ids (enum gguf_type) and their struct formats
SCALARS = [(0, "B", 7), (1, "b", -7), (2, "H", 700), (3, "h", -700), (4, "I", 70000), (5, "i", -70000),
           (6, "f", 1.5), (7, "?", True), (10, "Q", 1 << 40), (11, "q", -(1 << 40)), (12, "d", 2.25)]
STR, ARR = 8, 9


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(b)) + b


def header(n_tensors, n_kv, version=3):
    return b"GGUF" + struct.pack("<Iqq", version, n_tensors, n_kv)


def kv(key, type_id, payload):
    return s(key) + struct.pack("<i", type_id) + payload


def info(name, ne, ggml_type, offset):
    return s(name) + struct.pack("<I", len(ne)) + struct.pack("<%dq" % len(ne), *ne) + struct.pack("<iQ", ggml_type, offset)


def pad(b, align=32):
    return b + b"\0" * (-len(b) % align)


def files():
    yield "empty", header(0, 0)
    yield "v2", header(0, 1, version=2) + kv("a", 4, struct.pack("<I", 1))
    body = b"".join(kv("k%d" % t, t, struct.pack("<" + f, v)) for t, f, v in SCALARS)
    yield "scalars", header(0, len(SCALARS) + 1) + body + kv("str", STR, s("h\xe9llo"))
    arrays = b"".join(kv("a%d" % t, ARR, struct.pack("<iQ", t, 3) + struct.pack("<3" + f, v, v, v))
                      for t, f, v in SCALARS)
    strs = kv("tokens", ARR, struct.pack("<iQ", STR, 4) + s("a") + s("") + s(b"\xff\xfe") + s("\xe2\x82\xac"))
    yield "arrays", header(0, len(SCALARS) + 1) + arrays + strs
    yield "empty-array", header(0, 1) + kv("e", ARR, struct.pack("<iQ", 0, 0))
    # tensors: F32 2x3, F16 8, Q8_0 32 (34 bytes), I32 4; alignment 32 and 64
    for align in (32, 64):
        kvs = kv("general.alignment", 4, struct.pack("<I", align))
        ts = [("f32", [2, 3], 0, 24), ("f16", [8], 1, 16), ("q8_0", [32], 8, 34), ("i32", [4, 1, 1], 26, 16)]
        infos, off = b"", 0
        for name, ne, t, nbytes in ts:
            infos += info(name, ne, t, off)
            off += nbytes + (-nbytes % align)
        meta = pad(header(len(ts), 1) + kvs + infos, align)
        data = b"".join(pad(bytes(range(nbytes)), align) for _, _, _, nbytes in ts)
        yield "tensors-align%d" % align, meta + data
    yield "zero-size-tensor", pad(header(1, 0) + info("z", [4, 0], 0, 0))
    yield "q4_k", pad(header(1, 0) + info("q", [256], 12, 0)) + bytes(144)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus-gguf")
    os.makedirs(out, exist_ok=True)
    for name, data in files():
        with open(os.path.join(out, name + ".gguf"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
