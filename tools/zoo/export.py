#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""
export.py - the model zoo: real models exported by torch.onnx, each with
its input and PyTorch's output, for `make zoo` and the model benchmark.

Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision,
python3-onnx; tools/deps.sh installs them). Weights are random with a
fixed seed per model, so nothing is downloaded and every export is the
same from one run to the next.

    tools/zoo/export.py OUTDIR [MODEL...]

writes, per model, OUTDIR/<model>/model.onnx, OUTDIR/<model>/info (one
line: "opset N") and OUTDIR/<model>/test_data_set_K/{input,output}_I.npy
(one set, or one per input size for models with dynamic axes), then
OUTDIR/MANIFEST, one model a line in the order of MODELS below.
"""
import io
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torchvision

warnings.filterwarnings("ignore")
torch.set_num_threads(1)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                                 nn.Linear(256, 128), nn.ReLU(),
                                 nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)


class LSTMClassifier(nn.Module):
    """Two stacked LSTM layers over 32 steps, the last state classified."""

    def __init__(self, features=64, hidden=128, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class Embedding(nn.Module):
    """A lookup in a 2000 x 64 table, mean-pooled and classified: the
    Gather that real text models start with."""

    def __init__(self, vocab=2000, d=64, classes=10):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.fc = nn.Linear(d, classes)

    def forward(self, ids):
        return self.fc(self.emb(ids).mean(1))


class BertLayer(nn.Module):
    """Post-norm self-attention and feed-forward, as in BERT."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.h, self.dh).permute(0, 2, 1, 3)

    def forward(self, x, bias):
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        a = torch.matmul(q, k.transpose(-1, -2)) / (self.dh ** 0.5) + bias
        a = torch.matmul(a.softmax(-1), v).permute(0, 2, 1, 3)
        a = a.reshape(x.shape[0], x.shape[1], -1)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class Bert(nn.Module):
    """A two-layer BERT-style encoder: token ids and an attention mask in,
    the pooled first token out (as a sequence classifier sees it)."""

    def __init__(self, vocab=1000, d=128, heads=4, ff=512, layers=2, maxlen=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxlen, d)
        self.typ = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d, heads, ff) for _ in range(layers))
        self.pool = nn.Linear(d, d)
        self.register_buffer("position_ids", torch.arange(maxlen).unsqueeze(0))

    def forward(self, ids, mask):
        s = ids.shape[1]
        x = self.tok(ids) + self.pos(self.position_ids[:, :s]) + \
            self.typ(torch.zeros_like(ids))
        x = self.ln(x)
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        return torch.tanh(self.pool(x[:, 0]))


class Gpt(nn.Module):
    """A GPT-style decoder: pre-norm layers under a causal mask."""

    def __init__(self, vocab=500, d=128, heads=4, layers=2, maxlen=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxlen, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True,
                                           norm_first=True,
                                           activation=nn.functional.gelu)
        self.layers = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        s = ids.shape[1]
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        x = self.tok(ids) + self.pos(torch.arange(s).unsqueeze(0))
        return self.head(self.layers(x, mask=mask))


