#!/usr/bin/env python3
"""Writes GGUF files with the PyPI package gguf (GGUFWriter) and, next to each, the JSON of what it
wrote (spec.expected), for ggmlx to read back:

    gen.py OUTDIR   ->  OUTDIR/py-a32.gguf, py-a32.json (default alignment), py-a64.gguf/.json (64)
"""
import json
import os
import sys

import numpy as np
import gguf

import spec

VT = gguf.GGUFValueType
TYPES = {"u8": VT.UINT8, "i8": VT.INT8, "u16": VT.UINT16, "i16": VT.INT16, "u32": VT.UINT32, "i32": VT.INT32,
         "f32": VT.FLOAT32, "bool": VT.BOOL, "str": VT.STRING, "u64": VT.UINT64, "i64": VT.INT64, "f64": VT.FLOAT64}
NP = {spec.GGML_F32: np.float32, spec.GGML_F16: np.float16, spec.GGML_I32: np.int32}


def write(path, alignment):
    w = gguf.GGUFWriter(path, spec.ARCH)
    if alignment != 32:
        w.add_custom_alignment(alignment)
    for key, t, v in spec.SCALARS:
        w.add_key_value(key, v, TYPES[t])
    for key, t, v in spec.ARRAYS:
        w.add_key_value(key, v, VT.ARRAY, sub_type=TYPES[t])
    for k, (name, ggml_type, shape, nbytes) in enumerate(spec.TENSORS):
        raw = spec.tensor_bytes(k, nbytes)
        if ggml_type == spec.GGML_Q8_0:
            # quantized data goes in as bytes: rows of 34-byte blocks
            w.add_tensor(name, np.frombuffer(raw, dtype=np.uint8).reshape(shape[0], -1),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, np.frombuffer(raw, dtype=NP[ggml_type]).reshape(shape))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for alignment in (32, 64):
        base = os.path.join(out, "py-a%d" % alignment)
        write(base + ".gguf", alignment)
        with open(base + ".json", "w", encoding="utf-8") as f:
            json.dump(spec.expected(alignment, alignment != 32), f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
