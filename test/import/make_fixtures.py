#!/usr/bin/env python3
"""Build the `attnc import` fixtures: tiny Hugging Face model directories
with random weights, and the outputs transformers computes from them.

Pinned versions (checked at run time, as test/conformance/make_goldens.py
does; the goldens record what made them):

    torch==2.15.0
    transformers==5.23.0
    (plus safetensors and numpy, any recent version)

Regenerate with

    /tmp/golden-venv/bin/python test/import/make_fixtures.py

(the venv of test/conformance/make_goldens.py's docstring). Nothing is
downloaded: every model is built from a small config (hidden 32, 4 heads, 2
layers, intermediate 64, vocabulary 100, 32 positions) with torch's seed
fixed, its parameters redrawn as make_goldens.py's redraw_parameters does
(so every bias, norm parameter and embedding matters), and saved with
save_pretrained into fixtures/<name>/ (config.json, model.safetensors and,
for decoders, generation_config.json), exactly as a user's directory
holds them. Beside them, fixtures/<name>/golden.safetensors holds

  * `input.<name>`: the inputs of the imported model, int32: `input.ids`
    ([2, 9] for decoders, [3, 7] for encoders); encoders also
    `input.lengths` ([7, 4, 1], the attention_mask's lengths), BERT and
    RoBERTa `input.token_type_ids`, RoBERTa `input.position_ids`;
  * `expected.logits` (decoders, [2, 9, 100]) or `expected.hidden`
    (encoders: last_hidden_state, [3, 7, 32], padded rows included) and
    for the MaskedLM encoders `expected.logits` ([3, 7, 100]), float32,
    computed in float32 (a bf16 checkpoint is reloaded and widened,
    model.float(), which is what attnc computes);
  * metadata: versions, class, seed.

The fixtures, and what each exercises of the importer:
  gpt2        GPT2LMHeadModel: `transformer.` keys, Conv1D [in, out], tied
              head, gelu_new (the tanh GELU), f32.
  llama       LlamaForCausalLM: grouped-query attention (4 heads over 2),
              rope_theta 500000, rms_norm_eps 1e-5, untied head, bf16.
  llama3      LlamaForCausalLM: head_dim 16 over hidden 32 (4 heads of 16),
              rope_type llama3 (factor 8, low 1, high 4, original 64; 128
              positions), bf16.
  llama_linear LlamaForCausalLM: rope_type linear (factor 4),
              attention_bias, tied head, f32.
  gemma2      Gemma2ForCausalLM: head_dim 16 over hidden 32, 3 layers
              (sliding window 4, full, sliding), query_pre_attn_scalar 24,
              attention and final soft caps 5 and 3, (1 + w) norms, the
              embeddings scaled by sqrt(32) rounded to bf16, tied, bf16.
  gpt_neox    GPTNeoXForCausalLM: query_key_value packed by head, rotary_pct
              0.5 (4 of 8 features), parallel residual, untied embed_out,
              f16.
  gpt_neox_seq GPTNeoXForCausalLM: use_parallel_residual false, whole heads
              rotary (rotary_pct 1), f32.
  mistral     MistralForCausalLM: sliding_window 4 < S = 9, f16.
  qwen2       Qwen2ForCausalLM: q/k/v biases, tied head, bf16.
  bert        BertForMaskedLM: `bert.` keys, token types, padding, f32;
              the MLM head (cls.predictions, tied decoder) with --head=logits.
  roberta     RobertaForMaskedLM: positions from padding_idx + 1,
              type_vocab_size 1, f32; lm_head (gelu whatever hidden_act).
  distilbert  DistilBertForMaskedLM: no token types, q_lin/k_lin/v_lin,
              f32; vocab_* head with an untied vocab_projector.
  t5          T5EncoderModel: T5LayerNorm, unscaled scores plus block 0's
              bucketed relative position bias (16 buckets, max_distance
              10), gated-gelu feed-forward, bf16.
  bart        BartForConditionalGeneration: encoder and decoder (with
              caches), learned positions from row 2, scale_embedding,
              final_logits_bias, tied head, f32; `input.decoder_ids` [3, 5]
              and greedy `generate.ids` (seq2seq below).
  t5_conditional T5ForConditionalGeneration: t5's encoder and a decoder
              with its own one-directional relative bias, the tied head
              scaled by d_model^-0.5, bf16; as bart.
"""

