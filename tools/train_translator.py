#!/usr/bin/python3
"""Trains examples/translate's model: Chinese numerals to English words.

A small pre-norm encoder-decoder transformer (mBART-style names and layout),
trained on numbers outside the held-out split of tools/numerals.py, with a
fixed seed. Writes, under examples/translate/model/:

  translator.safetensors  weights, f32, PyTorch layout (linear [out][in])
  vocab.json              source symbols and target words, specials first
  test.tsv                1,000 held-out numbers: n, Chinese, English
  golden.tsv              200 of them: Chinese, then the token ids this
                          script's own greedy decoding produces
  training.txt            the log of the run that made the files

Usage (Debian's python3-torch, 2 cores, about 35 minutes):
  /usr/bin/python3 tools/train_translator.py [--steps N] [--out DIR]
"""

import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numerals  # noqa: E402
from hf_reference import write_safetensors  # noqa: E402

# The architecture; examples/translate/translator.json states the same.
D_MODEL = 128
HEADS = 4
FFN = 512
ENCODER_LAYERS = 3
DECODER_LAYERS = 3
MAX_SOURCE = 24   # longest numeral is 15 characters
MAX_TARGET = 24   # longest English is 12 words, plus <bos>/<eos>
EPS = 1e-5

SOURCE_VOCAB = ["<pad>", "<unk>"] + numerals.SOURCE_SYMBOLS
TARGET_VOCAB = ["<pad>", "<bos>", "<eos>"] + numerals.TARGET_WORDS
PAD, BOS, EOS = 0, 1, 2


