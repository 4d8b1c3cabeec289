#!/usr/bin/env python3
"""Generate the conformance goldens from Hugging Face transformers modules
(and one PyTorch module: the nn.Transformer tutorial's encoder-decoder).

Pinned versions (checked at run time; the goldens record what made them):

    torch==2.15.0
    transformers==5.23.0
    (plus safetensors and numpy, any recent version)

Regenerate with (PyPI's torch is a CUDA build, ~4 GB; it runs on the CPU):

    python3 -m venv /tmp/golden-venv
    /tmp/golden-venv/bin/pip install torch==2.15.0 transformers==5.23.0 safetensors numpy
    /tmp/golden-venv/bin/python test/conformance/make_goldens.py [NAME...]

Nothing is downloaded: every model is built from a small config with random
weights (torch.manual_seed fixed), never from_pretrained. For each
configuration one file goldens/<name>.safetensors holds

  * the module's parameters under the keys a checkpoint has, taken from the
    file the model's save_pretrained writes (the same names the .attn model
    in models/<name>.attn declares):
      gpt2_block  `h.0.*`                   GPT2Model's file, as the Hub's
                                            GPT-2 checkpoints (GPT2LMHeadModel's
                                            adds `transformer.`)
      bert_layer  `encoder.layer.0.*`       BertModel's file
      vit_layer   `vit.encoder.layer.0.*`   ViTForImageClassification's file
                                            (transformers 5 renamed the modules
                                            to `vit.layers.0.attention.q_proj`
                                            etc. but still writes, and reads,
                                            the old keys)
      gpt2_lm     all 28 of the file:       GPT2LMHeadModel's own file:
                  `transformer.wte`, `.wpe`, `transformer.` keys and no
                  `.h.{0,1}.*`, `.ln_f`     `lm_head.weight` (tied to
                                            transformer.wte.weight, saved once)
      bert_model  all 37 of the file:       BertModel's file (no pooler:
                  `embeddings.*`,           add_pooling_layer=False; the
                  `encoder.layer.{0,1}.*`   position_ids buffer is not saved)
      transformer_seq2seq  all 68           the module's state_dict keys
                  parameters:               (a PyTorch module has no
                  `transformer.encoder.*`,  save_pretrained; the 5000 x 32
                  `transformer.decoder.*`,  positional table is a buffer,
                  `src_tok_emb.embedding`,  left out: our model computes it)
                  `tgt_tok_emb.embedding`,
                  `generator`
      bart_decoder_layer                    BartForConditionalGeneration's
                  `model.decoder.layers.0.*` file (BartModel's has no
                                            `model.`)
  * the inputs `input.<name>`: `input.x` (f32) for the layers, and i32 ones:
    `input.lengths` (bert_layer, bert_model), `input.ids` for the whole
    models (their positions are Hugging Face's default position_ids,
    0 .. S-1, `positions(S)` in our models), `input.token_type_ids`
    (bert_model); `input.src`, `input.tgt`, `input.src_lengths`
    (transformer_seq2seq); `input.x`, `input.enc` (f32) and
    `input.enc_lengths` (bart_decoder_layer);
  * the outputs `expected.<name>` (f32): `expected.y` (the layers' output,
    BertModel's last_hidden_state) or `expected.logits` (GPT2LMHeadModel);
  * metadata: the torch, transformers, safetensors and numpy versions, the
    module's class and config, the seed.

The whole models:
  gpt2_lm     GPT2LMHeadModel, n_embd 32, 4 heads, 2 layers, n_inner 64 (not
              4 * n_embd, to keep the golden under 100 KB), n_positions 64,
              vocab 50, gelu_new, eager, dropout 0; input_ids [2, 9], no
              attention_mask, use_cache=False; expected.logits [2, 9, 50].
  bert_model  BertModel(add_pooling_layer=False), hidden 32, 4 heads,
              intermediate 64, 2 layers, erf gelu, eager, dropout 0, vocab 50,
              type_vocab_size 2, max_position_embeddings 64 (not 512: the
              golden would be 4x larger); input_ids [3, 7], token_type_ids
              random 0/1, attention_mask 1s then 0s from lengths [7, 4, 1];
              expected.y = last_hidden_state [3, 7, 32], padded rows included.
  transformer_seq2seq
              the Seq2SeqTransformer of PyTorch's tutorial "Language
              Translation with nn.Transformer" (written out below,
              batch-first): token embeddings * sqrt(32) + the sinusoidal
              PositionalEncoding, nn.Transformer(d_model 32, nhead 4, 2 + 2
              layers, dim_feedforward 64, dropout 0, batch_first), generator
              to a target vocabulary of 48 (source 50); src [2, 7], tgt
              [2, 5], src_lengths [7, 4]; expected.logits [2, 5, 48]. Two
              layers each, as asked, make this golden 201 KB (the parameters
              alone are 191 KB); one of each would be ~105 KB but would not
              test that every decoder layer reads the same memory.
They are run whole, exactly as users call them, so their masks, position ids
and embeddings are the models' own (transformer_seq2seq: the tutorial's
create_mask, see make_transformer_seq2seq).

bart_decoder_layer: BartForConditionalGeneration (d_model 32, 4 heads, ffn
64, 1 + 1 layers, "gelu", eager, dropout 0)'s model.decoder.layers.0, called
with hidden_states x [2, 5, 32], encoder_hidden_states enc [2, 7, 32], the
additive causal [1, 1, T, T] mask and the additive [B, 1, 1, S] encoder mask
from enc_lengths [7, 3]: BartDecoder.forward builds them (create_causal_mask,
create_bidirectional_mask) and hands them to each layer, as checked below.

Weights. Hugging Face's own initialisation (linear weights N(0, 0.02), biases
0, LayerNorm weight 1 and bias 0) would make a weak test: attention would be
nearly uniform (a missing causal mask or a wrong scale would barely show) and
biases and norm parameters would be invisible. So after construction every
parameter is redrawn: matrices N(0, 0.2^2), biases N(0, 0.2^2), LayerNorm
weights 1 + N(0, 0.2^2). Embedding tables (token, position, token type; the
tied head is the token table) are N(0, 1), as the layers' inputs: each table
is then as large as the others and as the blocks' outputs, so forgetting one
changes the embeddings by O(1) (with N(0, 0.2^2) the blocks' outputs would
dominate GPT-2's residual stream). Inputs x are N(0, 1); ids uniform over
the vocabulary.

Masks. In transformers 5 the masks are built by the full model
(GPT2Model.forward, BertModel.forward) and handed to each layer; a layer
called alone with no mask attends everywhere (eager GPT-2 included). So the
expected outputs of the layer goldens are the layer called with the mask the
full model builds: GPT-2 a causal additive [1, 1, S, S] mask, BERT the
extended additive [B, 1, 1, S] mask from the lengths (transformers 5 has no
get_extended_attention_mask any more; we build it with
torch.finfo(float32).min on padded keys, as 4.x did) (keys only: padded query
rows still attend over the valid keys). As a check that these are the masks
the real models use, each full model is run once with a forward hook on
layer 0, and calling the layer with our mask on the hooked input must
reproduce the hooked output (BART: BartForConditionalGeneration run from
ids with the encoder's 0/1 attention_mask; the hook also takes the layer's
encoder_hidden_states, and our two masks must reproduce its output). The
whole-model goldens need no such check.
"""

