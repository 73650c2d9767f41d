"""receipt_parity_layers.py outside the trainer (a team's own Python code
and tests): SyncBatchNorm2d is a BatchNorm2d with eps 1e-5 and momentum
0.1; sync_batch_norms checks the layers' numbering against a trial
forward and refuses what the harness's passes could not run; KeyedDropout
masks an example by its key alone; audit restores what it touches.

Argument: receipt_parity_layers.py.
"""
import os
import sys
import unittest

LAYERS_DIR = os.path.dirname(os.path.abspath(sys.argv.pop(1)))
sys.path.insert(0, LAYERS_DIR)

import torch  # pylint: disable=g-import-not-at-top
from torch import nn  # pylint: disable=g-import-not-at-top

import receipt_parity_layers as layers  # pylint: disable=g-import-not-at-top


def net(order=(0, 1), reach_both=True):
  """conv, norm, conv, norm, head; norms numbered by `order`."""

  class Net(nn.Module):

    def __init__(self):
      super().__init__()
      self.conv0 = nn.Conv2d(1, 2, 3, padding=1)
      self.norm0 = layers.SyncBatchNorm2d(2, order[0])
      self.conv1 = nn.Conv2d(2, 3, 3, padding=1)
      self.norm1 = layers.SyncBatchNorm2d(3, order[1])
      self.head = nn.Linear(3 * 4 * 4, 4)

    def forward(self, images):
      x = self.norm0(self.conv0(images))
      if reach_both:
        x = self.norm1(self.conv1(x))
      else:
        x = self.conv1(x)
      return self.head(x.flatten(1))

  torch.manual_seed(3)
  return Net()


class SyncBatchNorm2dOutsideTheTrainerTest(unittest.TestCase):

  def test_it_trains_and_evaluates_as_torch_batch_norm(self):
    torch.manual_seed(1)
    ours, theirs = layers.SyncBatchNorm2d(3, 0), nn.BatchNorm2d(3)
    with torch.no_grad():
      for m in (ours, theirs):
        m.weight.copy_(torch.tensor([0.5, 1.5, -2.0]))
        m.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    for step in range(3):
      x = torch.randn(5, 3, 4, 4) * (step + 1) + step
      xs = [x.clone().requires_grad_(True) for _ in range(2)]
      outs = [ours(xs[0]), theirs(xs[1])]
      torch.testing.assert_close(outs[0], outs[1], rtol=1e-5, atol=1e-5)
      for out in outs:
        (out * torch.arange(out.numel()).reshape(out.shape)).sum().backward()
      torch.testing.assert_close(xs[0].grad, xs[1].grad, rtol=1e-4, atol=1e-4)
      torch.testing.assert_close(ours.weight.grad, theirs.weight.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ours.running_mean, theirs.running_mean)
    torch.testing.assert_close(ours.running_var, theirs.running_var)
    self.assertEqual(int(ours.num_batches_tracked), 3)
    ours.eval()
    theirs.eval()
    x = torch.randn(2, 3, 4, 4)
    torch.testing.assert_close(ours(x), theirs(x), rtol=1e-5, atol=1e-5)
    self.assertEqual(sorted(n for n, _ in ours.named_buffers()),
                     sorted(n for n, _ in theirs.named_buffers()))

  def test_bad_arguments_and_inputs_are_refused(self):
    for args in ((0, 0), (2.5, 0), (True, 0), (2, -1), (2, "0")):
      with self.assertRaises(ValueError):
        layers.SyncBatchNorm2d(*args)
    with self.assertRaisesRegex(ValueError, r"expected \[N, 3, H, W\], got \[2, 4, 1, 1\]"):
      layers.SyncBatchNorm2d(3, 0)(torch.zeros(2, 4, 1, 1))