class BiGRU(nn.Module):
    """Two bidirectional GRU layers, a tag per step."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(32, 64, num_layers=2, batch_first=True,
                          bidirectional=True)
        self.fc = nn.Linear(128, 5)

    def forward(self, x):
        return self.fc(self.gru(x)[0])


class FPN(nn.Module):
    """A detection backbone: resnet18 with a feature pyramid."""

    def __init__(self):
        super().__init__()
        from torchvision.models.detection.backbone_utils import \
            resnet_fpn_backbone
        self.body = resnet_fpn_backbone(backbone_name="resnet18",
                                        weights=None, trainable_layers=5)

    def forward(self, x):
        return tuple(self.body(x).values())


def swin_mini():
    # torchvision's Swin code (shifted windows and their masks, built by
    # shape arithmetic torch.onnx exports) at a size make check affords.
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=48, depths=[2, 2, 2],
                           num_heads=[3, 6, 12], window_size=[4, 4],
                           num_classes=10)


def image(n, size):
    return torch.randn(n, 3, size, size)


def tv(name, **kw):
    return lambda: getattr(torchvision.models, name)(weights=None, **kw)


def convnext_small_blocks():
    # torchvision's ConvNeXt code at a small width and depth, at opset 13
    # (convnext_tiny is exported at 17): LayerNorm decomposed, Erf.
    from torchvision.models.convnext import ConvNeXt, CNBlockConfig
    cfg = [CNBlockConfig(32, 64, 1), CNBlockConfig(64, 128, 1),
           CNBlockConfig(128, 256, 2), CNBlockConfig(256, None, 1)]
    return ConvNeXt(cfg, num_classes=100)


def vit():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=64, patch_size=8, num_layers=2,
                             num_heads=4, hidden_dim=128, mlp_dim=512,
                             num_classes=10)


def transformer():
    return nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True,
                                      activation="gelu")


def bert_inputs(batch, seq):
    ids = torch.randint(0, 1000, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[:, seq - seq // 4:] = 0        # padded tails
    return ids, mask


# name: (constructor, opset, input sets (one tuple of tensors per set),
#        input names, dynamic axes or None). Sizes keep `make check` to
#        a few minutes on the host backend: batch 1, the smallest
#        resolution each architecture takes without degenerating.
MODELS = {
    "mlp": (MLP, 13, lambda: [(torch.randn(8, 784),)], ["x"], None),
    "lstm": (LSTMClassifier, 13, lambda: [(torch.randn(1, 32, 64),)],
             ["x"], None),
    "resnet18": (tv("resnet18"), 13, lambda: [(image(1, 112),)], ["x"], None),
    "mobilenet_v2": (tv("mobilenet_v2"), 13, lambda: [(image(1, 112),)],
                     ["x"], None),
    "squeezenet1_1": (tv("squeezenet1_1"), 13, lambda: [(image(1, 112),)],
                      ["x"], None),
    "shufflenet_v2_x1_0": (tv("shufflenet_v2_x1_0"), 13,
                           lambda: [(image(1, 112),)], ["x"], None),
    "efficientnet_b0": (tv("efficientnet_b0"), 13, lambda: [(image(1, 112),)],
                        ["x"], None),
    "googlenet": (tv("googlenet", aux_logits=False, init_weights=True), 13,
                  lambda: [(image(1, 112),)], ["x"], None),
    "convnext_tiny": (tv("convnext_tiny"), 17, lambda: [(image(1, 64),)],
                      ["x"], None),
    "convnext_small_blocks": (convnext_small_blocks, 13,
                              lambda: [(image(1, 64),)], ["x"], None),
    "transformer": (transformer, 17, lambda: [(torch.randn(1, 64, 256),)],
                    ["x"], None),
    "bert": (Bert, 13, lambda: [bert_inputs(2, 16), bert_inputs(1, 48)],
             ["ids", "mask"], {"ids": {0: "batch", 1: "seq"},
                               "mask": {0: "batch", 1: "seq"}}),
    "vit": (vit, 17, lambda: [(image(1, 64),)], ["x"], None),
    # Beyond the list: what else torch.onnx commonly emits.
    "mobilenet_v3_small": (tv("mobilenet_v3_small"), 17,
                           lambda: [(image(1, 112),)], ["x"], None),
    "swin_mini": (swin_mini, 17, lambda: [(image(1, 64),)], ["x"], None),
    "gpt": (Gpt, 17, lambda: [(torch.randint(0, 500, (1, 32)),)], ["ids"],
            None),
    "bigru": (BiGRU, 13, lambda: [(torch.randn(1, 16, 32),)], ["x"], None),
    "resnet18_fpn": (FPN, 13, lambda: [(image(1, 64),)], ["x"], None),
    "embedding": (Embedding, 13, lambda: [(torch.randint(0, 2000, (4, 64)),)],
                  ["ids"], None),
}


def like_trained(model, sets):
    """Random weights, but activations of the scale trained ones have:
    batch norms take the statistics of a batch of calibration inputs
    (with default statistics, deep nets shrink their activations to
    1e-14), and layers initialized to zero (ViT's head) become random."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for m in model.modules():
        if isinstance(m, nn.Linear) and not m.weight.detach().any():
            nn.init.normal_(m.weight, std=0.02)
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None           # a cumulative average
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(*(torch.randn(4, *x.shape[1:]) for x in sets[0]))
    model.eval()


def save(path, t):
    a = t.detach().numpy()
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    np.save(path, np.ascontiguousarray(a))


def export(outdir, name):
    ctor, opset, inputs, names, dynamic = MODELS[name]
    seed = sum(ord(ch) for ch in name)
    torch.manual_seed(seed)
    model = ctor().eval()
    torch.manual_seed(seed + 1)
    sets = inputs()
    like_trained(model, sets)
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    buf = io.BytesIO()
    # With gradients enabled, as users export: under no_grad() an eval
    # TransformerEncoderLayer traces its fused fast path, which has no
    # ONNX export.
    torch.onnx.export(model, sets[0], buf, opset_version=opset,
                      input_names=names, output_names=["y"],
                      dynamic_axes=dynamic, do_constant_folding=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(buf.getvalue())
    with torch.no_grad():
        for k, xs in enumerate(sets):
            sd = os.path.join(d, "test_data_set_%d" % k)
            os.makedirs(sd, exist_ok=True)
            ys = model(*xs)
            ys = ys if isinstance(ys, (tuple, list)) else (ys,)
            for i, x in enumerate(xs):
                save(os.path.join(sd, "input_%d.npy" % i), x)
            for i, y in enumerate(ys):
                save(os.path.join(sd, "output_%d.npy" % i), y)
    with open(os.path.join(d, "info"), "w") as f:
        f.write("opset %d\n" % opset)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir, names = sys.argv[1], sys.argv[2:] or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit("export.py: unknown model %s (have: %s)" %
                     (n, " ".join(MODELS)))
    for n in names:
        print("export.py: %s" % n, flush=True)
        export(outdir, n)
    with open(os.path.join(outdir, "MANIFEST"), "w") as f:
        f.write("".join(n + "\n" for n in MODELS if
                        os.path.exists(os.path.join(outdir, n, "info"))))


if __name__ == "__main__":
    main()
