#!/usr/bin/env python3
"""Add text to the decoder fixtures of make_fixtures.py: a tokenizer and
what transformers generates from a text prompt, for attnc.from_pretrained's
tests (python/tests/test_pretrained.py). Run it after make_fixtures.py;
it leaves the weights and goldens that script wrote as they are.

Pinned versions (checked at run time):

    torch==2.15.0
    transformers==5.23.0
    tokenizers==0.23.3

Regenerate with

    /tmp/golden-venv/bin/python test/import/make_text_fixtures.py

For fixtures/gpt2 and fixtures/llama it writes:
  * tokenizer.json (and tokenizer_config.json): a BPE with a Metaspace
    pre-tokenizer and decoder (spaces survive a round trip) trained by
    `tokenizers` on CORPUS to the model's 100 ids, `<|endoftext|>` being id
    0, the fixtures' BOS and EOS; the Llama one puts it before every prompt
    (a TemplateProcessing post-processor, as Llama's tokenizer adds `<s>`);
  * text_golden.json: for each prompt of PROMPTS, its ids as the tokenizer
    gives them, the ids transformers' `generate` adds greedily
    (max_new_tokens 12, generation_config.json's EOS; the model in float32,
    as attnc computes a bf16 checkpoint), and their text decoded with
    skip_special_tokens; and under "stops", for every two-character
    substring of that text at an even offset, how many ids `generate`
    returns with it as `stop_strings` (StopStringCriteria: the ids up to
    the one that completes it, which may begin in the prompt).
For the encoder-decoders fixtures/bart and fixtures/t5_conditional, the
same tokenizer (no BOS) and text_golden.json without "stops": the prompt
is the encoder's, the ids those after the decoder's start token."""

import json
import os
import sys

import torch
import transformers
import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, PreTrainedTokenizerFast

PINNED = {"torch": torch.__version__, "transformers": transformers.__version__,
          "tokenizers": tokenizers.__version__}
WANT = {"torch": "2.15.0", "transformers": "5.23.0", "tokenizers": "0.23.3"}
HERE = os.path.dirname(os.path.abspath(__file__))
EOS = "<|endoftext|>"
CORPUS = [
    "the cat sat on the mat and the dog sat on the log",
    "a model reads the tokens and writes the next one",
    "attention looks at every token before this one",
    "the compiler makes the kernels fast on every core",
    "one two three four five six seven eight nine ten",
] * 20
PROMPTS = ["the cat sat on", "attention looks at every", "one two three"]
MAX_NEW_TOKENS = 12


def train_tokenizer(vocab_size, bos):
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS],
                                  show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    assert tok.token_to_id(EOS) == 0 and tok.get_vocab_size() <= vocab_size
    if bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{EOS} $A", special_tokens=[(EOS, 0)])
    return tok


def greedy(model, fast, prompt, **kwargs):
    """The prompt's ids and transformers' greedy `generate` from them."""
    ids = fast(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                             attention_mask=torch.ones_like(ids), **kwargs)
    return ids, out


def save_golden(d, cases):
    with open(os.path.join(d, "text_golden.json"), "w") as f:
        json.dump({"versions": PINNED, "max_new_tokens": MAX_NEW_TOKENS,
                   "cases": cases}, f, indent=2)
        f.write("\n")


def main():
    for lib, version in PINNED.items():
        if not version.startswith(WANT[lib]):
            sys.exit(f"{lib} {version}: the fixtures are pinned to {WANT[lib]}")
    for name, bos in (("gpt2", False), ("llama", True)):
        d = os.path.join(HERE, "fixtures", name)
        model = AutoModelForCausalLM.from_pretrained(d).float().eval()
        tok = train_tokenizer(model.config.vocab_size, bos)
        fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, bos_token=EOS)
        fast.save_pretrained(d)
        cases = []
        for prompt in PROMPTS:
            ids, out = greedy(model, fast, prompt)
            new = out[0, ids.shape[1]:].tolist()
            text = fast.decode(new, skip_special_tokens=True)
            stops = {}
            for start in range(0, len(text) - 2, 2):
                stop = text[start:start + 2]
                if stop in stops:
                    continue
                _, out = greedy(model, fast, prompt, stop_strings=[stop], tokenizer=fast)
                stops[stop] = out.shape[1] - ids.shape[1]
            cases.append({"prompt": prompt, "prompt_ids": ids[0].tolist(), "ids": new,
                          "text": text, "stops": stops})
        save_golden(d, cases)
        print(name, [(c["prompt"], len(c["ids"]), c["text"]) for c in cases])
    # The encoder-decoders: the prompt is the encoder's; the new ids follow
    # the decoder's start token (not returned), EOS and padding as generate
    # gives them, cut after the EOS.
    for name in ("bart", "t5_conditional"):
        d = os.path.join(HERE, "fixtures", name)
        model = AutoModelForSeq2SeqLM.from_pretrained(d).float().eval()
        tok = train_tokenizer(model.config.vocab_size, False)
        fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS)
        fast.save_pretrained(d)
        eos = model.generation_config.eos_token_id
        cases = []
        for prompt in PROMPTS:
            ids, out = greedy(model, fast, prompt)
            new = out[0, 1:].tolist()
            if eos in new:
                new = new[:new.index(eos) + 1]
            cases.append({"prompt": prompt, "prompt_ids": ids[0].tolist(), "ids": new,
                          "text": fast.decode(new, skip_special_tokens=True)})
        save_golden(d, cases)
        print(name, [(c["prompt"], c["ids"], c["text"]) for c in cases])


if __name__ == "__main__":
    main()