import json
import os
import sys
import tempfile

PINNED_TORCH = "2.15.0"
PINNED_TRANSFORMERS = "5.23.0"
SEED = 0
HERE = os.path.dirname(os.path.abspath(__file__))
GOLDENS = os.path.join(HERE, "goldens")


def check_versions():
    missing = []
    try:
        import torch
    except ImportError:
        missing.append(f"torch=={PINNED_TORCH}")
    try:
        import transformers
    except ImportError:
        missing.append(f"transformers=={PINNED_TRANSFORMERS}")
    try:
        import safetensors  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        missing.append("safetensors numpy")
    if missing:
        sys.exit("error: missing packages; install them with\n"
                 f"  pip install {' '.join(missing)}")
    wrong = []
    if torch.__version__.split("+")[0] != PINNED_TORCH:
        wrong.append(f"torch {torch.__version__} (pinned: {PINNED_TORCH})")
    if transformers.__version__ != PINNED_TRANSFORMERS:
        wrong.append(f"transformers {transformers.__version__} "
                     f"(pinned: {PINNED_TRANSFORMERS})")
    if wrong:
        sys.exit("error: the goldens are generated with pinned versions, found "
                 + " and ".join(wrong) + ";\ninstall them with\n"
                 f"  pip install torch=={PINNED_TORCH} "
                 f"transformers=={PINNED_TRANSFORMERS}\n"
                 "(or update the pins here and in README.md, regenerate, and "
                 "review the goldens' change)")


def redraw_parameters(module):
    """Replace Hugging Face's init with one that exercises every parameter.

    Embedding tables (token, position, token-type; GPT-2's head is tied to
    its token table, one Parameter, redrawn once) are N(0, 1): the inputs of
    the layer goldens are N(0, 1), and unit-scale embeddings keep each table
    as large as the others and as the blocks' outputs (~1 with these weights),
    so a forgotten position or token-type embedding changes the first layer
    norm's input by O(1) rather than by a few per cent.
    """
    import torch
    tables = {id(m.weight) for m in module.modules()
              if isinstance(m, torch.nn.Embedding)}
    with torch.no_grad():
        for name, p in module.named_parameters():
            if id(p) in tables:
                p.copy_(torch.randn(p.shape))
            elif p.dim() == 2:
                p.copy_(torch.randn(p.shape) * 0.2)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape) * 0.2)
            else:                                   # a LayerNorm's weight
                p.copy_(1.0 + torch.randn(p.shape) * 0.2)


def redraw_vit_embeddings(vit):
    """ViT's parameters redraw_parameters does not reach as it should: the
    CLS token and the position embeddings (tables, N(0, 1); nn.Parameters,
    not nn.Embedding) and the patch convolution (4-D, a matrix,
    N(0, 0.2^2))."""
    import torch
    emb = vit.embeddings
    with torch.no_grad():
        emb.cls_token.copy_(torch.randn(emb.cls_token.shape))
        emb.position_embeddings.copy_(torch.randn(emb.position_embeddings.shape))
        w = emb.patch_embeddings.projection.weight
        w.copy_(torch.randn(w.shape) * 0.2)


def output_of(result):
    # Layers return a tensor in transformers 5 (a tuple in 4.x).
    return result[0] if isinstance(result, (tuple, list)) else result


