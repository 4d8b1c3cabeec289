"""The two benchmarked blocks: their shapes, flop counts, and the equivalent
PyTorch modules built from the very weights attnc compiles in.

numpy-only at import time; torch is imported inside the functions that need it
so the driver (run.py) never loads it.
"""

from dataclasses import dataclass

D = 768
HEADS = 12
FFN = 3072


@dataclass(frozen=True)
class Block:
    name: str          # also the key used in file names and on the command line
    model_file: str    # under models/
    s_max: int         # the sequence bound the bench compiles with
    causal: bool
    shapes: tuple      # ((B, S), ...) of the full run


BLOCKS = {
    "bert": Block("bert", "models/bert_layer.attn", 2048, False,
                  ((1, 128), (8, 128), (1, 512), (1, 2048))),
    "gpt2": Block("gpt2", "models/gpt2_block.attn", 4096, True,
                  ((1, 128), (8, 128), (1, 1024), (1, 4096))),
}

# Sum of K*N over the block's GEMMs, identical for both blocks: Q|K|V
# (768 -> 2304, packed or three 768 -> 768), attention out (768 -> 768),
# FFN up (768 -> 3072) and down (3072 -> 768).
GEMM_KN = D * 3 * D + D * D + D * FFN + FFN * D


def flops(block, b, s):
    """Useful flops of one forward pass, the one count used for every system:
    2*B*S*sum(K*N) for the GEMMs, plus 4*B*S*S_eff*D for QK^T and PV
    (2 flops per multiply-add, summed over heads), where S_eff is the number of
    keys each query really attends to: S, or on average (S+1)/2 under a causal
    mask (work a causal kernel skips is not counted). Norms, softmax, GELU and
    biases are O(B*S*D) and left out."""
    s_eff = (s + 1) / 2 if block.causal else s
    return 2.0 * b * s * GEMM_KN + 4.0 * b * s * s_eff * D


# ----------------------------------------------------------------- PyTorch


def torch_module(block, weights):
    """The block as a PyTorch module in eval mode, holding `weights` (the
    safetensors tensors attnc compiled in, name -> float32 numpy array)."""
    import torch

    w = {k: torch.from_numpy(v.copy()) for k, v in weights.items()}
    mod = _bert(w) if block.name == "bert" else _gpt2(w)
    return mod.eval()


def _bert(w):
    """torch.nn.TransformerEncoderLayer, the layer a user would pick. BERT's
    (nn.Linear) weights are [out, in], as the module stores them."""
    import torch

    layer = torch.nn.TransformerEncoderLayer(
        D, HEADS, FFN, dropout=0.0, activation="gelu", batch_first=True,
        norm_first=False, layer_norm_eps=1e-12)
    a = "attention.self."
    sd = {
        "self_attn.in_proj_weight": torch.cat([w[a + "query.weight"], w[a + "key.weight"],
                                               w[a + "value.weight"]]),
        "self_attn.in_proj_bias": torch.cat([w[a + "query.bias"], w[a + "key.bias"],
                                             w[a + "value.bias"]]),
        "self_attn.out_proj.weight": w["attention.output.dense.weight"],
        "self_attn.out_proj.bias": w["attention.output.dense.bias"],
        "norm1.weight": w["attention.output.LayerNorm.weight"],
        "norm1.bias": w["attention.output.LayerNorm.bias"],
        "linear1.weight": w["intermediate.dense.weight"],
        "linear1.bias": w["intermediate.dense.bias"],
        "linear2.weight": w["output.dense.weight"],
        "linear2.bias": w["output.dense.bias"],
        "norm2.weight": w["output.LayerNorm.weight"],
        "norm2.bias": w["output.LayerNorm.bias"],
    }
    layer.load_state_dict(sd, strict=True)
    return layer


def _gpt2(w):
    import torch
    import torch.nn.functional as F

    def linear(prefix, n_in, n_out):
        # GPT-2's Conv1D stores [in, out]; nn.Linear wants [out, in].
        lin = torch.nn.Linear(n_in, n_out)
        with torch.no_grad():
            lin.weight.copy_(w[prefix + ".weight"].t().contiguous())
            lin.bias.copy_(w[prefix + ".bias"])
        return lin

    def norm(prefix):
        ln = torch.nn.LayerNorm(D, eps=1e-5)
        with torch.no_grad():
            ln.weight.copy_(w[prefix + ".weight"])
            ln.bias.copy_(w[prefix + ".bias"])
        return ln

    class GPT2Block(torch.nn.Module):
        """Pre-norm, packed c_attn, causal SDPA, exact (erf) GELU MLP."""

        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = norm("ln_1"), norm("ln_2")
            self.c_attn = linear("attn.c_attn", D, 3 * D)
            self.attn_proj = linear("attn.c_proj", D, D)
            self.c_fc = linear("mlp.c_fc", D, FFN)
            self.mlp_proj = linear("mlp.c_proj", FFN, D)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
            q, k, v = (t.view(b, s, HEADS, D // HEADS).transpose(1, 2) for t in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x1 = x + self.attn_proj(a.transpose(1, 2).reshape(b, s, D))
            return x1 + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x1))))

    return GPT2Block()
