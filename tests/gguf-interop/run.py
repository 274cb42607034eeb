#!/usr/bin/env python3
"""The GGUF interop test, both ways, with the PyPI package gguf as the oracle (CTest gguf-interop):

  1. gen.py writes files with gguf.GGUFWriter (alignments 32 and 64) and the JSON of their content;
     ggmlx reads each (gguf-interop dump) and must find exactly that content;
  2. ggmlx writes the same content (gguf-interop write); gguf.GGUFReader reads it (check.py) and
     must find the same JSON;
  3. with --tool, ggml-gguf prints a file the PyPI package wrote (text and --json).

    run.py --prog PATH/gguf-interop --work DIR [--tool PATH/ggml-gguf]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import check  # noqa: E402
import gen    # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tool")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    sys.argv = ["gen.py", a.work]
    gen.main()
    failed = 0

    for alignment in (32, 64):
        path = os.path.join(a.work, "py-a%d.gguf" % alignment)
        with open(os.path.join(a.work, "py-a%d.json" % alignment), encoding="utf-8") as f:
            want = json.load(f)
        out = subprocess.run([a.prog, "dump", path], capture_output=True, check=False)
        if out.returncode != 0:
            print("FAIL: ggmlx cannot read %s: %s" % (path, out.stderr.decode(errors="replace")))
            failed += 1
            continue
        d = check.diff(json.loads(out.stdout.decode("utf-8")), want)
        print("%s: ggmlx reads %s (written by gguf.GGUFWriter)%s" % ("FAIL" if d else "ok", path,
                                                                      ": " + d if d else ""))
        failed += d is not None

    mine = os.path.join(a.work, "ggmlx-a32.gguf")
    out = subprocess.run([a.prog, "write", mine], capture_output=True, check=False)
    if out.returncode != 0:
        print("FAIL: ggmlx cannot write %s: %s" % (mine, out.stderr.decode(errors="replace")))
        failed += 1
    else:
        with open(os.path.join(a.work, "py-a32.json"), encoding="utf-8") as f:
            want = json.load(f)
        d = check.diff(check.canonical(mine), want)
        print("%s: gguf.GGUFReader reads %s (written by ggmlx)%s" % ("FAIL" if d else "ok", mine,
                                                                      ": " + d if d else ""))
        failed += d is not None

    if a.tool:
        path = os.path.join(a.work, "py-a64.gguf")
        text = subprocess.run([a.tool, path], capture_output=True, check=False)
        js = subprocess.run([a.tool, "--json", path], capture_output=True, check=False)
        ok = (text.returncode == 0 and b"blk.q8_0" in text.stdout and b"general.alignment" in text.stdout
              and js.returncode == 0)
        if ok:
            doc = json.loads(js.stdout.decode("utf-8"))
            ok = doc.get("alignment") == 64 and len(doc.get("tensors", [])) == 4
        print("%s: ggml-gguf prints %s (text and --json)" % ("ok" if ok else "FAIL", path))
        if not ok:
            print(text.stdout.decode(errors="replace"), text.stderr.decode(errors="replace"),
                  js.stdout.decode(errors="replace"), js.stderr.decode(errors="replace"))
        failed += not ok

    print("gguf-interop: %s" % ("all passed" if failed == 0 else "%d failed" % failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