def hooked_run(model, layer, **inputs):
    """Run `model`, returning layer's (input hidden states, output) in it."""
    import torch
    seen = {}

    def hook(mod, args, kwargs, out):
        seen["x"] = args[0] if args else kwargs["hidden_states"]
        seen["y"] = output_of(out)

    handle = layer.register_forward_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        handle.remove()
    return seen["x"].detach().clone(), seen["y"].detach().clone()


def check_same(what, got, want):
    import torch
    err = (got - want).abs().max().item()
    if not torch.isfinite(got).all() or err > 1e-6:
        sys.exit(f"error: {what}: the layer called directly with our mask differs from the layer "
                 f"inside the full model by {err:g}; the mask semantics changed")
    print(f"  check: {what}: layer called directly == layer inside the full model "
          f"(max diff {err:.2g})")


def checkpoint_tensors(model, prefix, layer):
    """The layer's tensors as `model.save_pretrained` writes them.

    The keys are the checkpoint's, which need not be the module's own names:
    transformers 5 renamed ViT's modules (`vit.layers.0.attention.q_proj`)
    but still reads and writes checkpoints under the old keys
    (`vit.encoder.layer.0.attention.attention.query`), the ones in users' files.
    `layer` may be the whole model (prefix ""): tied tensors (GPT-2's
    lm_head.weight is transformer.wte.weight) count once, as the file holds
    them once.
    """
    import numpy as np
    from safetensors.numpy import load_file
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d)
        saved = {}
        for f in sorted(os.listdir(d)):
            if f.endswith(".safetensors"):
                saved.update(load_file(os.path.join(d, f)))
    state = {k: np.ascontiguousarray(v, dtype=np.float32)
             for k, v in sorted(saved.items()) if k.startswith(prefix)}
    own, seen = [], set()
    for k, t in layer.state_dict().items():
        if t.data_ptr() not in seen:                # a tied tensor once
            seen.add(t.data_ptr())
            own.append(t)
    if len(state) != len(own):
        sys.exit(f"error: the checkpoint has {len(state)} tensors under {prefix!r}, "
                 f"the module {len(own)}: {sorted(state)} vs {sorted(layer.state_dict())}")
    # Every saved tensor is one of the layer's (renaming only, no reshaping).
    for k, v in state.items():
        if not any(tuple(t.shape) == v.shape and np.array_equal(t.numpy(), v)
                   for t in own):
            sys.exit(f"error: checkpoint tensor {k} is none of the module's tensors")
    return state


def causal_mask(S):
    import torch
    m = torch.full((S, S), torch.finfo(torch.float32).min).triu(1)
    return m[None, None]                                # [1, 1, S, S]


def padding_mask(lengths, S):
    import torch
    keep = (torch.arange(S)[None, :] < lengths[:, None]).float()   # [B, S]
    return (1.0 - keep)[:, None, None, :] * torch.finfo(torch.float32).min


def make_gpt2():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_embd=32, n_head=4, n_layer=1, n_positions=64, vocab_size=50,
                     bos_token_id=0, eos_token_id=0,
                     activation_function="gelu_new", resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0, attn_implementation="eager")
    model = GPT2LMHeadModel(cfg).eval()
    block = model.transformer.h[0]
    redraw_parameters(block)
    x = torch.randn(2, 9, 32)
    with torch.no_grad():
        y = output_of(block(x, attention_mask=causal_mask(9)))
        # No KV cache: appending to one changes the summation order (~1e-6).
        hx, hy = hooked_run(model, block, inputs_embeds=torch.randn(2, 9, 32),
                            use_cache=False)
        check_same("gpt2 h.0 causal", output_of(block(hx, attention_mask=causal_mask(9))), hy)
    # GPT2Model's file, as the Hub's GPT-2 checkpoints (no `transformer.`).
    state = checkpoint_tensors(model.transformer, "h.0.", block)
    return cfg, type(block).__name__, state, {"input.x": x.numpy()}, {"y": y.numpy()}


def make_bert():
    import torch
    from transformers import BertConfig, BertModel
    cfg = BertConfig(hidden_size=32, num_attention_heads=4, intermediate_size=64,
                     num_hidden_layers=1, hidden_act="gelu", vocab_size=50,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                     attn_implementation="eager")
    model = BertModel(cfg, add_pooling_layer=False).eval()
    layer = model.encoder.layer[0]
    redraw_parameters(layer)
    x = torch.randn(3, 7, 32)
    lengths = torch.tensor([7, 4, 1], dtype=torch.int32)
    with torch.no_grad():
        y = output_of(layer(x, attention_mask=padding_mask(lengths, 7)))
        ids = torch.randint(0, cfg.vocab_size, (3, 7))
        am = (torch.arange(7)[None, :] < lengths[:, None]).long()
        hx, hy = hooked_run(model, layer, input_ids=ids, attention_mask=am)
        check_same("bert encoder.layer.0 padding",
                   output_of(layer(hx, attention_mask=padding_mask(lengths, 7))), hy)
    state = checkpoint_tensors(model, "encoder.layer.0.", layer)
    inputs = {"input.x": x.numpy(), "input.lengths": lengths.numpy()}
    return cfg, type(layer).__name__, state, inputs, {"y": y.numpy()}


