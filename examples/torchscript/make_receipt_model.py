"""Defines a small receipt-quality model, scripts it and saves it for the
trainer's `torchscript` model plugin.

  ~/.cache/receipt-parity/torch-2.11.0/venv/bin/python \
      examples/torchscript/make_receipt_model.py [--out=PATH] [--image_size=16] [--seed=0] \
      [--batch_norm] [--dropout=P] [--keyed_dropout=P]

writes PATH (default: receipt_model.pt beside this script), the file that
two_worker.pbtxt names. Use the project's torch (2.11): the trainer loads
what torch.jit.save wrote with the same version. TorchScript is deprecated
upstream: torch 2.11's torch.jit.script warns so, and this script shows
that warning (Python hides DeprecationWarning by default). The file it
saves is what the trainer needs; a team that would rather not script its
model trains it from its Python source with the python_module plugin
(examples/python_module/, docs/plugins.md).

The module maps [N, 1, S, S] grayscale receipts to [N, 4] logits, one per
label (ok, blurred, faded, cropped), which the trainer checks on one batch
when it loads the config. It has no batch normalization or dropout, so its
output for a receipt does not depend on the rest of the batch: two workers
train exactly what one does. `pixel_mean` is a buffer (state that is not
trained), saved and restored with the parameters in checkpoints.

--batch_norm puts a BatchNorm2d after the first convolution ("features.1"),
the kind of layer the trainer's layer audit finds: in training mode it
normalizes by each rank's local batch, so two workers no longer compute the
one-worker update (parity { batch_dependent_layers: "refuse" } refuses it;
the default, "report", trains it and says why parity fails).

--dropout=P puts an nn.Dropout(P) after the hidden layer: each rank draws
its own mask, so parity fails the same way. --keyed_dropout=P puts a
KeyedDropout(P) there instead, and forward takes a second argument,
`keys`: the trainer passes each example's int64 key for the update (its
receipt id and view mixed with the update's index), and the mask of an
example is a hash of (key, layer, element), so every rank, the one-worker
reference and a resumed run drop the same elements of it and parity holds
(two_worker_keyed_dropout.pbtxt).
"""
import argparse
import os
import warnings

import torch
from torch import nn
from torch.nn import functional as F

NUM_LABELS = 4


class KeyedDropout(nn.Module):
  """Dropout whose mask of element e of example i is a hash of
  (keys[i], layer, e): not a random generator's, so it does not depend on
  which rank, micro-batch or position holds the example."""

  def __init__(self, p: float, layer: int):
    super().__init__()
    self.p = p
    self.layer = layer

  def forward(self, x: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    if not self.training or self.p == 0.0:
      return x
    flat = x.reshape(x.shape[0], -1)
    element = torch.arange(flat.shape[1], dtype=torch.int64).unsqueeze(0)
    # splitmix64-style mixing in int64 arithmetic (it wraps).
    h = keys.unsqueeze(1) * -7046029254386353131 + element * -4658895280553007687
    h = h + self.layer * 7640891576956012809
    h = (h ^ (h >> 30)) * -4658895280553007687
    h = (h ^ (h >> 27)) * -7723592293110705685
    h = h ^ (h >> 31)
    uniform = (h & 0xFFFFFF).to(torch.float64) / 16777216.0
    keep = (uniform >= self.p).to(x.dtype)
    return (flat * keep / (1.0 - self.p)).reshape(x.shape)


class ReceiptNet(nn.Module):

  def __init__(self, image_size: int, batch_norm: bool = False, dropout: float = 0.0):
    super().__init__()
    first = [nn.Conv2d(1, 8, 3, padding=1)]
    if batch_norm:
      first.append(nn.BatchNorm2d(8))
    self.features = nn.Sequential(
        *first, nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
    side = image_size // 4
    self.head = nn.Linear(16 * side * side, 32)
    self.drop = nn.Dropout(dropout)
    self.out = nn.Linear(32, NUM_LABELS)
    self.register_buffer("pixel_mean", torch.tensor(0.5))

  def forward(self, images: torch.Tensor) -> torch.Tensor:
    x = self.features(images - self.pixel_mean)
    return self.out(self.drop(F.relu(self.head(x.flatten(1)))))


class KeyedReceiptNet(ReceiptNet):
  """ReceiptNet with keyed dropout after its hidden layer: forward(images,
  keys)."""

  def __init__(self, image_size: int, dropout: float):
    super().__init__(image_size)
    self.keyed_drop = KeyedDropout(dropout, 0)

  def forward(self, images: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    x = self.features(images - self.pixel_mean)
    return self.out(self.keyed_drop(F.relu(self.head(x.flatten(1))), keys))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  here = os.path.dirname(os.path.abspath(__file__))
  parser.add_argument("--out", default=os.path.join(here, "receipt_model.pt"))
  parser.add_argument("--image_size", type=int, default=16)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--batch_norm", action="store_true",
                      help="a BatchNorm2d after the first convolution")
  parser.add_argument("--dropout", type=float, default=0.0,
                      help="an nn.Dropout after the hidden layer (breaks parity)")
  parser.add_argument("--keyed_dropout", type=float, default=0.0,
                      help="a KeyedDropout after the hidden layer (keeps parity)")
  args = parser.parse_args()
  # Shown, not hidden: "`torch.jit.script` is deprecated. Please switch to
  # `torch.compile` or `torch.export`."
  warnings.simplefilter("default", DeprecationWarning)
  torch.manual_seed(args.seed)
  zeros = torch.zeros(2, 1, args.image_size, args.image_size)
  if args.keyed_dropout > 0:
    scripted = torch.jit.script(KeyedReceiptNet(args.image_size, args.keyed_dropout))
    logits = scripted(zeros, torch.zeros(2, dtype=torch.int64))
  else:
    scripted = torch.jit.script(ReceiptNet(args.image_size, args.batch_norm, args.dropout))
    logits = scripted(zeros)
  assert logits.shape == (2, NUM_LABELS), logits.shape
  torch.jit.save(scripted, args.out)
  print("wrote", args.out)


if __name__ == "__main__":
  main()
