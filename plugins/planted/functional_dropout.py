"""A PLANTED MISTAKE (plugins/planted/functional_dropout.pbtxt): a team's
module that drops with torch.nn.functional.dropout, which draws from
torch's generator, instead of the harness's receipt_parity_layers.
KeyedDropout. No dropout module is there for the layer audit to see."""
import torch
from torch import nn
from torch.nn import functional as F

from receipt_parity_layers import SyncBatchNorm2d


class FunctionalDropoutNet(nn.Module):
  """A convolution, max pooling, tanh, then F.dropout before the head; with
  sync_batch_norm, the harness's synchronized batch norm after the
  convolution (the study's "with synchronized batch norm" setting)."""

  def __init__(self, image_size: int = 16, sync_batch_norm: bool = False):
    super().__init__()
    self.conv = nn.Conv2d(1, 4, 3, padding=1)
    self.norm = SyncBatchNorm2d(4, 0) if sync_batch_norm else nn.Identity()
    self.head = nn.Linear(4 * (image_size // 2) ** 2, 4)

  def forward(self, images):
    x = F.max_pool2d(torch.tanh(self.norm(self.conv(images))), 2)
    return self.head(F.dropout(torch.flatten(x, 1), 0.5, self.training))