import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(HERE, "fixtures")
sys.path.insert(0, os.path.join(REPO, "test", "conformance"))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))

from make_goldens import check_versions, redraw_parameters, redraw_vit_embeddings  # noqa: E402

SEED = 0
SIZES = dict(hidden=32, heads=4, layers=2, inner=64, vocab=100, positions=32)


def decoder(model, dtype=None):
    """A causal LM's golden: logits of [2, 9] random ids, no
    attention_mask, no cache; a bf16 checkpoint's computed widened."""
    import torch
    redraw_parameters(model)
    if dtype is not None:
        model = model.to(dtype)
    ids = torch.randint(0, SIZES["vocab"], (2, 9))
    return model, {"ids": ids}, lambda m: {
        "logits": m(input_ids=ids, use_cache=False).logits}


def encoder_inputs(pad=None):
    """ids [3, 7] with lengths 7, 4, 1 (padded ids are `pad` when given, so
    RoBERTa's positions see the padding as transformers expects)."""
    import torch
    lengths = torch.tensor([7, 4, 1], dtype=torch.int32)
    ids = torch.randint(3, SIZES["vocab"], (3, 7))
    mask = (torch.arange(7)[None, :] < lengths[:, None]).long()
    if pad is not None:
        ids = torch.where(mask.bool(), ids, torch.tensor(pad))
    return ids, lengths, mask


def make_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    s = SIZES
    cfg = GPT2Config(n_embd=s["hidden"], n_head=s["heads"], n_layer=s["layers"],
                     n_inner=s["inner"], n_positions=s["positions"],
                     vocab_size=s["vocab"], bos_token_id=0, eos_token_id=0,
                     activation_function="gelu_new", attn_implementation="eager")
    return decoder(GPT2LMHeadModel(cfg).eval())


def llama_like(config_class, model_class, dtype=None, **extra):
    s = SIZES
    extra.setdefault("max_position_embeddings", s["positions"])
    cfg = config_class(hidden_size=s["hidden"], num_attention_heads=s["heads"],
                       num_key_value_heads=2, num_hidden_layers=s["layers"],
                       intermediate_size=s["inner"], vocab_size=s["vocab"],
                       bos_token_id=0, eos_token_id=0,
                       attn_implementation="eager", **extra)
    return decoder(model_class(cfg).eval(), dtype)


def make_llama():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    return llama_like(LlamaConfig, LlamaForCausalLM, torch.bfloat16,
                      rms_norm_eps=1e-5, tie_word_embeddings=False,
                      rope_parameters={"rope_type": "default",
                                       "rope_theta": 500000.0})