def sinusoidal_positions(length, dim):
    """Vaswani et al.: even channels sin, odd channels cos, of
    pos / 10000^(2i/dim)."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    i = torch.arange(0, dim, 2, dtype=torch.float32)[None, :]
    angle = pos / torch.pow(10000.0, i / dim)
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = torch.nn.Linear(D_MODEL, D_MODEL)
        self.k_proj = torch.nn.Linear(D_MODEL, D_MODEL)
        self.v_proj = torch.nn.Linear(D_MODEL, D_MODEL)
        self.out_proj = torch.nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x, memory, key_padding, causal):
        b, sq, _ = x.shape
        sk = memory.shape[1]
        hd = D_MODEL // HEADS
        q = self.q_proj(x).view(b, sq, HEADS, hd).transpose(1, 2)
        k = self.k_proj(memory).view(b, sk, HEADS, hd).transpose(1, 2)
        v = self.v_proj(memory).view(b, sk, HEADS, hd).transpose(1, 2)
        logits = q @ k.transpose(-1, -2) / math.sqrt(hd)
        if key_padding is not None:
            logits = logits.masked_fill(key_padding[:, None, None, :], -1e30)
        if causal:
            future = torch.ones(sq, sk, dtype=torch.bool).triu(1)
            logits = logits.masked_fill(future, -1e30)
        out = (logits.softmax(-1) @ v).transpose(1, 2).reshape(b, sq, D_MODEL)
        return self.out_proj(out)


class Layer(torch.nn.Module):
    def __init__(self, cross):
        super().__init__()
        self.self_attn_layer_norm = torch.nn.LayerNorm(D_MODEL, eps=EPS)
        self.self_attn = Attention()
        if cross:
            self.encoder_attn_layer_norm = torch.nn.LayerNorm(D_MODEL, eps=EPS)
            self.encoder_attn = Attention()
        self.final_layer_norm = torch.nn.LayerNorm(D_MODEL, eps=EPS)
        self.fc1 = torch.nn.Linear(D_MODEL, FFN)
        self.fc2 = torch.nn.Linear(FFN, D_MODEL)
        self.cross = cross

    def forward(self, x, self_padding, memory=None, memory_padding=None):
        h = self.self_attn_layer_norm(x)
        x = x + self.self_attn(h, h, self_padding, causal=self.cross)
        if self.cross:
            h = self.encoder_attn_layer_norm(x)
            x = x + self.encoder_attn(h, memory, memory_padding, causal=False)
        h = self.final_layer_norm(x)
        return x + self.fc2(F.gelu(self.fc1(h), approximate="tanh"))


class Stack(torch.nn.Module):
    def __init__(self, vocab, layers, cross):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, D_MODEL)
        self.layers = torch.nn.ModuleList(Layer(cross) for _ in range(layers))
        self.layer_norm = torch.nn.LayerNorm(D_MODEL, eps=EPS)
        self.register_buffer("positions", sinusoidal_positions(64, D_MODEL),
                             persistent=False)

    def forward(self, tokens, padding, memory=None, memory_padding=None):
        x = self.embed_tokens(tokens) + self.positions[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x, padding, memory, memory_padding)
        return self.layer_norm(x)


class Translator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Stack(len(SOURCE_VOCAB), ENCODER_LAYERS, cross=False)
        self.decoder = Stack(len(TARGET_VOCAB), DECODER_LAYERS, cross=True)
        self.lm_head = torch.nn.Linear(D_MODEL, len(TARGET_VOCAB), bias=False)

    def forward(self, source, target_in):
        source_padding = source == PAD
        memory = self.encoder(source, source_padding)
        hidden = self.decoder(target_in, None, memory, source_padding)
        return self.lm_head(hidden)

    @torch.no_grad()
    def greedy(self, source):
        """Greedy decoding without a cache: the whole prefix every step."""
        source_padding = source == PAD
        memory = self.encoder(source, source_padding)
        out = torch.full((source.shape[0], 1), BOS)
        done = torch.zeros(source.shape[0], dtype=torch.bool)
        for _ in range(MAX_TARGET - 1):
            hidden = self.decoder(out, None, memory, source_padding)
            token = self.lm_head(hidden[:, -1]).argmax(-1)
            token = torch.where(done, torch.full_like(token, PAD), token)
            out = torch.cat([out, token[:, None]], 1)
            done |= token == EOS
            if done.all():
                break
        return [[t for t in row[1:].tolist() if t != PAD] for row in out]


def encode_source(text):
    return [SOURCE_VOCAB.index(c) for c in text]


def encode_target(text):
    return [TARGET_VOCAB.index(w) for w in text.split()]


def batch(numbers):
    sources = [encode_source(numerals.to_chinese(n)) for n in numbers]
    targets = [encode_target(numerals.to_english(n)) for n in numbers]
    s = max(map(len, sources))
    t = max(map(len, targets)) + 1
    source = torch.tensor([x + [PAD] * (s - len(x)) for x in sources])
    target_in = torch.tensor([[BOS] + y + [PAD] * (t - 1 - len(y)) for y in targets])
    target_out = torch.tensor([y + [EOS] + [PAD] * (t - 1 - len(y)) for y in targets])
    return source, target_in, target_out


def words(tokens):
    return " ".join(TARGET_VOCAB[t] for t in tokens if t != EOS)


def accuracy(model, numbers):
    model.eval()
    right = 0
    for i in range(0, len(numbers), 250):
        chunk = numbers[i:i + 250]
        source, _, _ = batch(chunk)
        for n, tokens in zip(chunk, model.greedy(source)):
            right += tokens and tokens[-1] == EOS and words(tokens) == numerals.to_english(n)
    model.train()
    return right / len(numbers)


def write_checkpoint(path, tensors):
    """The model's tensors as float32 safetensors, names in order."""
    write_safetensors(path, {name: tensors[name].detach().contiguous().to(torch.float32).numpy()
                             for name in sorted(tensors)},
                      {"format": "pt", "source": "tools/train_translator.py"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "examples", "translate", "model"))
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    log_file = open(os.path.join(args.out, "training.txt"), "w")

    def log(message):
        print(message, flush=True)
        log_file.write(message + "\n")
        log_file.flush()

    # Test and validation sets: disjoint samples of the held-out numbers.
    test_rng = random.Random(1)
    test = []
    while len(test) < 1000:
        n = numerals.sample_number(test_rng, held_out=True)
        if n not in test:
            test.append(n)
    validation = []
    while len(validation) < 500:
        n = numerals.sample_number(test_rng, held_out=True)
        if n not in test and n not in validation:
            validation.append(n)

    model = Translator()
    log(f"parameters: {sum(p.numel() for p in model.parameters())}; "
        f"steps {args.steps}, batch {args.batch}, seed {args.seed}, "
        f"torch {torch.__version__}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    warmup = 200

    def learning_rate(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (args.steps - warmup)))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, learning_rate)
    start = time.time()
    for step in range(args.steps):
        source, target_in, target_out = batch(
            [numerals.sample_number(rng, held_out=False) for _ in range(args.batch)])
        logits = model(source, target_in)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               target_out.reshape(-1), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 100 == 0 or step == args.steps - 1:
            message = f"step {step} loss {loss.item():.4f} {time.time() - start:.0f}s"
            if step % 1000 == 0 or step == args.steps - 1:
                message += f" validation exact match {accuracy(model, validation):.4f}"
            log(message)

    model.eval()
    test_accuracy = accuracy(model, test)
    log(f"test exact match (1000 held-out numbers, PyTorch greedy): {test_accuracy:.4f}")

    # Hugging Face BART's names: the runtime's "bart" weight naming.
    state = {(k if k.startswith("lm_head") else "model." + k): v
             for k, v in model.state_dict().items()}
    write_checkpoint(os.path.join(args.out, "translator.safetensors"), state)
    with open(os.path.join(args.out, "vocab.json"), "w") as f:
        json.dump({"source": SOURCE_VOCAB, "target": TARGET_VOCAB,
                   "pad": PAD, "bos": BOS, "eos": EOS}, f, ensure_ascii=False, indent=1)
    with open(os.path.join(args.out, "test.tsv"), "w") as f:
        for n in test:
            f.write(f"{n}\t{numerals.to_chinese(n)}\t{numerals.to_english(n)}\n")
    golden = test[:200]
    source, _, _ = batch(golden)
    with open(os.path.join(args.out, "golden.tsv"), "w") as f:
        for n, tokens in zip(golden, model.greedy(source)):
            f.write(numerals.to_chinese(n) + "\t" + " ".join(map(str, tokens)) + "\n")
    log(f"done in {time.time() - start:.0f}s")


if __name__ == "__main__":
    main()