class SyncBatchNormsTest(unittest.TestCase):
  SHAPE = [2, 1, 4, 4]

  def test_layers_in_forward_order_are_returned_and_nothing_changes(self):
    model = net()
    model.norm1.eval()
    before = [b.clone() for b in model.buffers()]
    state = torch.random.get_rng_state()
    self.assertEqual(layers.sync_batch_norms(model, self.SHAPE), [("norm0", 0), ("norm1", 1)])
    for b, saved in zip(model.buffers(), before):
      self.assertTrue(torch.equal(b, saved))
    self.assertTrue(torch.equal(torch.random.get_rng_state(), state))
    self.assertTrue(model.training)
    self.assertFalse(model.norm1.training)

  def test_a_model_without_them_gives_none(self):
    self.assertEqual(layers.sync_batch_norms(nn.Linear(2, 2), [2, 2]), [])

  def test_numbers_out_of_forward_order_are_refused(self):
    with self.assertRaisesRegex(ValueError, r"reaches norm0 \(layer=1\), norm1 \(layer=0\)"):
      layers.sync_batch_norms(net(order=(1, 0)), self.SHAPE)
    with self.assertRaisesRegex(ValueError, r"reaches norm0 \(layer=0\), norm1 \(layer=2\)"):
      layers.sync_batch_norms(net(order=(0, 2)), self.SHAPE)

  def test_a_layer_forward_never_reaches_is_refused(self):
    with self.assertRaisesRegex(ValueError, r"never reaches norm1 \(layer=1\)"):
      layers.sync_batch_norms(net(reach_both=False), self.SHAPE)

  def test_a_layer_reached_twice_is_refused(self):
    norm = layers.SyncBatchNorm2d(1, 0)
    model = nn.Sequential(norm, norm)
    with self.assertRaisesRegex(ValueError, r"reaches 0 \(layer=0\), 0 \(layer=0\)"):
      layers.sync_batch_norms(model, [2, 1, 2, 2])


class AuditTest(unittest.TestCase):

  def test_sync_batch_norms_are_listed_parity_safe_and_modes_are_kept(self):
    model = net()
    frozen = nn.BatchNorm2d(1).eval()
    model.frozen = frozen
    found = layers.audit(model, [2, 1, 4, 4])
    self.assertEqual(found, [("norm0", "SyncBatchNorm2d", layers.SYNC_BATCH_NORM),
                             ("norm1", "SyncBatchNorm2d", layers.SYNC_BATCH_NORM)])
    self.assertFalse(frozen.training)
    self.assertTrue(model.training)

  def test_torch_batch_norm_is_named(self):
    model = nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2))
    self.assertEqual(layers.audit(model, [2, 1, 2, 2]),
                     [("1", "BatchNorm2d", layers.BATCH_NORM_TRAINING)])


class KeyedDropoutTest(unittest.TestCase):

  def test_an_examples_mask_depends_on_its_key_not_its_position(self):
    dropout = layers.KeyedDropout(0.5, layer=2)
    x = torch.ones(3, 64)
    keys = torch.tensor([11, 12, 13])
    out = dropout(x, keys)
    swapped = dropout(x[[2, 0, 1]], keys[[2, 0, 1]])
    self.assertTrue(torch.equal(out[[2, 0, 1]], swapped))
    self.assertFalse(torch.equal(out[0], out[1]))
    dropout.eval()
    self.assertTrue(torch.equal(dropout(x, keys), x))


TEAM_MODEL = """
import torch
from torch import nn
from receipt_parity_layers import KeyedDropout, SyncBatchNorm2d


class TeamNet(nn.Module):

  def __init__(self):
    super().__init__()
    self.conv = nn.Conv2d(1, 2, 3, padding=1)
    self.norm = SyncBatchNorm2d(2, 0)
    self.drop = KeyedDropout(0.5, 0)
    self.head = nn.Linear(2 * 4 * 4, 4)

  def forward(self, images, keys):
    return self.head(self.drop(self.norm(self.conv(images)).flatten(1), keys))
"""


class OutsideTheTrainerTest(unittest.TestCase):
  """docs/layers.md, "Outside the trainer": a team's module that imports
  the layers runs in the team's own scripts and tests with the folder of
  receipt_parity_layers.py (model/ of a checkout) on PYTHONPATH, and fails
  to import without it."""

  def run_team_script(self, pythonpath):
    import subprocess  # pylint: disable=g-import-not-at-top
    import tempfile  # pylint: disable=g-import-not-at-top
    folder = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    with open(os.path.join(folder, "team_model.py"), "w") as f:
      f.write(TEAM_MODEL)
    env = dict(os.environ, PYTHONPATH=pythonpath)
    script = ("import torch, team_model\n"
              "net = team_model.TeamNet().train()\n"
              "out = net(torch.ones(3, 1, 4, 4), torch.arange(3))\n"
              "print(tuple(out.shape))\n")
    return subprocess.run([sys.executable, "-c", script], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)

  def test_a_team_module_imports_with_the_layers_folder_on_pythonpath(self):
    ran = self.run_team_script(LAYERS_DIR)
    self.assertEqual(ran.returncode, 0, ran.stderr[-2000:])
    self.assertEqual(ran.stdout.strip(), "(3, 4)")
    missing = self.run_team_script("")
    self.assertNotEqual(missing.returncode, 0)
    self.assertIn("No module named 'receipt_parity_layers'", missing.stderr)


if __name__ == "__main__":
  unittest.main()