def make_vit():
    import torch
    from transformers import ViTConfig, ViTForImageClassification
    # image_size 4 in 2x2 patches: 4 patches + [CLS] = the 5 tokens of x.
    cfg = ViTConfig(hidden_size=32, num_attention_heads=4, intermediate_size=64,
                    num_hidden_layers=1, hidden_act="gelu", layer_norm_eps=1e-12,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                    image_size=4, patch_size=2, num_labels=2,
                    attn_implementation="eager")
    model = ViTForImageClassification(cfg).eval()
    # transformers 5 names the layers `vit.layers` (4.x: `vit.encoder.layer`).
    layer = model.vit.layers[0]
    redraw_parameters(layer)
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        y = output_of(layer(x))
        hx, hy = hooked_run(model, layer, pixel_values=torch.randn(2, 3, 4, 4))
        check_same("vit encoder.layer.0", output_of(layer(hx)), hy)
    state = checkpoint_tensors(model, "vit.encoder.layer.0.", layer)
    return cfg, type(layer).__name__, state, {"input.x": x.numpy()}, {"y": y.numpy()}



def causal_lm_golden(cfg, model):
    """What a make_* of a causal LM returns: its logits for B = 2 x S = 9
    random ids, with no attention_mask (the causal mask is the model's own),
    no KV cache (appending to one changes the summation order) and the
    default position ids 0..S-1 (`positions(S)` in our models)."""
    import torch
    B, S = 2, 9
    ids = torch.randint(0, cfg.vocab_size, (B, S))
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits
    state = checkpoint_tensors(model, "", model)
    inputs = {"input.ids": ids.to(torch.int32).numpy()}
    return cfg, type(model).__name__, state, inputs, {"logits": logits.numpy()}

def make_gpt2_lm():
    """The whole GPT2LMHeadModel: ids -> logits, tied head, no mask input."""
    import numpy as np
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    # n_inner 64 (GPT-2 has 4 * n_embd = 128) keeps the golden under 100 KB.
    cfg = GPT2Config(n_embd=32, n_head=4, n_layer=2, n_inner=64, n_positions=64,
                     vocab_size=50, bos_token_id=0, eos_token_id=0,
                     activation_function="gelu_new", resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0, attn_implementation="eager")
    model = GPT2LMHeadModel(cfg).eval()
    assert model.lm_head.weight is model.transformer.wte.weight, "head not tied"
    redraw_parameters(model)
    golden = causal_lm_golden(cfg, model)
    # GPT2LMHeadModel's own file: `transformer.` keys and no lm_head.weight
    # (tied to transformer.wte.weight, saved once).
    state = golden[2]
    assert "lm_head.weight" not in state and "transformer.wte.weight" in state
    return golden


def make_bert_model():
    """The whole BertModel (no pooler): ids, token types, padding -> last_hidden_state."""
    import numpy as np
    import torch
    from transformers import BertConfig, BertModel
    # max_position_embeddings 64 (BERT's 512 would make the golden 4x larger).
    cfg = BertConfig(hidden_size=32, num_attention_heads=4, intermediate_size=64,
                     num_hidden_layers=2, hidden_act="gelu", vocab_size=50,
                     type_vocab_size=2, max_position_embeddings=64,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                     attn_implementation="eager")
    model = BertModel(cfg, add_pooling_layer=False).eval()
    redraw_parameters(model)
    B, S = 3, 7
    lengths = torch.tensor([7, 4, 1], dtype=torch.int32)
    ids = torch.randint(0, cfg.vocab_size, (B, S))
    types = torch.randint(0, cfg.type_vocab_size, (B, S))
    assert 0 < int(types.sum()) < B * S, "token types must mix 0 and 1"
    am = (torch.arange(S)[None, :] < lengths[:, None]).long()
    with torch.no_grad():
        y = model(input_ids=ids, token_type_ids=types, attention_mask=am).last_hidden_state
    state = checkpoint_tensors(model, "", model)
    inputs = {"input.ids": ids.to(torch.int32).numpy(),
              "input.token_type_ids": types.to(torch.int32).numpy(),
              "input.lengths": lengths.numpy()}
    return cfg, type(model).__name__, state, inputs, {"y": y.numpy()}


def make_t5_encoder():
    """The whole T5EncoderModel: ids, padding -> last_hidden_state, with the
    bucketed relative position bias of its first layer shared by both."""
    import torch
    from transformers import T5Config, T5EncoderModel
    # 16 buckets, 8 per direction: distances 0 .. 3 exact, 4 .. 9 in the
    # logarithmic buckets 4 .. 7, 10 (max_distance) and past in the last;
    # S = 13 reaches all three, and another max_distance moves some
    # buckets (12 puts distance 8 in bucket 6, not 7). Gated tanh GELU as
    # flan-t5's feed-forward.
    cfg = T5Config(d_model=32, d_kv=8, num_heads=4, d_ff=64, num_layers=2,
                   vocab_size=50, relative_attention_num_buckets=16,
                   relative_attention_max_distance=10, dropout_rate=0.0,
                   feed_forward_proj="gated-gelu", layer_norm_epsilon=1e-6,
                   attn_implementation="eager")
    model = T5EncoderModel(cfg).eval()
    redraw_parameters(model)
    B, S = 3, 13
    lengths = torch.tensor([13, 6, 1], dtype=torch.int32)
    ids = torch.randint(0, cfg.vocab_size, (B, S))
    am = (torch.arange(S)[None, :] < lengths[:, None]).long()
    with torch.no_grad():
        y = model(input_ids=ids, attention_mask=am).last_hidden_state
    state = checkpoint_tensors(model, "", model)
    inputs = {"input.ids": ids.to(torch.int32).numpy(),
              "input.lengths": lengths.numpy()}
    return cfg, type(model).__name__, state, inputs, {"y": y.numpy()}


