#!/usr/bin/env python3
"""Copy a Hugging Face fixture directory and edit its config.json, for the
import tests' bad inputs.

    edit_config.py SRC DST [FIELD=JSON | FIELD- | --raw TEXT | --drop FILE]...

FIELD=JSON sets a field (a dotted FIELD sets one inside an object),
FIELD- deletes it, --raw TEXT replaces config.json with TEXT as it is,
--drop FILE removes a file of the copy.
"""

import json
import os
import shutil
import sys


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
