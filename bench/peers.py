"""The peers users pick for CPU generation (issue 25, item 1), for
bench/decode.py: llama.cpp (through llama-cpp-python, GGUF files at f32, f16,
Q8_0 and Q4_0) and CTranslate2 (float32 and int8_float32), both made from
the Hugging Face directory of the decode bench's own random weights.

  - hf_dir(): GPT2LMHeadModel(GPT2Config(n_positions=N)) holding the bench's
    weights, save_pretrained (config.json, model.safetensors), plus a
    stand-in GPT-2 tokenizer: the 256 byte-level symbols, placeholders and
    <|endoftext|> = 50256 (no real tokenizer is on this machine and
    the bench feeds token ids; CTranslate2's converter and GGUF want a
    vocabulary of the model's size), with one merge (llama.cpp wants some).
  - gguf_files(): the directory's model.safetensors written as GGUF (the
    `gguf` package; llama.cpp's GPT-2 tensor names, Conv1D matrices
    transposed to [out, in], as convert_hf_to_gguf.py's GPT2Model does) at f32
    and f16 (matrices f16; norms and biases f32, as the converter keeps them),
    then Q8_0 and Q4_0 by llama_model_quantize from the f32 file with its
    defaults (what `llama-quantize F32.gguf OUT.gguf Q4_0` does: the tied
    token table, which is also the head, becomes Q6_K under Q4_0).
  - ct2_dirs(): ctranslate2.converters.TransformersConverter of the same
    directory, quantization float32 and int8_float32.

Nothing here is used by the tests: these are bench-only peers (bench/setup.sh
pins them).
"""

import hashlib
import json
import os
import shutil

import numpy as np

D, LAYERS, FFN, HEADS, VOCAB = 768, 12, 3072, 12, 50257

LLAMA_PRECISIONS = ("f32", "f16", "Q8_0", "Q4_0")
CT2_PRECISIONS = ("float32", "int8_float32")

# Agreement with the f32 reference, per weight precision: max |y - y_ref| <=
# tol * max |y_ref|, and the peer's top-1 token is the reference's or within
# tol * max |y_ref| of its logit (docs/performance.md, "Peers" gives the
# reasoning and the errors measured).
TOL = {"f32": 1e-3, "f16": 1e-2, "int8": 5e-2, "Q4_0": 3e-1}
PRECISION_OF = {"f32": "f32", "f16": "f16", "Q8_0": "int8", "Q4_0": "Q4_0",
                "float32": "f32", "int8_float32": "int8", "int8": "int8", "q4": "Q4_0"}


# Part of every converted file's stamp: bump it when the conversions change.
FORMAT = 2


class PeerError(Exception):
    pass


def tol(system, precision):
    """The agreement tolerance of a row: its weights' TOL, except llama.cpp
    at f32 weights, whose KV cache is f16 (its default) and whose GELU reads
    an f16 table: it gets f16's."""
    p = PRECISION_OF.get(precision, precision)
    if system == "llama" and p == "f32":
        p = "f16"
    return TOL[p]


def log(msg):
    import sys
    print(msg, file=sys.stderr, flush=True)


