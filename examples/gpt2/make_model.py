"""A GPT-2-style decoder in PyTorch, exported to ONNX, with an input and PyTorch's own logits.

    python3 make_model.py OUT_DIR

writes OUT_DIR/model.onnx (4 layers, hidden 256, 4 heads, vocabulary 512, 32 tokens; weights drawn
here from a fixed seed), OUT_DIR/input_ids.npy (the tokens, named after the graph input so that
`vdev run --inputs DIR` finds them) and OUT_DIR/expected_logits.npy (PyTorch's f32 logits).
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

LAYERS, HIDDEN, HEADS, VOCAB, TOKENS = 4, 256, 4, 512, 32


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(HIDDEN)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN)
        self.fc = nn.Linear(HIDDEN, 4 * HIDDEN)
        self.fc_out = nn.Linear(4 * HIDDEN, HIDDEN)
        self.register_buffer("causal", torch.tril(torch.ones(TOKENS, TOKENS, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(HIDDEN, dim=2)
        heads = lambda z: z.reshape(b, t, HEADS, d // HEADS).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(d // HEADS))
        scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
        att = F.softmax(scores, dim=-1) @ v
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.wpe = nn.Embedding(TOKENS, HIDDEN)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1])
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = Decoder().eval()
    with torch.no_grad():  # LayerNorm's default weights are 1 and 0: draw them too
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.1, 0.1)
    input_ids = torch.randint(0, VOCAB, (1, TOKENS), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = model(input_ids)
    torch.onnx.export(model, (input_ids,), os.path.join(out_dir, "model.onnx"), input_names=["input_ids"],
                      output_names=["logits"], opset_version=17, do_constant_folding=True)
    np.save(os.path.join(out_dir, "input_ids.npy"), input_ids.numpy().astype(np.int64))
    np.save(os.path.join(out_dir, "expected_logits.npy"), logits.numpy().astype(np.float32))


if __name__ == "__main__":
    main(sys.argv[1])