# --- encoder-decoder configurations -----------------------------------------

def seq2seq_classes():
    """The modules of PyTorch's tutorial "Language Translation with
    nn.Transformer and torchtext" (Seq2SeqTransformer, TokenEmbedding,
    PositionalEncoding), written out here, batch-first.

    The tutorial is sequence-first (nn.Transformer's default) and indexes its
    [maxlen, 1, D] table by size(0); with batch_first=True the table is
    [1, maxlen, D] and indexed by size(1); nothing else changes. Its
    pos_embedding is a buffer (registered, so it is in the state_dict), not a
    parameter: our model computes it with sinusoidal(positions(S), 32).
    """
    import math
    import torch
    from torch import nn

    class PositionalEncoding(nn.Module):
        def __init__(self, emb_size, dropout, maxlen=5000):
            super().__init__()
            den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
            pos = torch.arange(0, maxlen).reshape(maxlen, 1)
            pos_embedding = torch.zeros((maxlen, emb_size))
            pos_embedding[:, 0::2] = torch.sin(pos * den)
            pos_embedding[:, 1::2] = torch.cos(pos * den)
            pos_embedding = pos_embedding.unsqueeze(0)        # [1, maxlen, D]
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("pos_embedding", pos_embedding)

        def forward(self, token_embedding):
            return self.dropout(token_embedding
                                + self.pos_embedding[:, :token_embedding.size(1), :])

    class TokenEmbedding(nn.Module):
        def __init__(self, vocab_size, emb_size):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_size)
            self.emb_size = emb_size

        def forward(self, tokens):
            return self.embedding(tokens.long()) * math.sqrt(self.emb_size)

    class Seq2SeqTransformer(nn.Module):
        def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead,
                     src_vocab_size, tgt_vocab_size, dim_feedforward=512, dropout=0.1):
            super().__init__()
            self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead,
                                              num_encoder_layers=num_encoder_layers,
                                              num_decoder_layers=num_decoder_layers,
                                              dim_feedforward=dim_feedforward,
                                              dropout=dropout, batch_first=True)
            self.generator = nn.Linear(emb_size, tgt_vocab_size)
            self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
            self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
            self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

        def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask,
                    tgt_padding_mask, memory_key_padding_mask):
            src_emb = self.positional_encoding(self.src_tok_emb(src))
            tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
            outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                    src_padding_mask, tgt_padding_mask,
                                    memory_key_padding_mask)
            return self.generator(outs)

    return Seq2SeqTransformer


class PlainConfig(dict):
    """A config for a module that is not a transformers one (to_diff_dict)."""

    def to_diff_dict(self):
        return dict(self)


def make_transformer_seq2seq():
    """The tutorial's Seq2SeqTransformer: src, tgt ids -> logits.

    nn.Transformer(d_model 32, nhead 4, 2 + 2 layers, dim_feedforward 64,
    dropout 0, batch_first; post-norm, ReLU, with its final encoder.norm and
    decoder.norm), vocabularies of 50 (source) and 48 (target; different sizes,
    so the tables and the generator cannot be confused by shape).

    Parameters are redrawn as for the others (redraw_parameters), for the
    same reason: nn.Transformer's own init (xavier-uniform matrices, zero
    in_proj and out_proj biases, LayerNorm weight 1 and bias 0) would make
    every bias and norm parameter invisible, so a dropped one could not
    fail the test; N(0, 0.2^2) matrices also make attention sharp enough
    that a missing mask shows (0.2 to 1.8 on the logits). Both
    token tables are N(0, 1) (then scaled by sqrt(32) as the tutorial does,
    so the positional encoding is ~1/6 of the embeddings and still changes
    the logits by 0.75 when forgotten); in_proj_weight is a matrix
    (N(0, 0.2^2)), in_proj_bias a bias.

    Masks as the tutorial's create_mask builds them, but padding from
    lengths: src_mask the [S, S] all-False bool mask (attend everywhere),
    tgt_mask nn.Transformer.generate_square_subsequent_mask(T) (float, -inf
    above the diagonal: `causal`), src_padding_mask = memory_key_padding_mask
    = arange(S) >= src_lengths (bool; PyTorch's key_padding_mask True means
    padded, i.e. the key is hidden: `padding(src_lengths)` on the encoder's
    self-attention and on the decoder's cross-attention), no target padding
    (tgt_padding_mask None). Padded source ids are random tokens, not PAD:
    only the masks keep them out.

    The fast path: in eval mode, batch-first, nn.TransformerEncoderLayer and
    nn.MultiheadAttention may run torch's fused native kernels
    (torch._transformer_encoder_layer_fwd, _native_multi_head_attention);
    with src_mask None (not the tutorial's all-False mask) the encoder would
    also turn the source into a nested tensor, and the memory's padded rows
    would come back as zeros before encoder.norm. The golden is made with
    torch.backends.mha.set_fastpath_enabled(False): the standard
    F.multi_head_attention_forward path (softmax(QK^T/sqrt(d) + mask) V,
    the bool masks turned into additive -inf by _canonical_mask). The fast
    path's logits differ from it by rounding only, 1.7e-6 (with src_mask
    None too: the padded memory rows are masked out in the decoder);
    make_goldens prints that difference as a check.
    """
    import torch
    from torch import nn
    Seq2SeqTransformer = seq2seq_classes()
    cfg = PlainConfig(num_encoder_layers=2, num_decoder_layers=2, emb_size=32, nhead=4,
                      src_vocab_size=50, tgt_vocab_size=48, dim_feedforward=64,
                      dropout=0.0, batch_first=True, maxlen=5000)
    model = Seq2SeqTransformer(2, 2, 32, 4, 50, 48, dim_feedforward=64, dropout=0.0).eval()
    redraw_parameters(model)
    B, S, T = 2, 7, 5
    src_lengths = torch.tensor([7, 4], dtype=torch.int32)
    src = torch.randint(0, 50, (B, S))
    tgt = torch.randint(0, 48, (B, T))
    src_mask = torch.zeros((S, S), dtype=torch.bool)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(T)
    src_padding_mask = torch.arange(S)[None, :] >= src_lengths[:, None]   # True = padded
    args = (src, tgt, src_mask, tgt_mask, src_padding_mask, None, src_padding_mask)
    was = torch.backends.mha.get_fastpath_enabled()
    try:
        torch.backends.mha.set_fastpath_enabled(False)
        with torch.no_grad():
            logits = model(*args)
        torch.backends.mha.set_fastpath_enabled(True)
        with torch.no_grad():
            fast = model(*args)
    finally:
        torch.backends.mha.set_fastpath_enabled(was)
    print(f"  check: transformer_seq2seq: the fast path's logits differ from the "
          f"standard path's by {(fast - logits).abs().max().item():.2g} (rounding)")
    # The module's own state_dict keys, without the positional table (a
    # buffer of 5000 x 32, computed by sinusoidal() in our model).
    state = {k: v.detach().numpy().astype("float32")
             for k, v in model.state_dict().items()
             if k != "positional_encoding.pos_embedding"}
    assert len(state) == len(list(model.parameters())), sorted(state)
    inputs = {"input.src": src.to(torch.int32).numpy(),
              "input.tgt": tgt.to(torch.int32).numpy(),
              "input.src_lengths": src_lengths.numpy()}
    return cfg, "torch.nn.Transformer (Seq2SeqTransformer of the PyTorch tutorial)", \
        state, inputs, {"logits": logits.numpy()}


