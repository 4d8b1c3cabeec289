#!/usr/bin/env python3
"""Copy a Hugging Face fixture directory and edit its config.json, for the
import tests' bad inputs.

    edit_config.py SRC DST [FIELD=JSON | FIELD- | --raw TEXT | --drop FILE
                            | --strip-prefix PREFIX | --shard N]...

FIELD=JSON sets a field (a dotted FIELD sets one inside an object),
FIELD- deletes it, --raw TEXT replaces config.json with TEXT as it is,
--drop FILE removes a file of the copy, --strip-prefix PREFIX renames the
tensors of model.safetensors that start with PREFIX (the Hub's GPT-2 file
has GPT2LMHeadModel's keys without `transformer.`), --shard N splits
model.safetensors into N shards and model.safetensors.index.json as
transformers' save_pretrained(max_shard_size=...) names them.
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


def shard(directory, n):
    """Splits DIRECTORY/model.safetensors into `n` shards of consecutive
    tensors (in the file's data order) plus the index, and removes it. The
    tensors' bytes are copied as they are."""
    path = os.path.join(directory, "model.safetensors")
    with open(path, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length])
    meta = header.pop("__metadata__", None)
    names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    data = blob[8 + length:]
    weight_map, total = {}, 0
    for i in range(n):
        part = names[i * len(names) // n:(i + 1) * len(names) // n]
        shard_name = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        out, chunks, offset = {}, [], 0
        if meta is not None:
            out["__metadata__"] = meta
        for k in part:
            begin, end = header[k]["data_offsets"]
            out[k] = dict(header[k], data_offsets=[offset, offset + end - begin])
            chunks.append(data[begin:end])
            offset += end - begin
            weight_map[k] = shard_name
        total += offset
        text = json.dumps(out).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(directory, shard_name), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
    os.remove(path)


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
        elif edit == "--shard":
            shard(dst, int(next(it)))
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