def make_llama3():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    # head_dim 16 over hidden 32 and 4 heads; with rope_theta 10000 the
    # wavelengths 6.3, 19.9, 62.8, 199, ... fall in each of llama3's three
    # bands for original_max_position_embeddings 64 (low 64, high 16).
    return llama_like(LlamaConfig, LlamaForCausalLM, torch.bfloat16,
                      head_dim=16, tie_word_embeddings=False,
                      max_position_embeddings=128,
                      rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0,
                                       "factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 64})


def make_llama_linear():
    from transformers import LlamaConfig, LlamaForCausalLM
    return llama_like(LlamaConfig, LlamaForCausalLM, attention_bias=True,
                      tie_word_embeddings=True,
                      rope_parameters={"rope_type": "linear", "rope_theta": 10000.0,
                                       "factor": 4.0})


def make_gemma2():
    import torch
    from transformers import Gemma2Config, Gemma2ForCausalLM
    s = SIZES
    # head_dim 16 over hidden 32; 3 layers: sliding, full, sliding (the
    # default layer_types) with a window of 4 < S = 9; a query_pre_attn_scalar
    # other than head_dim; soft caps low enough to bend the scores and logits.
    cfg = Gemma2Config(hidden_size=s["hidden"], num_attention_heads=s["heads"],
                       num_key_value_heads=2, head_dim=16, num_hidden_layers=3,
                       intermediate_size=s["inner"], vocab_size=s["vocab"],
                       max_position_embeddings=s["positions"], sliding_window=4,
                       query_pre_attn_scalar=24, attn_logit_softcapping=5.0,
                       final_logit_softcapping=3.0, bos_token_id=0, eos_token_id=0,
                       pad_token_id=0, attn_implementation="eager")
    return decoder(Gemma2ForCausalLM(cfg).eval(), torch.bfloat16)


def make_gpt_neox():
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    s = SIZES
    # A quarter of each 8-feature head rotary (2 pairs), the parallel
    # residual, per-head packed query_key_value, f16.
    cfg = GPTNeoXConfig(hidden_size=s["hidden"], num_attention_heads=s["heads"],
                        num_hidden_layers=s["layers"], intermediate_size=s["inner"],
                        vocab_size=s["vocab"], max_position_embeddings=s["positions"],
                        rotary_pct=0.5, use_parallel_residual=True,
                        bos_token_id=0, eos_token_id=0, attn_implementation="eager")
    return decoder(GPTNeoXForCausalLM(cfg).eval(), torch.float16)


def make_gpt_neox_seq():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    s = SIZES
    # The sequential residual and whole heads rotary, f32.
    cfg = GPTNeoXConfig(hidden_size=s["hidden"], num_attention_heads=s["heads"],
                        num_hidden_layers=s["layers"], intermediate_size=s["inner"],
                        vocab_size=s["vocab"], max_position_embeddings=s["positions"],
                        rotary_pct=1.0, use_parallel_residual=False,
                        bos_token_id=0, eos_token_id=0, attn_implementation="eager")
    return decoder(GPTNeoXForCausalLM(cfg).eval())


def make_mistral():
    from transformers import MistralConfig, MistralForCausalLM
    import torch
    return llama_like(MistralConfig, MistralForCausalLM, torch.float16, sliding_window=4,
                      tie_word_embeddings=False)


def make_qwen2():
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return llama_like(Qwen2Config, Qwen2ForCausalLM, torch.bfloat16,
                      tie_word_embeddings=True)


def bert_like(config_class, model_class, pad=None, types=True, **extra):
    import torch
    s = SIZES
    cfg = config_class(vocab_size=s["vocab"], attn_implementation="eager", **extra)
    model = model_class(cfg).eval()
    redraw_parameters(model)
    ids, lengths, mask = encoder_inputs(pad)
    inputs = {"ids": ids, "lengths": lengths}
    kwargs = {"input_ids": ids, "attention_mask": mask}
    if types:
        tv = cfg.type_vocab_size
        inputs["token_type_ids"] = kwargs["token_type_ids"] = \
            torch.randint(0, tv, ids.shape)
    return model, inputs, kwargs


def make_bert():
    from transformers import BertConfig, BertForMaskedLM
    s = SIZES
    model, inputs, kwargs = bert_like(
        BertConfig, BertForMaskedLM, hidden_size=s["hidden"],
        num_attention_heads=s["heads"], num_hidden_layers=s["layers"],
        intermediate_size=s["inner"], max_position_embeddings=s["positions"],
        hidden_act="gelu")
    return model, inputs, lambda m: {"hidden": m.bert(**kwargs).last_hidden_state,
                                     "logits": m(**kwargs).logits}


def make_roberta():
    import torch
    from transformers import RobertaConfig, RobertaForMaskedLM
    s = SIZES
    pad = 1
    model, inputs, kwargs = bert_like(
        RobertaConfig, RobertaForMaskedLM, pad=pad, hidden_size=s["hidden"],
        num_attention_heads=s["heads"], num_hidden_layers=s["layers"],
        intermediate_size=s["inner"], pad_token_id=pad, type_vocab_size=1,
        max_position_embeddings=s["positions"] + pad + 1, hidden_act="gelu")
    # transformers' create_position_ids_from_input_ids: padding_idx + 1 + j
    # for the tokens, padding_idx at the padding. The model computes them
    # itself; the check below is that passing ours changes nothing.
    ids = inputs["ids"]
    keep = ids.ne(pad).int()
    inputs["position_ids"] = torch.cumsum(keep, dim=1) * keep + pad
    with torch.no_grad():
        own = model.roberta(**kwargs).last_hidden_state
        ours = model.roberta(**kwargs, position_ids=inputs["position_ids"].long()
                             ).last_hidden_state
    assert torch.equal(own, ours), "RoBERTa's position ids differ from ours"
    return model, inputs, lambda m: {"hidden": m.roberta(**kwargs).last_hidden_state,
                                     "logits": m(**kwargs).logits}


def make_distilbert():
    from transformers import DistilBertConfig, DistilBertForMaskedLM
    s = SIZES
    model, inputs, kwargs = bert_like(
        DistilBertConfig, DistilBertForMaskedLM, types=False, dim=s["hidden"],
        n_heads=s["heads"], n_layers=s["layers"], hidden_dim=s["inner"],
        max_position_embeddings=s["positions"], activation="gelu",
        tie_word_embeddings=False)
    return model, inputs, lambda m: {"hidden": m.distilbert(**kwargs).last_hidden_state,
                                     "logits": m(**kwargs).logits}


def make_t5():
    import torch
    from transformers import T5Config, T5EncoderModel
    s = SIZES
    # 16 relative attention buckets, 8 per direction (distances 0 .. 3
    # exact, then logarithmic up to max_distance 10), gated tanh GELU as
    # flan-t5, bf16 as T5 v1.1's checkpoints.
    cfg = T5Config(d_model=s["hidden"], d_kv=s["hidden"] // s["heads"],
                   num_heads=s["heads"], num_layers=s["layers"], d_ff=s["inner"],
                   vocab_size=s["vocab"], relative_attention_num_buckets=16,
                   relative_attention_max_distance=10, feed_forward_proj="gated-gelu",
                   attn_implementation="eager")
    model = T5EncoderModel(cfg).eval()
    redraw_parameters(model)
    model = model.to(torch.bfloat16)
    ids, lengths, mask = encoder_inputs()
    return model, {"ids": ids, "lengths": lengths}, lambda m: {
        "hidden": m(input_ids=ids, attention_mask=mask).last_hidden_state}


def seq2seq(model, pad):
    """An encoder-decoder's golden: the logits of [3, 5] decoder ids (the
    decoder start, then random ids) over the encoder ids of
    encoder_inputs(pad), teacher-forced, no cache; and under `generate.*`
    transformers' greedy `generate` from those ids (max_new_tokens 8, the
    generation_config's forced and end tokens), a ragged batch:
    `generate.ids` [3, 8] is every sequence's new ids, padded with
    pad_token_id after its EOS as generate pads them."""
    import torch
    redraw_parameters(model)
    ids, lengths, mask = encoder_inputs(pad)
    start = model.config.decoder_start_token_id
    decoder_ids = torch.randint(3, SIZES["vocab"], (3, 5))
    decoder_ids[:, 0] = start
    inputs = {"ids": ids, "lengths": lengths, "decoder_ids": decoder_ids}

    def forward(m):
        out = m.generate(input_ids=ids, attention_mask=mask, max_new_tokens=8,
                         do_sample=False, num_beams=1)
        assert bool((out[:, 0] == start).all()), "generate did not begin at the start id"
        new = out[:, 1:]
        if new.shape[1] < 8:
            new = torch.nn.functional.pad(new, (0, 8 - new.shape[1]),
                                          value=m.config.pad_token_id)
        return {"logits": m(input_ids=ids, attention_mask=mask,
                            decoder_input_ids=decoder_ids, use_cache=False).logits,
                "generate.ids": new}
    return model, inputs, forward


def make_bart():
    """BartForConditionalGeneration: post-norm encoder and decoder, learned
    positions from row 2, layernorm_embedding, scale_embedding (sqrt(32)),
    final_logits_bias, the head tied to `model.shared`, forced_eos_token_id,
    f32. The bias buffer is redrawn too (it is zero in a new model)."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration
    s = SIZES
    cfg = BartConfig(vocab_size=s["vocab"], d_model=s["hidden"], encoder_layers=s["layers"],
                     decoder_layers=s["layers"], encoder_attention_heads=s["heads"],
                     decoder_attention_heads=s["heads"], encoder_ffn_dim=s["inner"],
                     decoder_ffn_dim=s["inner"], max_position_embeddings=s["positions"],
                     scale_embedding=True, activation_function="gelu",
                     attn_implementation="eager")
    model = BartForConditionalGeneration(cfg).eval()
    model, inputs, forward = seq2seq(model, cfg.pad_token_id)
    with torch.no_grad():
        model.final_logits_bias.copy_(torch.randn(model.final_logits_bias.shape))
    return model, inputs, forward


def make_t5_conditional():
    """T5ForConditionalGeneration: make_t5's encoder, and a decoder with its
    own relative position bias (one direction), cross-attention without one,
    the tied head scaled by d_model^-0.5, gated-gelu, bf16."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration
    s = SIZES
    cfg = T5Config(d_model=s["hidden"], d_kv=s["hidden"] // s["heads"],
                   num_heads=s["heads"], num_layers=s["layers"], d_ff=s["inner"],
                   vocab_size=s["vocab"], relative_attention_num_buckets=16,
                   relative_attention_max_distance=10, feed_forward_proj="gated-gelu",
                   decoder_start_token_id=0, attn_implementation="eager")
    model = T5ForConditionalGeneration(cfg).eval()
    model, inputs, forward = seq2seq(model, cfg.pad_token_id)
    return model.to(torch.bfloat16), inputs, forward


def make_vit():
    """ViTForImageClassification (its `vit.`; the classifier is ignored):
    16x16 images of 3 channels in 4x4 patches, 17 tokens; the CLS token and
    position embeddings redrawn N(0, 1) and the patch convolution
    N(0, 0.2^2), as tables and matrices are."""
    import torch
    from transformers import ViTConfig, ViTForImageClassification
    s = SIZES
    cfg = ViTConfig(hidden_size=s["hidden"], num_attention_heads=s["heads"],
                    num_hidden_layers=s["layers"], intermediate_size=s["inner"],
                    image_size=16, patch_size=4, num_channels=3, num_labels=3,
                    attn_implementation="eager")
    model = ViTForImageClassification(cfg).eval()
    redraw_parameters(model)
    redraw_vit_embeddings(model.vit)
    pixels = torch.randn(2, 3, 16, 16)
    return model, {"pixel_values": pixels}, \
        lambda m: {"hidden": m.vit(pixel_values=pixels).last_hidden_state}


MAKERS = {"gpt2": make_gpt2, "llama": make_llama, "llama3": make_llama3,
          "llama_linear": make_llama_linear, "gemma2": make_gemma2,
          "gpt_neox": make_gpt_neox, "gpt_neox_seq": make_gpt_neox_seq,
          "mistral": make_mistral,
          "qwen2": make_qwen2, "bert": make_bert, "roberta": make_roberta,
          "distilbert": make_distilbert, "t5": make_t5,
          "bart": make_bart, "t5_conditional": make_t5_conditional,
          "vit": make_vit}


def main():
    check_versions()
    import numpy as np
    import safetensors
    import torch
    import transformers
    import safetensors_io as st

    torch.set_num_threads(1)
    names = sys.argv[1:] or list(MAKERS)
    for name in names:
        torch.manual_seed(SEED)
        model, inputs, forward = MAKERS[name]()
        out = os.path.join(FIXTURES, name)
        shutil.rmtree(out, ignore_errors=True)
        model.save_pretrained(out)
        # The golden is the saved checkpoint's, reloaded as a user would and
        # widened to float32 (exact for bf16).
        reloaded = type(model).from_pretrained(out, attn_implementation="eager")
        reloaded = reloaded.float().eval()
        with torch.no_grad():
            outputs = forward(reloaded)
        # Ids and lengths as i32, images as f32.
        tensors = {"input." + k: (v.float() if v.is_floating_point()
                                  else v.to(torch.int32)).numpy()
                   for k, v in inputs.items()}
        # Outputs as f32 `expected.<name>`; generated ids (`generate.*`) as
        # i32 under their own name.
        tensors.update({(k if k.startswith("generate.") else "expected." + k):
                        (v.to(torch.int32) if k.startswith("generate.") else v.float()).numpy()
                        for k, v in outputs.items()})
        meta = {"generator": "test/import/make_fixtures.py",
                "torch_version": torch.__version__,
                "transformers_version": transformers.__version__,
                "safetensors_version": safetensors.__version__,
                "numpy_version": np.__version__,
                "module": f"transformers.{type(model).__name__}",
                "seed": str(SEED)}
        st.save(os.path.join(out, "golden.safetensors"), tensors, metadata=meta)
        sizes = {f: os.path.getsize(os.path.join(out, f)) for f in sorted(os.listdir(out))}
        print(f"{name}: {type(model).__name__}, "
              + ", ".join(f"{f} {n} bytes" for f, n in sizes.items()))


if __name__ == "__main__":
    main()