def make_bart_decoder_layer():
    """BartForConditionalGeneration's model.decoder.layers.0 (BartDecoderLayer)."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration
    cfg = BartConfig(d_model=32, encoder_layers=1, decoder_layers=1,
                     encoder_attention_heads=4, decoder_attention_heads=4,
                     encoder_ffn_dim=64, decoder_ffn_dim=64, activation_function="gelu",
                     vocab_size=50, max_position_embeddings=64, dropout=0.0,
                     attention_dropout=0.0, activation_dropout=0.0,
                     pad_token_id=1, bos_token_id=0, eos_token_id=2,
                     decoder_start_token_id=2, forced_eos_token_id=2,
                     attn_implementation="eager")
    model = BartForConditionalGeneration(cfg).eval()
    layer = model.model.decoder.layers[0]
    redraw_parameters(layer)
    B, S, T = 2, 7, 5
    x = torch.randn(B, T, 32)
    enc = torch.randn(B, S, 32)
    enc_lengths = torch.tensor([7, 3], dtype=torch.int32)
    with torch.no_grad():
        y = output_of(layer(x, attention_mask=causal_mask(T), encoder_hidden_states=enc,
                            encoder_attention_mask=padding_mask(enc_lengths, S),
                            use_cache=False))
        # The check: the layer inside the full model, run from ids with the
        # encoder's 0/1 attention_mask (BartDecoder builds the causal mask
        # and the [B, 1, T, S] encoder mask from it and hands them to
        # each layer).
        seen = {}

        def hook(mod, args, kwargs, out):
            seen["x"] = args[0]
            seen["enc"] = args[2] if len(args) > 2 else kwargs["encoder_hidden_states"]
            seen["y"] = output_of(out)

        handle = layer.register_forward_hook(hook, with_kwargs=True)
        try:
            am = (torch.arange(S)[None, :] < enc_lengths[:, None]).long()
            model(input_ids=torch.randint(3, 50, (B, S)), attention_mask=am,
                  decoder_input_ids=torch.randint(3, 50, (B, T)), use_cache=False)
        finally:
            handle.remove()
        got = output_of(layer(seen["x"], attention_mask=causal_mask(T),
                              encoder_hidden_states=seen["enc"],
                              encoder_attention_mask=padding_mask(enc_lengths, S),
                              use_cache=False))
        check_same("bart model.decoder.layers.0 causal + encoder padding", got, seen["y"])
    state = checkpoint_tensors(model, "model.decoder.layers.0.", layer)
    inputs = {"input.x": x.numpy(), "input.enc": enc.numpy(),
              "input.enc_lengths": enc_lengths.numpy()}
    return cfg, type(layer).__name__, state, inputs, {"y": y.numpy()}


def make_llama_mlp():
    """LlamaDecoderLayer's MLP half: x + mlp(post_attention_layernorm(x)),
    the layer's own modules called in its order (LlamaRMSNorm, then
    down_proj(silu(gate_proj(h)) * up_proj(h)))."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=32, intermediate_size=88, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=4, vocab_size=50,
                      rms_norm_eps=1e-6, hidden_act="silu", attn_implementation="eager")
    model = LlamaForCausalLM(cfg).eval()
    layer = model.model.layers[0]
    redraw_parameters(layer)
    x = torch.randn(2, 9, 32)
    with torch.no_grad():
        y = x + layer.mlp(layer.post_attention_layernorm(x))
    state = checkpoint_tensors(model, "model.layers.0.mlp.", layer.mlp)
    state.update(checkpoint_tensors(model, "model.layers.0.post_attention_layernorm.",
                                    layer.post_attention_layernorm))
    return cfg, "transformers.LlamaDecoderLayer: post_attention_layernorm, mlp", state, {"input.x": x.numpy()}, {"y": y.numpy()}


