#!/usr/bin/env python3
"""Generate goldens/nonfinite.safetensors: what the Hugging Face modules of
three conformance configurations give when one weight element or one input
position is NaN or Inf (issue 22: a damaged checkpoint must not give
plausible numbers, and NaN / Inf must reach the outputs PyTorch's reach).

Pinned versions as make_goldens.py (torch==2.15.0, transformers==5.23.0);
regenerate with the same venv:

    /tmp/golden-venv/bin/python test/conformance/make_nonfinite_goldens.py

Nothing is drawn at random: each configuration's module is rebuilt from the
committed goldens/<name>.safetensors (its config in the metadata, its
weights under their checkpoint keys), checked to reproduce that golden's
expected output, then run once per case with one tensor damaged:

  gpt2_block   a GPT2Block, causal (n_embd 32, 4 heads), x [2, 9, 32]
  bert_layer   a BertLayer with padding from lengths [7, 4, 1], x [3, 7, 32]
  llama_lm     the whole LlamaForCausalLM (RMSNorm, GQA, RoPE, SwiGLU), ids

and the functions of one tensor (models/functions.attn: relu, tanh,
sigmoid, silu, gelu, its tanh form, softcap, softmax) on NaN, +-Inf and
finite values, as torch computes them (`functions.x`,
`functions.expected.<function>`). torch's gelu gives NaN for +Inf when
oneDNN runs it (a tensor of 16 or more elements here) and +Inf otherwise
(its own kernel, float64, one element): the golden takes torch's own
kernel (oneDNN off), which gives the limit, 0.5 x (1 + erf(+Inf)) = +Inf.

Each case damages one element (a weight of each kind: norm, Q, K, V, the
attention's output, the MLP; or an input) or one input position, and the file
holds `<config>.<case>.expected.<output>`; its metadata `cases` (JSON) says
for each case the tensor, the index (a list; a shorter one is a whole slice)
and the value. Attention runs as the goldens' (eager: softmax of the masked
scores, then their product with V), and the script prints whether torch's
SDPA (attn_implementation="sdpa") gives the same NaN pattern.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))

import make_goldens as mg  # noqa: E402  (check_versions, the masks)

NAN, INF = float("nan"), float("inf")

# (case, tensor, index, value): a tensor is a checkpoint key or `input.<name>`.
CASES = {
    "gpt2_block": [
        ("norm", "h.0.ln_1.weight", [5], NAN),
        ("q", "h.0.attn.c_attn.weight", [3, 2], NAN),         # layout(in, out)
        ("k", "h.0.attn.c_attn.weight", [3, 32 + 9], NAN),
        ("v", "h.0.attn.c_attn.weight", [3, 64 + 17], NAN),
        ("out", "h.0.attn.c_proj.weight", [3, 3], NAN),
        ("mlp", "h.0.mlp.c_fc.weight", [7, 40], NAN),
        ("mlp_inf", "h.0.mlp.c_proj.weight", [7, 4], INF),
        ("input_first", "input.x", [1, 0], NAN),              # a whole position
        ("input_middle", "input.x", [0, 4], NAN),
        ("input_last", "input.x", [1, 8], NAN),
        ("input_inf", "input.x", [0, 6, 3], INF),
    ],
    "bert_layer": [
        ("norm", "encoder.layer.0.attention.output.LayerNorm.weight", [4], NAN),
        ("q", "encoder.layer.0.attention.self.query.weight", [6, 1], NAN),
        ("k", "encoder.layer.0.attention.self.key.weight", [9, 2], NAN),
        ("v", "encoder.layer.0.attention.self.value.weight", [11, 3], NAN),
        ("out", "encoder.layer.0.attention.output.dense.weight", [2, 5], NAN),
        ("mlp", "encoder.layer.0.intermediate.dense.weight", [8, 8], NAN),
        ("input_seen", "input.x", [1, 2], NAN),               # a key others see
        ("input_padded", "input.x", [1, 5], NAN),             # past lengths[1] = 4
    ],
    "llama_lm": [
        ("norm", "model.layers.0.input_layernorm.weight", [3], NAN),
        ("q", "model.layers.0.self_attn.q_proj.weight", [5, 7], NAN),
        ("k", "model.layers.1.self_attn.k_proj.weight", [4, 1], NAN),
        ("v", "model.layers.0.self_attn.v_proj.weight", [9, 9], NAN),
        ("out", "model.layers.1.self_attn.o_proj.weight", [0, 6], NAN),
        ("mlp", "model.layers.0.mlp.gate_proj.weight", [12, 3], NAN),
        ("final_norm", "model.norm.weight", [2], INF),
    ],
}


FUNCTIONS = {
    "relu": lambda F, x: F.relu(x),
    "tanh": lambda F, x: x.tanh(),
    "sigmoid": lambda F, x: x.sigmoid(),
    "silu": lambda F, x: F.silu(x),
    "gelu": lambda F, x: F.gelu(x),
    "gelu_tanh": lambda F, x: F.gelu(x, approximate="tanh"),
    "softcap": lambda F, x: 30.0 * (x / 30.0).tanh(),
    "softmax": lambda F, x: x.softmax(-1),
}


def functions_golden():
    """x [1, 4, 8] of NaN, +-Inf and finite values, each function of it."""
    import torch
    import torch.nn.functional as F
    x = torch.tensor([[[NAN, INF, -INF, 1.0, -1.0, 100.0, -100.0, 0.0],
                       [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, INF],
                       [0.5, -INF, 2.0, -3.0, 4.0, -INF, 1.0, 0.0],
                       [-INF, -INF, -INF, -INF, -INF, -INF, -INF, -INF]]])
    with torch.backends.mkldnn.flags(enabled=False), torch.no_grad():
        out = {f"functions.expected.{k}": f(F, x).numpy() for k, f in FUNCTIONS.items()}
    out["functions.x"] = x.numpy()
    return out


def build(name, cfg_json, weights, impl):
    """The configuration's module with the golden's weights, and a function
    running it on the golden's inputs."""
    import torch
    from transformers import (BertConfig, BertModel, GPT2Config, GPT2LMHeadModel,
                              LlamaConfig, LlamaForCausalLM)
    d = json.loads(cfg_json)
    d["attn_implementation"] = impl
    if name == "gpt2_block":
        module = GPT2LMHeadModel(GPT2Config(**d)).eval().transformer.h[0]
        prefix = "h.0."
        run = lambda m, t: mg.output_of(m(t["input.x"], attention_mask=mg.causal_mask(9)))
    elif name == "bert_layer":
        module = BertModel(BertConfig(**d), add_pooling_layer=False).eval().encoder.layer[0]
        prefix = "encoder.layer.0."
        run = lambda m, t: mg.output_of(m(t["input.x"], attention_mask=mg.padding_mask(
            t["input.lengths"], t["input.x"].shape[1])))
    else:
        module = LlamaForCausalLM(LlamaConfig(**d)).eval()
        prefix = ""
        run = lambda m, t: m(input_ids=t["input.ids"].long(), use_cache=False).logits
    state = {k[len(prefix):]: torch.from_numpy(v) for k, v in weights.items()}
    missing, unexpected = module.load_state_dict(state, strict=False)
    assert not unexpected, unexpected
    # The rotary inv_freq buffer is computed, not saved.
    assert all("inv_freq" in k for k in missing), missing
    return module, run


