"""Defines a small receipt-quality model, scripts it and saves it for the
trainer's `torchscript` model plugin.

  ~/.cache/receipt-parity/torch-2.11.0/venv/bin/python \
      examples/torchscript/make_receipt_model.py [--out=PATH] [--image_size=16] [--seed=0] \
      [--batch_norm]

writes PATH (default: receipt_model.pt beside this script), the file that
two_worker.pbtxt names. Use the project's torch (2.11): the trainer loads
what torch.jit.save wrote with the same version. torch.jit.script may warn
that TorchScript is deprecated; the file it saves is what the trainer needs.

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
"""
import argparse
import os

import torch
from torch import nn
from torch.nn import functional as F

NUM_LABELS = 4


class ReceiptNet(nn.Module):

  def __init__(self, image_size: int, batch_norm: bool = False):
    super().__init__()
    first = [nn.Conv2d(1, 8, 3, padding=1)]
    if batch_norm:
      first.append(nn.BatchNorm2d(8))
    self.features = nn.Sequential(
        *first, nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
    side = image_size // 4
    self.head = nn.Linear(16 * side * side, 32)
    self.out = nn.Linear(32, NUM_LABELS)
    self.register_buffer("pixel_mean", torch.tensor(0.5))

  def forward(self, images: torch.Tensor) -> torch.Tensor:
    x = self.features(images - self.pixel_mean)
    return self.out(F.relu(self.head(x.flatten(1))))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  here = os.path.dirname(os.path.abspath(__file__))
  parser.add_argument("--out", default=os.path.join(here, "receipt_model.pt"))
  parser.add_argument("--image_size", type=int, default=16)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--batch_norm", action="store_true",
                      help="a BatchNorm2d after the first convolution")
  args = parser.parse_args()
  torch.manual_seed(args.seed)
  scripted = torch.jit.script(ReceiptNet(args.image_size, args.batch_norm))
  logits = scripted(torch.zeros(2, 1, args.image_size, args.image_size))
  assert logits.shape == (2, NUM_LABELS), logits.shape
  torch.jit.save(scripted, args.out)
  print("wrote", args.out)


if __name__ == "__main__":
  main()
