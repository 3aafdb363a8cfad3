#!/usr/bin/env python3
"""Share of single-byte changes of a version's manifest.json that `timef
verify` finds (exit 1 and a finding naming manifest.json).

Every offset is changed once (xor 1) in a private copy of the version.

usage: manifest_flip_rate.py TIMEF_BINARY VERSION_DIR
prints `found F of N single-byte changes (P%)` and the first missed offsets.
"""
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    timef, version = sys.argv[1], os.path.realpath(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(os.path.dirname(version)), os.path.basename(version))
        shutil.copytree(version, copy)
        path = os.path.join(copy, "manifest.json")
        original = open(path, "rb").read()
        found, missed = 0, []
        for pos in range(len(original)):
            changed = bytearray(original)
            changed[pos] ^= 0x01
            open(path, "wb").write(changed)
            out = subprocess.run([timef, "verify", copy], capture_output=True, text=True)
            if out.returncode == 1 and "manifest.json" in out.stdout:
                found += 1
            else:
                missed.append(pos)
        n = len(original)
        print(f"found {found} of {n} single-byte changes ({100.0 * found / n:.2f}%)")
        if missed:
            print("first missed offsets:", missed[:20])


main()
