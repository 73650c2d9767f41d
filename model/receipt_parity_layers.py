"""The harness's layers for a team's Python nn.Module (model plugin
`python_module`), and the layer audit of such a module.

The trainer's embedded interpreter has this file's folder on sys.path, so a
team's model imports it as it is:

    from receipt_parity_layers import KeyedDropout

KeyedDropout(p, layer) is a dropout whose mask of element e of example i is
a hash of (keys[i], layer, e), not a random generator's draw: it does not
depend on which rank, micro-batch or position holds the example, so two
workers drop what one worker drops. The harness passes each example's key
for the update as forward's second argument (forward(images, keys)); the
model hands it on. Outside a training update (validation, the shape check)
the keys are zeros and the module is in eval mode: nothing is dropped.

audit(module) is what the trainer's layer audit reads (docs/layers.md): one
(module path, type, kind) per submodule that breaks parity, by the
module's type, in training mode only, and the kinds of model/layer_audit.h.
"""
import torch
from torch import nn

# The finding kinds of model/layer_audit.h; stable.
BATCH_NORM_TRAINING = "batch_norm_training"
INSTANCE_NORM_RUNNING_STATS = "instance_norm_running_stats"
DROPOUT = "dropout"
RANDOM = "random"
BUFFER_UPDATE = "buffer_update"
KEYED_DROPOUT = "keyed_dropout"


class KeyedDropout(nn.Module):
  """Dropout keyed by the example and the update (see the module's text)."""

  def __init__(self, p: float, layer: int = 0):
    super().__init__()
    if not 0.0 <= p < 1.0:
      raise ValueError("KeyedDropout: p must be in [0, 1), not %r" % (p,))
    self.p = float(p)
    self.layer = int(layer)

  def forward(self, x: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    if not self.training or self.p == 0.0:
      return x
    flat = x.reshape(x.shape[0], -1)
    element = torch.arange(flat.shape[1], dtype=torch.int64).unsqueeze(0)
    # splitmix64-style mixing in int64 arithmetic (it wraps).
    h = keys.to(torch.int64).unsqueeze(1) * -7046029254386353131
    h = h + element * -4658895280553007687 + self.layer * 7640891576956012809
    h = (h ^ (h >> 30)) * -4658895280553007687
    h = (h ^ (h >> 27)) * -7723592293110705685
    h = h ^ (h >> 31)
    uniform = (h & 0xFFFFFF).to(torch.float64) / 16777216.0
    keep = (uniform >= self.p).to(x.dtype)
    return (flat * keep / (1.0 - self.p)).reshape(x.shape)

  def extra_repr(self) -> str:
    return "p=%g, layer=%d" % (self.p, self.layer)


def _kind(module: nn.Module):
  """The finding kind of one module by its type, or None."""
  if isinstance(module, KeyedDropout):
    return KEYED_DROPOUT if module.p > 0 else None
  if isinstance(module, nn.modules.batchnorm._BatchNorm):
    return BATCH_NORM_TRAINING
  if isinstance(module, nn.modules.instancenorm._InstanceNorm):
    return INSTANCE_NORM_RUNNING_STATS if module.track_running_stats else None
  if isinstance(module, nn.modules.dropout._DropoutNd):
    return DROPOUT if module.p > 0 else None
  return None


def _trial_batch(shape, takes_keys):
  count = 1
  for size in shape:
    count *= int(size)
  images = torch.linspace(0.1, 1.0, count).reshape(tuple(int(s) for s in shape))
  keys = torch.arange(int(shape[0]), dtype=torch.int64) if takes_keys else None
  return images, keys


def _trial_forwards(model, shape, takes_keys):
  """Two training forwards under different seeds: (whether the outputs
  differ, the names of the modules whose own buffers the first changed).
  The generator's state, every buffer and the mode are restored after."""
  images, keys = _trial_batch(shape, takes_keys)
  state = torch.random.get_rng_state()
  owners = {}
  for name, module in model.named_modules():
    for buffer_name, buffer in module.named_buffers(recurse=False):
      owners.setdefault(id(buffer), (name, module))
  saved = [(b, b.detach().clone()) for b in model.buffers()]
  was_training = model.training
  try:
    model.train(True)
    outputs, changed = [], []
    with torch.no_grad():
      for seed in (1, 2):
        torch.manual_seed(seed)
        outputs.append(model(images) if keys is None else model(images, keys))
        if seed == 1:
          changed = [owners[id(b)] for b, before in saved
                     if id(b) in owners and not torch.equal(b, before)]
    return not torch.equal(outputs[0], outputs[1]), changed
  finally:
    with torch.no_grad():
      for b, before in saved:
        b.copy_(before)
    model.train(was_training)
    torch.random.set_rng_state(state)


def audit(model: nn.Module, shape=None, takes_keys=False):
  """[(module path, type name, kind)]: each module once, under the first
  name that reaches it ("" is the model); a module in eval mode runs as in
  evaluation and is not listed. By type: batch norm, instance norm with
  running statistics, dropout with p > 0, KeyedDropout (parity-safe). With
  `shape` ([N, C, H, W]), also what two trial training forwards show: a
  module whose own buffers a forward changes (buffer_update), and, when no
  dropout module explains it, a forward that draws from torch's generator
  (F.dropout, torch.rand: kind random, on the model)."""
  found, listed = [], set()
  for name, module in model.named_modules():
    kind = _kind(module) if module.training else None
    if kind is not None:
      found.append((name, type(module).__name__, kind))
      listed.add(id(module))
  if shape is None:
    return found
  random, changed = _trial_forwards(model, shape, takes_keys)
  for name, module in changed:
    if id(module) not in listed and module.training:
      found.append((name, type(module).__name__, BUFFER_UPDATE))
      listed.add(id(module))
  if random and not any(kind == DROPOUT for _, _, kind in found):
    found.append(("", type(model).__name__, RANDOM))
  return found
