#!/usr/bin/env python3
"""A small GPT-style transformer (token and position embeddings, two pre-norm
encoder layers with 2-head self-attention and a GELU MLP, a final LayerNorm
and a vocabulary head) exported from PyTorch, with one input and PyTorch's own
output saved as an ONNX backend test folder:

    OUT/tiny_transformer/model.onnx
    OUT/tiny_transformer/test_data_set_0/{input_0,output_0}.pb

so `passlab-cli conformance` checks passlab's backends against PyTorch on a
real exported attention graph (Shape/Gather/Slice subgraphs, the [seq, batch,
d] projections of nn.MultiheadAttention). Deterministic (fixed seeds).

Usage: export_tiny_transformer.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper


class TinyGPT(nn.Module):
    def __init__(self, vocab=100, d=32, heads=2, layers=2, ctx=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True,
                                           activation="gelu")
        self.enc = nn.TransformerEncoder(layer, layers)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.tok(ids) + self.pos(pos)
        return self.head(self.ln(self.enc(x)))


def main():
    out = os.path.join(sys.argv[1], "tiny_transformer")
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    torch.manual_seed(0)
    model = TinyGPT().eval()
    ids = torch.randint(0, 100, (1, 16))
    path = os.path.join(out, "model.onnx")
    torch.onnx.export(model, ids, path, opset_version=14, input_names=["ids"], output_names=["logits"])
    with torch.no_grad():
        logits = model(ids).numpy()
    onnx.save_tensor(numpy_helper.from_array(ids.numpy().astype(np.int64), "ids"),
                     os.path.join(out, "test_data_set_0", "input_0.pb"))
    onnx.save_tensor(numpy_helper.from_array(logits.astype(np.float32), "logits"),
                     os.path.join(out, "test_data_set_0", "output_0.pb"))


if __name__ == "__main__":
    main()