def make_gemma2_head():
    """Gemma2ForCausalLM's end: the final GemmaRMSNorm (x * (1 + weight)),
    the head tied to the token embeddings, and final_logit_softcapping 30.
    The input is what the model's final norm receives in a full forward (a
    hook), the expected logits the full model's."""
    import torch
    from transformers import Gemma2Config, Gemma2ForCausalLM
    cfg = Gemma2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                       vocab_size=50, rms_norm_eps=1e-6, final_logit_softcapping=30.0,
                       attn_implementation="eager")
    model = Gemma2ForCausalLM(cfg).eval()
    redraw_parameters(model)
    ids = torch.randint(0, cfg.vocab_size, (2, 9))
    seen = {}

    def hook(mod, args, kwargs, out):
        seen["x"] = (args[0] if args else kwargs["hidden_states"]).detach().clone()

    handle = model.model.norm.register_forward_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            logits = model(input_ids=ids, use_cache=False).logits
    finally:
        handle.remove()
    state = checkpoint_tensors(model, "model.norm.", model.model.norm)
    state.update(checkpoint_tensors(model, "model.embed_tokens.", model.model.embed_tokens))
    return cfg, "Gemma2ForCausalLM", state, {"input.x": seen["x"].numpy()}, \
        {"logits": logits.numpy()}
def make_decoder_lm(config_class, model_class, **extra):
    """A whole decoder LLM (Llama, Mistral): ids -> logits, untied head, no
    attention_mask (causal, or Mistral's sliding window), no KV cache."""
    import torch
    cfg = config_class(hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                       num_hidden_layers=2, intermediate_size=64, vocab_size=50,
                       max_position_embeddings=64, rms_norm_eps=1e-6,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                       tie_word_embeddings=False, attention_dropout=0.0,
                       bos_token_id=0, eos_token_id=0, pad_token_id=0,
                       attn_implementation="eager", **extra)
    model = model_class(cfg).eval()
    assert model.lm_head.weight is not model.model.embed_tokens.weight, "head tied"
    redraw_parameters(model)
    # The head is an nn.Linear, redrawn N(0, 0.2^2): unit-scale logits.
    return causal_lm_golden(cfg, model)


def make_llama_lm():
    """The whole LlamaForCausalLM: grouped-query attention (4 heads over 2),
    rotate_half RoPE (theta 10000), RMSNorm (eps 1e-6), SwiGLU, untied head."""
    from transformers import LlamaConfig, LlamaForCausalLM
    return make_decoder_lm(LlamaConfig, LlamaForCausalLM)


def make_mistral_lm():
    """The whole MistralForCausalLM with a sliding window of 4 < S = 9:
    transformers 5 lets query i see keys i - 4 < j <= i (window(4))."""
    from transformers import MistralConfig, MistralForCausalLM
    return make_decoder_lm(MistralConfig, MistralForCausalLM, sliding_window=4)


def make_gptj_lm():
    """The whole GPTJForCausalLM with rotary_dim = head_dim (rotary over whole
    heads): GPT-J's interleaved pairs (rotate_every_two), the parallel
    attention + MLP block, ln_f and an untied head with a bias."""
    import torch
    from transformers import GPTJConfig, GPTJForCausalLM
    cfg = GPTJConfig(n_embd=32, n_head=4, n_layer=2, n_inner=64, rotary_dim=8,
                     vocab_size=50, n_positions=64, activation_function="gelu_new",
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=0, eos_token_id=0, tie_word_embeddings=False,
                     attn_implementation="eager")
    model = GPTJForCausalLM(cfg).eval()
    redraw_parameters(model)
    return causal_lm_golden(cfg, model)


def make_mha_weights():
    """nn.MultiheadAttention's output and its head-averaged weights
    (need_weights=True, average_attn_weights=True, the defaults): embed_dim
    32, 4 heads, batch_first, with the bias of its packed in_proj and of
    out_proj; a causal bool attn_mask and a key_padding_mask from lengths
    (True = padded), so the averaged rows are not uniform. Our model takes
    `mean(w, dim = 1)` of `a, w = self_attention(...)`. The keys are the
    module's state_dict under `self_attn.` (nn.TransformerEncoderLayer's
    name for it)."""
    import torch
    from torch import nn
    E, H, B, S = 32, 4, 2, 7
    mha = nn.MultiheadAttention(E, H, batch_first=True).eval()
    redraw_parameters(mha)
    x = torch.randn(B, S, E)
    lengths = torch.tensor([7, 4], dtype=torch.int32)
    causal = torch.ones(S, S, dtype=torch.bool).triu(1)            # True = hidden
    padded = torch.arange(S)[None, :] >= lengths[:, None]
    with torch.no_grad():
        y, w = mha(x, x, x, key_padding_mask=padded, attn_mask=causal,
                   need_weights=True, average_attn_weights=True)
    state = {"self_attn." + k: v.detach().numpy().astype("float32")
             for k, v in mha.state_dict().items()}
    cfg = PlainConfig(embed_dim=E, num_heads=H, batch_first=True,
                      need_weights=True, average_attn_weights=True)
    inputs = {"input.x": x.numpy(), "input.lengths": lengths.numpy()}
    return cfg, "torch.nn.MultiheadAttention", state, inputs, \
        {"y": y.numpy(), "weights": w.numpy()}


