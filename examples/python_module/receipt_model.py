"""A receipt-quality model written as a plain PyTorch class, trained by the
C++ harness as it is (the `python_module` model plugin): no torch.jit,
no export step.

two_worker.pbtxt names this file and the class; the trainer imports it in
an embedded interpreter of the project's torch (2.11), seeds torch from the
config's model seed, builds ReceiptNet(**kwargs) and trains its parameters
on two workers against the one-worker reference. The module maps
[N, 1, S, S] grayscale receipts to [N, 4] logits, one per label (ok,
blurred, faded, cropped). It has no batch normalization or dropout, so its
output for a receipt does not depend on the rest of the batch: two workers
train exactly what one does. `pixel_mean` is a buffer (state that is not
trained), saved and restored with the parameters in checkpoints.

KeyedReceiptNet puts the harness's KeyedDropout (receipt_parity_layers,
on the embedded interpreter's path) after the hidden layer instead:
forward(images, keys) gets each example's key for the update, so its masks
are the same on every rank and in the one-worker reference
(two_worker_keyed_dropout.pbtxt). ReceiptNet(dropout=P) with P > 0 uses
nn.Dropout, which the layer audit names: each rank draws its own mask.

SyncNormReceiptNet puts a batch norm after each convolution: the harness's
SyncBatchNorm2d (numbered 0, 1 in the order forward reaches them), whose
statistics are the whole update's on every rank and in every micro-batch
(two_worker_sync_batch_norm.pbtxt: an uneven 6 + 2 split in two
micro-batches per rank). SyncNormReceiptNet(sync=False) uses
nn.BatchNorm2d instead, which the layer audit names: each rank normalizes
by its own examples.
"""
import torch
from torch import nn
from torch.nn import functional as F

from receipt_parity_layers import KeyedDropout, SyncBatchNorm2d

NUM_LABELS = 4


class ReceiptNet(nn.Module):

  def __init__(self, image_size: int = 16, channels: int = 8, hidden: int = 32,
               dropout: float = 0.0):
    super().__init__()
    self.features = nn.Sequential(
        nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
    flat = 2 * channels * (image_size // 4) * (image_size // 4)
    self.hidden = nn.Linear(flat, hidden)
    # nn.Dropout draws each rank's own mask: the layer audit names it.
    self.dropout = nn.Dropout(dropout)
    self.head = nn.Linear(hidden, NUM_LABELS)
    self.register_buffer("pixel_mean", torch.full((1,), 0.5))

  def forward(self, images: torch.Tensor) -> torch.Tensor:
    x = self.features(images - self.pixel_mean)
    x = self.dropout(F.relu(self.hidden(torch.flatten(x, 1))))
    return self.head(x)


class KeyedReceiptNet(ReceiptNet):

  def __init__(self, image_size: int = 16, channels: int = 8, hidden: int = 32,
               dropout: float = 0.5):
    super().__init__(image_size, channels, hidden)
    self.keyed_dropout = KeyedDropout(dropout, layer=0)

  def forward(self, images: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    x = self.features(images - self.pixel_mean)
    x = self.keyed_dropout(F.relu(self.hidden(torch.flatten(x, 1))), keys)
    return self.head(x)


class SyncNormReceiptNet(ReceiptNet):

  def __init__(self, image_size: int = 16, channels: int = 8, hidden: int = 32,
               sync: bool = True):
    super().__init__(image_size, channels, hidden)

    def norm(features, layer):
      return SyncBatchNorm2d(features, layer) if sync else nn.BatchNorm2d(features)

    self.features = nn.Sequential(
        nn.Conv2d(1, channels, 3, padding=1), norm(channels, 0), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(channels, 2 * channels, 3, padding=1), norm(2 * channels, 1), nn.ReLU(),
        nn.MaxPool2d(2))
