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

SyncBatchNorm2d(num_features, layer) is the harness's synchronized batch
norm (model/sync_batch_norm.h): in a training update it normalizes by the
statistics of the whole update's accepted examples, on every rank and in
every micro-batch, so its output, its gradient and its running statistics
are the one-worker reference's. `layer` numbers the model's
SyncBatchNorm2d layers 0, 1, ... in the order forward reaches them; the
trainer checks the numbering when it builds the module and runs each
layer's training forward in C++ (the update's passes). Outside the trainer
(a team's own Python code) it is a BatchNorm2d with eps 1e-5 and momentum
0.1.

audit(module) is what the trainer's layer audit reads (docs/layers.md): one
(module path, type, kind) per submodule that breaks parity, by the
module's type, in training mode only, and the kinds of model/layer_audit.h.
"""
import contextlib

import torch
from torch import nn

# The finding kinds of model/layer_audit.h; stable.
BATCH_NORM_TRAINING = "batch_norm_training"
INSTANCE_NORM_RUNNING_STATS = "instance_norm_running_stats"
DROPOUT = "dropout"
RANDOM = "random"
BUFFER_UPDATE = "buffer_update"
KEYED_DROPOUT = "keyed_dropout"
SYNC_BATCH_NORM = "sync_batch_norm"


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


class SyncBatchNorm2d(nn.Module):
  """Synchronized batch norm over [N, C, H, W] (see the module's text)."""

  eps = 1e-5
  momentum = 0.1

  def __init__(self, num_features: int, layer: int):
    super().__init__()
    if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features < 1:
      raise ValueError("SyncBatchNorm2d: num_features must be a positive int, not %r"
                       % (num_features,))
    if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
      raise ValueError("SyncBatchNorm2d: layer must be an int >= 0, not %r" % (layer,))
    self.num_features = num_features
    self.layer = layer
    self.weight = nn.Parameter(torch.ones(num_features))
    self.bias = nn.Parameter(torch.zeros(num_features))
    self.register_buffer("running_mean", torch.zeros(num_features))
    self.register_buffer("running_var", torch.ones(num_features))
    self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
    # Set by the trainer: the harness's layer over these same tensors.
    self._harness_forward = None

  def _normalize(self, x, mean, var):
    scale = self.weight * torch.rsqrt(var + self.eps)
    return (x - mean.view(1, -1, 1, 1)) * scale.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)

  def forward(self, x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 4 or x.shape[1] != self.num_features:
      raise ValueError("SyncBatchNorm2d(layer=%d): expected [N, %d, H, W], got %s"
                       % (self.layer, self.num_features, list(x.shape)))
    # Under autocast a convolution hands on bfloat16: normalized in the
    # layer's own dtype, as the harness's layer does.
    x = x.to(self.weight.dtype)
    if not self.training:
      return self._normalize(x, self.running_mean, self.running_var)
    if self._harness_forward is not None:
      return self._harness_forward(x)
    mean = x.mean(dim=(0, 2, 3))
    var = x.var(dim=(0, 2, 3), unbiased=False)
    count = x.numel() // x.shape[1]
    with torch.no_grad():
      unbiased = var * (count / (count - 1)) if count > 1 else var
      self.running_mean.mul_(1 - self.momentum).add_(mean.detach() * self.momentum)
      self.running_var.mul_(1 - self.momentum).add_(unbiased.detach() * self.momentum)
      self.num_batches_tracked.add_(1)
    return self._normalize(x, mean, var)

  def extra_repr(self) -> str:
    return "%d, layer=%d" % (self.num_features, self.layer)


def _kind(module: nn.Module):
  """The finding kind of one module by its type, or None."""
  if isinstance(module, KeyedDropout):
    return KEYED_DROPOUT if module.p > 0 else None
  if isinstance(module, SyncBatchNorm2d):
    return SYNC_BATCH_NORM
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


@contextlib.contextmanager
def _state_kept(model):
  """Runs the block with the generator's state, every buffer and every
  module's mode restored after; yields the buffers' saved copies."""
  state = torch.random.get_rng_state()
  saved = [(b, b.detach().clone()) for b in model.buffers()]
  modes = [(m, m.training) for m in model.modules()]
  try:
    yield saved
  finally:
    with torch.no_grad():
      for b, before in saved:
        b.copy_(before)
    for m, training in modes:
      m.training = training
    torch.random.set_rng_state(state)


def _trial_forwards(model, shape, takes_keys):
  """Two training forwards under different seeds: (whether the outputs
  differ, the names of the modules whose own buffers the first changed).
  The generator's state, every buffer and the modes are restored after."""
  images, keys = _trial_batch(shape, takes_keys)
  owners = {}
  for name, module in model.named_modules():
    for buffer_name, buffer in module.named_buffers(recurse=False):
      owners.setdefault(id(buffer), (name, module))
  with _state_kept(model) as saved:
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


def sync_batch_norms(model: nn.Module, shape, takes_keys=False):
  """[(module path, layer)]: the model's SyncBatchNorm2d layers in the
  order a trial training forward of a `shape` batch reaches them, once it
  shows they are numbered 0..n-1 in that order, each reached once (the
  order the harness's update passes run them in); ValueError naming the
  modules otherwise. The generator's state, every buffer and every
  module's mode are restored after."""
  names = {}
  for name, module in model.named_modules():
    if isinstance(module, SyncBatchNorm2d):
      names.setdefault(id(module), name)
  if not names:
    return []
  layers = [m for m in model.modules() if isinstance(m, SyncBatchNorm2d)]
  reached = []
  hooks = [m.register_forward_pre_hook(lambda m, args: reached.append(m)) for m in layers]
  images, keys = _trial_batch(shape, takes_keys)
  try:
    with _state_kept(model), torch.no_grad():
      model.train(True)
      if keys is None:
        model(images)
      else:
        model(images, keys)
  finally:
    for hook in hooks:
      hook.remove()

  def described(modules):
    return ", ".join("%s (layer=%d)" % (names[id(m)], m.layer) for m in modules)

  rule = ("SyncBatchNorm2d layers must be numbered 0, 1, ... in the order forward "
          "reaches them, each reached once")
  never = [m for m in layers if all(m is not r for r in reached)]
  if never:
    raise ValueError("%s; a training forward never reaches %s" % (rule, described(never)))
  if [m.layer for m in reached] != list(range(len(layers))):
    raise ValueError("%s; a training forward reaches %s" % (rule, described(reached)))
  return [(names[id(m)], m.layer) for m in reached]


def audit(model: nn.Module, shape=None, takes_keys=False):
  """[(module path, type name, kind)]: each module once, under the first
  name that reaches it ("" is the model); a module in eval mode runs as in
  evaluation and is not listed. By type: batch norm, instance norm with
  running statistics, dropout with p > 0, KeyedDropout and SyncBatchNorm2d
  (parity-safe). With
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
