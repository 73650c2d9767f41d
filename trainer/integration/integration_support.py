"""Shared by the trainer's integration tests: run the REAL train binary.

The first command-line argument of every test is the path of //trainer:train.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

TRAIN = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None

# Small, fast data and model; every test adds what it varies.
SMALL = """
data {{
  synthetic {{ num_identities: {ids} rare_class_fraction: 0.05 seed: 3 }}
  views_per_identity: {views}
  validation_fraction: {val}
  split_seed: 5
  augmentation_seed: 7
  image_size: 16
}}
model {{ {model} }}
optimizer {{ sgd {{ learning_rate: 0.05 momentum: 0.9 }} }}
seeds {{ model_init: 37 sampler: 99 }}
global_batch: {batch}
world_size: {world}
epochs: {epochs}
sampler {{ name: "{sampler}" }}
loss_weighting {{ name: "{weighting}" }}
reducer {{ name: "{reducer}"{reducer_options} }}
metric_dedup {{ name: "{dedup}" }}
run {{ collective_timeout_seconds: 30 log_every_updates: 1000 {run_extra} }}
{extra}
"""


def small_config(ids=40, views=1, val=0.25, batch=4, world=1, epochs=1,
                 sampler="masked_tail", weighting="global_count",
                 reducer="allreduce_sum", dedup="by_receipt_id", run_extra="",
                 reducer_options="",
                 extra="",
                 model='architecture: "cnn" conv_channels: [4] hidden_units: [8]'):
  if reducer_options:
    reducer_options = " " + reducer_options
  return SMALL.format(**locals())


def temp_dir(prefix):
  return tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("TEST_TMPDIR"))


def write(path, text):
  with open(path, "w") as f:
    f.write(text)
  return path


def write_config(folder, name, text):
  """FOLDER/NAME.pbtxt holding `text`; returns its path."""
  return write(os.path.join(folder, name + ".pbtxt"), text)


def train(config_path, out, *flags):
  """//trainer:train --config=CONFIG_PATH --out=OUT FLAGS..."""
  return run_train("--config=" + config_path, "--out=" + out, *flags)


def stopped_and_resumed(folder, text, stop_at, total):
  """Trains config `text` (with checkpoints) to `total` updates at once into
  FOLDER/whole, and to `stop_at` then again to `total` into FOLDER/part.
  Returns (whole_out, part_out, the three results in that order)."""
  def limited(name, updates):
    return write_config(folder, name, text.replace(
        "log_every_updates: 1000", "log_every_updates: 1000 max_updates: %d" % updates))
  whole, part = limited("whole", total), limited("part", stop_at)
  whole_out, part_out = os.path.join(folder, "whole"), os.path.join(folder, "part")
  results = (train(whole, whole_out), train(part, part_out), train(whole, part_out))
  return whole_out, part_out, results


def run_train(*args, env=None, timeout=240):
  return run_train_binary(TRAIN, *args, env=env, timeout=timeout)


def run_train_binary(binary, *args, env=None, timeout=240):
  """`binary` (a build of train_main.cc) as run_train runs //trainer:train."""
  merged = dict(os.environ)
  for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
    merged.pop(key, None)
  merged.update(env or {})
  return subprocess.run([binary, *args], capture_output=True, text=True,
                        env=merged, timeout=timeout)


def example_tree(prefix, config, library, *more_libraries):
  """A workspace-like folder holding a shipped example config and its .so
  files where the config's relative plugin_library entries say:
  TMP/examples/plugins/<config> and TMP/bazel-bin/examples/plugins/<library>.
  Returns (TMP, the config's path, the (first) library's path)."""
  tmp = os.path.realpath(temp_dir(prefix))
  config_copy = os.path.join(tmp, "examples", "plugins", os.path.basename(config))
  copies = [(config, config_copy)]
  for so in (library,) + more_libraries:
    copies.append((so, os.path.join(tmp, "bazel-bin", "examples", "plugins",
                                    os.path.basename(so))))
  for source, target in copies:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy(source, target)
  return tmp, config_copy, copies[1][1]


def load(path):
  with open(path) as f:
    return json.load(f)


def free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]

def rank_pids(launcher):
  """RANK -> pid of `launcher`'s worker processes."""
  pids = {}
  for entry in os.listdir("/proc"):
    if not entry.isdigit():
      continue
    try:
      with open("/proc/%s/stat" % entry) as f:
        parent = int(f.read().rsplit(")", 1)[1].split()[1])
      if parent != launcher:
        continue
      with open("/proc/%s/environ" % entry, "rb") as f:
        for item in f.read().split(b"\0"):
          if item.startswith(b"RANK="):
            pids[int(item[5:])] = int(entry)
    except (OSError, ValueError, IndexError):
      pass
  return pids


def final_hash(out):
  """The final parameter hash of the run in `out` (run_summary.json)."""
  return load(os.path.join(out, "run_summary.json"))["final_parameter_hash"]