def file_digest(path):
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def byte_symbols():
    """GPT-2's byte-level alphabet: the 256 printable stand-ins of bytes."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


# One merge (a space and "t": GPT-2's first): llama.cpp refuses a GPT-2
# vocabulary without merges.
MERGES = [("\u0120", "t")]


def stand_in_vocab():
    """50257 distinct tokens: the byte symbols, the merge's result,
    placeholders, <|endoftext|>."""
    tokens = byte_symbols() + ["".join(m) for m in MERGES]
    tokens += [f"<|t{i}|>" for i in range(len(tokens), VOCAB - 1)]
    tokens.append("<|endoftext|>")
    assert len(tokens) == VOCAB and len(set(tokens)) == VOCAB
    return tokens


def hf_dir(weights, n_positions, out):
    """The Hugging Face directory of `weights` (the bench's safetensors, the
    Hub's GPT-2 names); kept while the weights' digest is the same."""
    stamp = os.path.join(out, "source.json")
    digest = f"{file_digest(weights)}-n{n_positions}-v{FORMAT}"
    want = {"weights": digest}
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == want:
                return out, digest
    import torch
    import safetensors_io
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    w = {k: torch.from_numpy(v) for k, v in safetensors_io.load(weights).items()}
    model = GPT2LMHeadModel(GPT2Config(n_positions=n_positions))
    missing, unexpected = model.transformer.load_state_dict(w, strict=False)
    if missing or unexpected:
        raise PeerError(f"weights do not match GPT2LMHeadModel: missing {missing[:5]}, "
                        f"unexpected {unexpected[:5]}")
    model.eval().save_pretrained(out)
    bpe = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(stand_in_vocab())},
                               merges=MERGES))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    end = "<|endoftext|>"
    tok = GPT2TokenizerFast(tokenizer_object=bpe, bos_token=end, eos_token=end, unk_token=end)
    if len(tok) != VOCAB:
        raise PeerError(f"stand-in tokenizer has {len(tok)} tokens, not {VOCAB}")
    tok.save_pretrained(out)
    with open(stamp, "w") as f:
        json.dump(want, f)
    return out, digest


def gguf_name(hf_name):
    """The Hub's GPT-2 tensor name (save_pretrained's, `transformer.` first)
    -> llama.cpp's, and whether to transpose."""
    hf_name = hf_name.removeprefix("transformer.")
    if hf_name == "wte.weight":
        return "token_embd.weight", False
    if hf_name == "wpe.weight":
        return "position_embd.weight", False
    if hf_name.startswith("ln_f."):
        return "output_norm." + hf_name.split(".")[-1], False
    parts = hf_name.split(".")
    i, rest, kind = parts[1], ".".join(parts[2:-1]), parts[-1]
    name = {"ln_1": "attn_norm", "ln_2": "ffn_norm", "attn.c_attn": "attn_qkv",
            "attn.c_proj": "attn_output", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}[rest]
    return f"blk.{i}.{name}.{kind}", kind == "weight" and rest not in ("ln_1", "ln_2")