def main():
    mg.check_versions()
    import numpy as np
    import torch
    import safetensors_io as st

    torch.set_num_threads(1)
    out, cases_meta = {}, {}
    for name, cases in CASES.items():
        tensors, meta = st.load(os.path.join(mg.GOLDENS, name + ".safetensors"),
                                with_metadata=True)
        weights = {k: v for k, v in tensors.items()
                   if not k.startswith(("input.", "expected."))}
        inputs = {k: torch.from_numpy(v) for k, v in tensors.items() if k.startswith("input.")}
        (out_name, expected), = [(k[len("expected."):], v) for k, v in tensors.items()
                                 if k.startswith("expected.")]
        module, run = build(name, meta["config"], weights, "eager")
        sdpa, _ = build(name, meta["config"], weights, "sdpa")
        with torch.no_grad():
            clean = run(module, inputs).numpy()
        err = np.abs(clean - expected).max()
        assert err < 1e-5, f"{name}: the rebuilt module differs from the golden by {err}"
        cases_meta[name] = []
        for case, tensor, index, value in cases:
            damaged = {k: v.clone() for k, v in inputs.items()}
            w_module, s_module = module, sdpa
            if tensor.startswith("input."):
                damaged[tensor][tuple(index)] = value
            else:
                bad = dict(weights)
                bad[tensor] = weights[tensor].copy()
                bad[tensor][tuple(index)] = value
                w_module, _ = build(name, meta["config"], bad, "eager")
                s_module, _ = build(name, meta["config"], bad, "sdpa")
            with torch.no_grad():
                y = run(w_module, damaged).numpy()
                y_sdpa = run(s_module, damaged).numpy()
            same = np.array_equal(np.isnan(y), np.isnan(y_sdpa))
            print(f"{name}.{case}: {tensor}{index} = {value}: {int(np.isnan(y).sum())} NaN, "
                  f"{int(np.isinf(y).sum())} Inf of {y.size}; SDPA's NaN pattern "
                  f"{'the same' if same else 'DIFFERS'}")
            out[f"{name}.{case}.expected.{out_name}"] = np.ascontiguousarray(y, np.float32)
            cases_meta[name].append({"case": case, "tensor": tensor, "index": index,
                                     "value": repr(value), "output": out_name})
    out.update(functions_golden())
    cases_meta["functions"] = [{"case": "functions", "output": list(FUNCTIONS)}]
    import safetensors
    import transformers
    meta = {
        "generator": "test/conformance/make_nonfinite_goldens.py",
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "safetensors_version": safetensors.__version__,
        "numpy_version": np.__version__,
        "cases": json.dumps(cases_meta),
    }
    path = os.path.join(mg.GOLDENS, "nonfinite.safetensors")
    st.save(path, out, metadata=meta)
    print(f"{os.path.relpath(path)}: {len(out)} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
