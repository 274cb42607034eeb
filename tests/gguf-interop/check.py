#!/usr/bin/env python3
"""Reads a GGUF file with the PyPI package gguf (GGUFReader) and compares what it finds with an
expected JSON (spec.canonical form); exits 1 on a difference.

    check.py FILE EXPECTED.json
"""
import json
import sys

import numpy as np
import gguf

VT = gguf.GGUFValueType
NAMES = {VT.UINT8: "u8", VT.INT8: "i8", VT.UINT16: "u16", VT.INT16: "i16", VT.UINT32: "u32", VT.INT32: "i32",
         VT.FLOAT32: "f32", VT.BOOL: "bool", VT.STRING: "str", VT.UINT64: "u64", VT.INT64: "i64",
         VT.FLOAT64: "f64"}


def plain(v):
    return bool(v) if isinstance(v, (bool, np.bool_)) else v


def canonical(path):
    r = gguf.GGUFReader(path)
    kv = []
    for name, field in r.fields.items():
        if name.startswith("GGUF."):
            continue  # the header, which GGUFReader lists as fields
        if field.types[0] == VT.ARRAY:
            kv.append([name, "arr", NAMES[field.types[-1]], [plain(x) for x in field.contents()]])
        else:
            kv.append([name, NAMES[field.types[0]], plain(field.contents())])
    tensors = []
    for t in r.tensors:
        ne = [int(x) for x in t.shape] + [1] * (4 - len(t.shape))
        tensors.append([t.name, int(t.tensor_type), ne, int(t.data_offset - r.data_offset), t.data.tobytes().hex()])
    return {"version": int(r.fields["GGUF.version"].contents()), "alignment": int(r.alignment), "kv": kv,
            "tensors": tensors}


def diff(got, want, where="file"):
    """The first difference between two canonical forms, or None."""
    if type(got) in (list, dict) or type(want) in (list, dict):
        if type(got) is not type(want):
            return "%s: %r != %r" % (where, got, want)
        if isinstance(want, dict):
            for k in sorted(set(got) | set(want)):
                d = diff(got.get(k), want.get(k), "%s.%s" % (where, k))
                if d:
                    return d
            return None
        if len(got) != len(want):
            return "%s: %d entries, expected %d (%r vs %r)" % (where, len(got), len(want), got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            d = diff(g, w, "%s[%d]" % (where, i))
            if d:
                return d
        return None
    same = got == want and (isinstance(got, bool) == isinstance(want, bool))
    return None if same else "%s: %r != %r" % (where, got, want)


def main():
    path, expected = sys.argv[1], sys.argv[2]
    with open(expected, encoding="utf-8") as f:
        want = json.load(f)
    d = diff(canonical(path), want)
    if d:
        print("check.py: %s read by gguf.GGUFReader differs from %s: %s" % (path, expected, d))
        sys.exit(1)
    print("check.py: %s read by gguf.GGUFReader matches %s (%d keys, %d tensors)" % (
        path, expected, len(want["kv"]), len(want["tensors"])))


if __name__ == "__main__":
    main()