def make_vit_model():
    """ViTForImageClassification's `vit.` (ViTModel without pooler): pixel
    values -> last_hidden_state. 8x8 images of 3 channels in 4x4 patches (4
    patches + [CLS] = 5 tokens), hidden 32, 4 heads, 2 layers, erf gelu,
    eps 1e-12, eager attention. Our model cuts the patches with reshape and
    transpose, applies the patch convolution as a linear of its reshaped
    weight, puts the CLS token first (concat repeats it over the batch),
    adds the position embeddings, runs the layers and the final norm. The
    CLS token and the position embeddings are redrawn N(0, 1) and the
    convolution N(0, 0.2^2), as embeddings and matrices are."""
    import torch
    from transformers import ViTConfig, ViTForImageClassification
    cfg = ViTConfig(hidden_size=32, num_attention_heads=4, intermediate_size=64,
                    num_hidden_layers=2, hidden_act="gelu", layer_norm_eps=1e-12,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                    image_size=8, patch_size=4, num_channels=3, num_labels=2,
                    attn_implementation="eager")
    model = ViTForImageClassification(cfg).eval()
    redraw_parameters(model.vit)
    redraw_vit_embeddings(model.vit)
    pixels = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        y = model.vit(pixel_values=pixels).last_hidden_state
    state = checkpoint_tensors(model, "vit.", model.vit)
    return cfg, "ViTModel (ViTForImageClassification's vit.)", state, \
        {"input.pixel_values": pixels.numpy()}, {"y": y.numpy()}


CONFIGS = {"gpt2_block": make_gpt2, "bert_layer": make_bert, "vit_layer": make_vit,
           "gpt2_lm": make_gpt2_lm, "bert_model": make_bert_model,
           "transformer_seq2seq": make_transformer_seq2seq,
           "bart_decoder_layer": make_bart_decoder_layer,
           "llama_mlp": make_llama_mlp, "gemma2_head": make_gemma2_head,
           "llama_lm": make_llama_lm, "mistral_lm": make_mistral_lm,
           "gptj_lm": make_gptj_lm, "t5_encoder": make_t5_encoder,
           "mha_weights": make_mha_weights, "vit_model": make_vit_model}


def main():
    check_versions()
    import numpy
    import safetensors
    import torch
    import transformers
    import numpy as np
    from safetensors.numpy import load_file
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
    import safetensors_io as st

    torch.set_num_threads(1)            # one summation order, reproducible
    os.makedirs(GOLDENS, exist_ok=True)
    total = 0
    # `make_goldens.py NAME...` writes those goldens only (regenerating the
    # others may differ in their last bits across machines).
    names = sys.argv[1:] or list(CONFIGS)
    for name in names:
        make = CONFIGS[name]
        torch.manual_seed(SEED)
        cfg, cls, state, inputs, outputs = make()
        tensors = dict(state)
        tensors.update(inputs)
        tensors.update({"expected." + k: v for k, v in outputs.items()})
        # Weights and outputs are float32; inputs float32 (activations) or
        # int32 (ids, positions, token types, lengths), as the model declares.
        for k, v in tensors.items():
            allowed = ("float32", "int32") if k.startswith("input.") else ("float32",)
            assert str(v.dtype) in allowed, (k, v.dtype)
        meta = {  # an ordered dict: the header is written in this order
            "generator": "test/conformance/make_goldens.py",
            "torch_version": torch.__version__,
            "transformers_version": transformers.__version__,
            "safetensors_version": safetensors.__version__,
            "numpy_version": numpy.__version__,
            "module": cls if "." in cls else f"transformers.{cls}",
            "config": json.dumps(cfg.to_diff_dict(), sort_keys=True),
            "seed": str(SEED),
        }
        path = os.path.join(GOLDENS, name + ".safetensors")
        # The repo's own writer (test/e2e/safetensors_io.py) keeps the order
        # of tensors and metadata, so a regeneration is byte-identical
        # (safetensors' save_file orders the metadata at random); the
        # reference reader must read back exactly what was written.
        st.save(path, tensors, metadata=meta)
        back = load_file(path)
        assert back.keys() == tensors.keys() and all(
            back[k].dtype == v.dtype and np.array_equal(back[k], v)
            for k, v in tensors.items()), path
        size = os.path.getsize(path)
        total += size
        shapes = ", ".join(f"{k[len('input.'):]} {v.dtype}{list(v.shape)}"
                           for k, v in inputs.items())
        outs = ", ".join(f"|{k}| max {abs(v).max():.3f}" for k, v in outputs.items())
        print(f"{name}: {cls}, {len(state)} weights, {shapes}, {outs} -> "
              f"{os.path.relpath(path)} ({size} bytes)")
    print(f"total {total} bytes")


if __name__ == "__main__":
    main()