def write_gguf(hf, path, precision, n_positions):
    import gguf
    import safetensors_io

    w = safetensors_io.load(os.path.join(hf, "model.safetensors"))
    writer = gguf.GGUFWriter(path, "gpt2")
    writer.add_name("gpt2-decode-bench")
    writer.add_block_count(LAYERS)
    writer.add_context_length(n_positions)
    writer.add_embedding_length(D)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_layer_norm_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32 if precision == "f32"
                         else gguf.LlamaFileType.MOSTLY_F16)
    tokens = stand_in_vocab()
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    types = [gguf.TokenType.NORMAL] * VOCAB
    types[VOCAB - 1] = gguf.TokenType.CONTROL
    writer.add_token_types(types)
    writer.add_token_merges([" ".join(m) for m in MERGES])
    writer.add_bos_token_id(VOCAB - 1)
    writer.add_eos_token_id(VOCAB - 1)
    names = set()
    for hf_name, v in w.items():
        if hf_name.endswith((".attn.bias", ".attn.masked_bias")):
            continue
        name, transpose = gguf_name(hf_name)
        names.add(name)
        v = np.ascontiguousarray(v.T if transpose else v, dtype=np.float32)
        if precision == "f16" and v.ndim == 2:
            v = v.astype(np.float16)
        writer.add_tensor(name, v)
    if len(names) != 4 + 12 * LAYERS:
        raise PeerError(f"{hf}: {len(names)} tensors for GGUF, expected {4 + 12 * LAYERS}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def quantize_gguf(src, path, precision, threads):
    import ctypes
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = {"Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
                    "Q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0}[precision]
    params.nthread = threads
    rc = llama_cpp.llama_model_quantize(src.encode(), path.encode(), ctypes.byref(params))
    if rc != 0:
        raise PeerError(f"llama_model_quantize {src} -> {precision} failed ({rc})")


def gguf_files(hf, digest, out, n_positions, precisions):
    """{precision: path or PeerError text}; files kept while `digest` holds."""
    os.makedirs(out, exist_ok=True)
    files = {}
    for p in ("f32",) + tuple(x for x in precisions if x != "f32"):
        path = os.path.join(out, f"gpt2_decode_{p}.gguf")
        stamp = path + ".sha1"
        if os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == digest:
            files[p] = path
            continue
        try:
            log(f"writing {os.path.basename(path)}")
            if p in ("f32", "f16"):
                write_gguf(hf, path + ".tmp", p, n_positions)
            else:
                if not isinstance(files.get("f32"), str):
                    raise PeerError("no f32 GGUF to quantize")
                quantize_gguf(files["f32"], path + ".tmp", p, os.cpu_count() or 1)
            os.replace(path + ".tmp", path)
            with open(stamp, "w") as f:
                f.write(digest)
            files[p] = path
        except Exception as e:              # noqa: BLE001: the table says why
            files[p] = PeerError(f"{type(e).__name__}: {e}")
    return {p: files[p] for p in precisions}


def gguf_bytes(path):
    """(bytes one decode step reads from the file's tensors, {tensor type:
    count}): every tensor but the position table (one row of it is read)."""
    import gguf

    r = gguf.GGUFReader(path)
    total, kinds = 0, {}
    for t in r.tensors:
        kinds[t.tensor_type.name] = kinds.get(t.tensor_type.name, 0) + 1
        if t.name == "position_embd.weight":
            total += int(t.n_bytes) // int(t.shape[-1] if t.shape[0] == D else t.shape[0])
            continue
        total += int(t.n_bytes)
    return total, kinds


def gguf_types(path):
    """The GGUF types of the token table (the head) and of the layer matrices."""
    import gguf

    r = gguf.GGUFReader(path)
    by = {t.name: t.tensor_type.name for t in r.tensors}
    return by.get("token_embd.weight"), by.get("blk.0.ffn_up.weight")


def ct2_dirs(hf, digest, out, precisions):
    import ctranslate2

    res = {}
    for p in precisions:
        path = os.path.join(out, f"ct2_{p}")
        stamp = os.path.join(out, f"ct2_{p}.sha1")
        if os.path.isdir(path) and os.path.exists(stamp) and open(stamp).read() == digest:
            res[p] = path
            continue
        try:
            log(f"converting to CTranslate2 ({p})")
            shutil.rmtree(path, ignore_errors=True)
            ctranslate2.converters.TransformersConverter(hf).convert(path, quantization=p,
                                                                      force=True)
            with open(stamp, "w") as f:
                f.write(digest)
            res[p] = path
        except Exception as e:              # noqa: BLE001: the table says why
            res[p] = PeerError(f"{type(e).__name__}: {e}")
    return res


def ct2_bytes(precision):
    """Bytes one decode step reads: every layer matrix and the head, which is
    the tied token table (one copy in model.bin: 507 MB at float32, 137 MB at
    int8_float32, the position table f32 in both); int8_float32 stores every
    matrix, the table included, in int8 with one f32 scale per output row."""
    layer_kn = D * 3 * D + D * D + 2 * D * FFN
    if precision == "float32":
        return 4 * (LAYERS * layer_kn + D * VOCAB)
    rows = LAYERS * (3 * D + D + FFN + D) + VOCAB
    return LAYERS * layer_kn + D * VOCAB + 4 * rows


def cache_bytes(system, c):
    """KV-cache bytes one decode step at context c reads: f32 caches for
    attnc, PyTorch and CTranslate2 (float32 compute in both of its
    precisions), f16 for llama.cpp (its default type_k / type_v) and attnc's
    -kv16 models ("attnc-f16"); 8 bits for llama.cpp's q8_0 caches (34
    bytes per block of 32: an f16 scale) and attnc's -kv8 models (a byte per
    feature and an f32 scale per row and head of 64), 1.0625 bytes an
    element both."""
    if system in ("llama-q8_0", "attnc-i8"):
        return LAYERS * 2 * c * D * 34 // 32
    size = 2 if system in ("llama", "attnc-f16") else 4
    return LAYERS * 2 * c * D * size


# ------------------------------------------------------------------ workers


def system_llama(a, ids):
    """llama-cpp-python's Llama on a GGUF: a prefill of C - 1 ids (eval), then
    the decode of the last id at position C - 1. Timing repeats that step:
    `n_tokens = C - 1` before each eval makes Llama.eval remove the cache rows
    from C - 1 on (llama_memory_seq_rm) and write row C - 1 again, as
    attnc's decode and PyTorch's rewound static cache do."""
    from llama_cpp import Llama

    n = ids.shape[1]
    # q8_0 caches: GGML_TYPE_Q8_0 keys and values (V needs flash attention).
    kv = {} if a.llama_kv == "f16" else {"type_k": 8, "type_v": 8}
    llm = Llama(model_path=a.model_file, n_ctx=n, n_batch=512, n_ubatch=512,
                n_threads=a.threads, n_threads_batch=a.threads, flash_attn=a.flash_attn,
                logits_all=False, verbose=False, use_mmap=True, **kv)
    if llm.n_vocab() != VOCAB:
        raise PeerError(f"llama.cpp read {llm.n_vocab()} tokens, not {VOCAB}")
    prompt = [int(t) for t in ids[0]]
    llm.eval(prompt[:-1])
    if llm.n_tokens != n - 1:
        raise PeerError(f"llama.cpp prefilled {llm.n_tokens} tokens, not {n - 1}")
    last = [prompt[-1]]

    def run():
        llm.n_tokens = n - 1
        llm.eval(last)

    def output():
        p = llm._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(p, shape=(VOCAB,)).reshape(1, 1, VOCAB).copy()
    return run, output


class Ct2Decode:
    """CTranslate2's Generator has no call that decodes one token into a cache
    it can rewind: generate_batch runs the prompt and then its decode steps.
    So the decode is timed inside a generation: a prompt of P ids, greedy
    (sampling_topk 1), --ct2-steps tokens (min_length = max_length, so that
    <|endoftext|> cannot stop it), and the step callback stamps the time of
    each token. The first stamp includes the prompt; the gaps between
    consecutive stamps are the decode steps at positions P .. P + steps - 2,
    each one timing sample (the median is taken over all of them). P = C - 1
    (steps at positions C - 1 onwards, as the other systems' one step at
    C - 1), except where those positions would pass n_positions: then P =
    n_positions - steps + 1 (at C = 4096 of 4096 and 34 steps: positions
    4063 to 4095). The logits checked are forward_batch's over all C ids,
    last position (the same model object and weights; forward_batch runs the
    prompt path, not the cached decode)."""

    def __init__(self, a, ids):
        import ctranslate2

        self.gen = ctranslate2.Generator(a.model_file, device="cpu", compute_type="default",
                                         intra_threads=a.threads, inter_threads=1)
        self.ids = [int(t) for t in ids[0]]
        self.steps = a.ct2_steps
        p = min(len(self.ids) - 1, a.n_positions - self.steps + 1)
        if p < 1:
            raise PeerError(f"--ct2-steps {self.steps} leave no prompt in {a.n_positions} positions")
        # generate_batch takes token strings (forward_batch takes ids).
        vocab = stand_in_vocab()
        self.prompt = [vocab[t] for t in self.ids[:p]]

    def logits(self):
        y = np.array(self.gen.forward_batch([self.ids]))
        return y[:, -1:, :]

    def run(self):
        import time

        stamps = []

        def cb(step):
            stamps.append(time.perf_counter())
            return False

        self.gen.generate_batch([self.prompt], max_length=self.steps,
                                min_length=self.steps, sampling_topk=1,
                                include_prompt_in_result=False, callback=cb)
        if len(stamps) != self.steps:
            raise PeerError(f"CTranslate2 made {len(stamps)} steps, not {self.steps}")
        return np.diff(stamps).tolist()
