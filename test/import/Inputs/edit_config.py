#!/usr/bin/env python3
"""Copy a Hugging Face fixture directory and edit its config.json, for the
import tests' bad inputs.

    edit_config.py SRC DST [FIELD=JSON | FIELD- | --raw TEXT | --drop FILE
                            | --strip-prefix PREFIX]...

FIELD=JSON sets a field (a dotted FIELD sets one inside an object),
FIELD- deletes it, --raw TEXT replaces config.json with TEXT as it is,
--drop FILE removes a file of the copy, --strip-prefix PREFIX renames the
tensors of model.safetensors that start with PREFIX (the Hub's GPT-2 file
has GPT2LMHeadModel's keys without `transformer.`).
"""

import json
import os
import shutil
import struct
import sys


def strip_prefix(path, prefix):
    """Renames the tensors in the header; the data stays as it is."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header = {k[len(prefix):] if k.startswith(prefix) else k: v
              for k, v in header.items()}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob[8 + n:])


def main(src, dst, *edits):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    path = os.path.join(dst, "config.json")
    with open(path) as f:
        config = json.load(f)
    raw = None
    it = iter(edits)
    for edit in it:
        if edit == "--raw":
            raw = next(it)
        elif edit == "--strip-prefix":
            strip_prefix(os.path.join(dst, "model.safetensors"), next(it))
        elif edit == "--drop":
            os.remove(os.path.join(dst, next(it)))
        elif edit.endswith("-"):
            *outer, last = edit[:-1].split(".")
            node = config
            for k in outer:
                node = node[k]
            del node[last]
        else:
            field, value = edit.split("=", 1)
            *outer, last = field.split(".")
            node = config
            for k in outer:
                node = node.setdefault(k, {})
            node[last] = json.loads(value)
    if os.path.exists(path):
        with open(path, "w") as f:
            f.write(raw if raw is not None else json.dumps(config, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:])
