"""PyTorch DDP baseline for //bench:scaling: the trainer's model, timed the same way.

Run with Debian's interpreter (the first `python3` on PATH may lack torch):

  /usr/bin/python3 bench/ddp_baseline.py --architecture=cnn --conv-channels=8,16 \
      --hidden-units=32 --world-size=2 --updates=400 --out=ddp.json

What it does, per worker (torch.multiprocessing spawn, even for one worker):
  with two or more workers, worker r pinned to the r-th CPU of the affinity
  mask when there are enough (as the trainer's launcher pins its ranks);
  torch.set_num_threads(1); init_process_group("gloo") on 127.0.0.1;
  the model of model/classifier.cc (cnn: per conv_channels a 3x3 conv with
  padding 1, ReLU, 2x2 max pool; flatten; hidden Linear+ReLU; out Linear.
  mlp: flatten, hidden Linear+ReLU, out. linear: flatten, out) wrapped in
  DistributedDataParallel with its defaults; SGD with momentum; a pool of
  images from which each update selects `--batch-per-rank` random rows per
  rank (index_select, like the trainer's SelectSlots). The pool is the
  trainer's own training receipts when --pool-images/--pool-labels name
  the files //bench:scaling writes (bench/receipt_pool.h: raw float32
  images, raw int64 labels); random noise otherwise (slower in max pooling,
  so not comparable with the trainer for a cnn).

Timing, mirroring artifacts/run_summary_builder.cc: per update the time of
batch select + forward + backward (DDP's all-reduces included) + step; the
first --warmup-updates are dropped; every update's time is the SLOWEST
rank's; examples/s is the median over windows of --window-updates updates
of (examples in the window / seconds in the window).

Gradient synchronisation: DDP overlaps its all-reduces with backward, so
the time they cost an update is not a timer around one call. It is measured
as the difference of medians between the synchronised updates above and
the same number of updates run under `model.no_sync()` right after them
(identical work minus the all-reduces): sync_seconds_per_update =
max(0, median synced update - median no_sync update), sync_share = that /
median synced update. For world size > 1 the script also times bare
`dist.all_reduce` calls on a gradient-sized and on a 1 KiB tensor: the
latency that bounds any reducer on this machine.

Peak RSS per rank: VmHWM of /proc/self/status (the peak resident set of
this process image) of each spawned worker at the end of its run, in MiB.
Not getrusage's ru_maxrss: Linux carries the pre-exec image's peak into it
across fork/spawn + exec, so a spawned worker would report at least its
launcher's RSS (here the parent that imported torch). ru_maxrss is the
fallback where /proc is missing.

Output: one JSON object (keys = fields of DdpBaselineResult in
bench/scaling_report.proto) to --out, or to stdout when --out is empty.
Exit status 2 on bad arguments, 1 if a worker fails.
"""
import argparse
import json
import os
import resource
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

NUM_CLASSES = 4  # data/label_map: the receipt-quality classes.


def int_list(text):
  if not text:
    return []
  try:
    values = [int(v) for v in text.split(",")]
  except ValueError:
    raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
  if any(v < 1 for v in values):
    raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
  return values


def parse_args(argv):
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--architecture", choices=["cnn", "mlp", "linear"], required=True)
  p.add_argument("--conv-channels", type=int_list, default=[])
  p.add_argument("--hidden-units", type=int_list, default=[])
  p.add_argument("--image-size", type=int, default=32)
  p.add_argument("--batch-per-rank", type=int, default=32)
  p.add_argument("--world-size", type=int, default=1)
  p.add_argument("--updates", type=int, required=True,
                 help="synchronised updates, warm-up included")
  p.add_argument("--warmup-updates", type=int, default=2)
  p.add_argument("--window-updates", type=int, default=5)
  p.add_argument("--no-sync-updates", type=int, default=-1,
                 help="compute-only updates under no_sync (-1: as many as --updates)")
  p.add_argument("--learning-rate", type=float, default=0.05)
  p.add_argument("--momentum", type=float, default=0.9)
  p.add_argument("--pool-images", default="",
                 help="receipt pool images (float32, N x S x S); empty: noise")
  p.add_argument("--pool-labels", default="", help="receipt pool labels (int64, N)")
  p.add_argument("--pool-examples", type=int, default=640,
                 help="size of the noise pool when there is no receipt pool")
  p.add_argument("--seed", type=int, default=37)
  p.add_argument("--out", default="")
  p.add_argument("--script-to", default="",
                 help="write the model (seeded by --seed), scripted by torch.jit.script, "
                      "to this file and exit: the benchmark's TorchScript route")
  args = p.parse_args(argv)
  for name in ("image_size", "batch_per_rank", "world_size", "updates",
               "window_updates", "pool_examples"):
    if getattr(args, name) < 1:
      p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
  if args.warmup_updates < 0:
    p.error(f"--warmup-updates must be >= 0, got {args.warmup_updates}")
  if args.architecture == "cnn":
    if not args.conv_channels:
      p.error("--conv-channels: a cnn needs at least one conv layer")
    if args.image_size % (1 << len(args.conv_channels)) != 0:
      p.error(f"--image-size {args.image_size} is not divisible by "
              f"2^{len(args.conv_channels)} (one 2x2 pool per conv layer)")
  if bool(args.pool_images) != bool(args.pool_labels):
    p.error("--pool-images and --pool-labels go together")
  if args.pool_images:
    try:
      args.pool_examples = pool_size(args.pool_images, args.pool_labels, args.image_size)
    except ValueError as e:
      p.error(str(e))
  if args.architecture == "linear" and args.hidden_units:
    p.error("--hidden-units: a linear model has no hidden layers")
  if args.no_sync_updates < 0:
    args.no_sync_updates = args.updates
  return args


def pool_size(images_path, labels_path, image_size):
  """Examples in a receipt pool; ValueError naming the file if inconsistent."""
  sizes = []
  for path, record in ((images_path, 4 * image_size * image_size), (labels_path, 8)):
    try:
      size = os.path.getsize(path)
    except OSError as e:
      raise ValueError(f"{path}: {e.strerror}")
    if size == 0 or size % record != 0:
      raise ValueError(f"{path}: {size} bytes is not a whole number of {record}-byte records")
    sizes.append(size // record)
  if sizes[0] != sizes[1]:
    raise ValueError(f"{images_path} holds {sizes[0]} images of {image_size}x{image_size} "
                     f"but {labels_path} holds {sizes[1]} labels")
  return sizes[0]


def load_pool(args, rank):
  """(images [N, 1, S, S] float32, labels [N] int64)."""
  n, s = args.pool_examples, args.image_size
  if args.pool_images:
    images = torch.from_file(args.pool_images, size=n * s * s, dtype=torch.float32)
    labels = torch.from_file(args.pool_labels, size=n, dtype=torch.int64)
    return images.view(n, 1, s, s).clone(), labels.clone()
  noise = torch.Generator().manual_seed(1000 + rank)
  return (torch.rand(n, 1, s, s, generator=noise),
          torch.randint(0, NUM_CLASSES, (n,), generator=noise))


def build_model(args):
  """The layers of model/classifier.cc, in the same order."""
  layers = []
  features = args.image_size * args.image_size
  if args.architecture == "cnn":
    channels, side = 1, args.image_size
    for c in args.conv_channels:
      layers += [nn.Conv2d(channels, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
      channels, side = c, side // 2
    features = channels * side * side
  layers.append(nn.Flatten())
  if args.architecture != "linear":
    for h in args.hidden_units:
      layers += [nn.Linear(features, h), nn.ReLU()]
      features = h
  layers.append(nn.Linear(features, NUM_CLASSES))
  return nn.Sequential(*layers)


def benchmark_model(architecture, conv_channels=(), hidden_units=(), image_size=32):
  """build_model's layers as a python_module factory: the benchmark's
  Python route trains this very module."""
  return build_model(argparse.Namespace(architecture=architecture,
                                        conv_channels=list(conv_channels),
                                        hidden_units=list(hidden_units),
                                        image_size=image_size))


def slowest_per_update(per_rank):
  return [max(times) for times in zip(*per_rank)]


def window_median_rate(update_seconds, examples_per_update, window):
  """Median over whole windows of examples/second (run_summary_builder.cc)."""
  rates = []
  for start in range(0, len(update_seconds) - window + 1, window):
    seconds = sum(update_seconds[start:start + window])
    if seconds > 0:
      rates.append(window * examples_per_update / seconds)
  return statistics.median(rates) if rates else 0.0


def time_updates(model, optimizer, images, labels, args, count, generator):
  """`count` updates; returns each one's seconds."""
  seconds = []
  n = images.size(0)
  for _ in range(count):
    start = time.perf_counter()
    idx = torch.randint(0, n, (args.batch_per_rank,), generator=generator)
    batch, target = images.index_select(0, idx), labels.index_select(0, idx)
    optimizer.zero_grad(set_to_none=False)
    loss = F.cross_entropy(model(batch), target)
    loss.backward()
    optimizer.step()
    loss.item()
    seconds.append(time.perf_counter() - start)
  return seconds


def peak_rss_mib():
  """This process image's peak resident set (see the module docstring)."""
  try:
    with open("/proc/self/status") as f:
      for line in f:
        if line.startswith("VmHWM:"):
          return int(line.split()[1]) / 1024.0  # kB
  except OSError:
    pass
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def median_allreduce_seconds(numel, repeats=30):
  tensor = torch.ones(numel)
  for _ in range(3):
    dist.all_reduce(tensor)
  seconds = []
  for _ in range(repeats):
    start = time.perf_counter()
    dist.all_reduce(tensor)
    seconds.append(time.perf_counter() - start)
  return statistics.median(seconds)


def pin_rank(rank, world_size):
  """Rank r on the r-th CPU of this process's affinity mask, as the trainer's
  local launcher pins its ranks (runtime/cpu_pinning.h): only with two or
  more ranks and at least as many CPUs as ranks. Returns the CPU or None."""
  cpus = sorted(os.sched_getaffinity(0))
  if world_size < 2 or len(cpus) < world_size:
    return None
  os.sched_setaffinity(0, {cpus[rank]})
  return cpus[rank]


def worker(rank, args, port, result_path):
  cpu = pin_rank(rank, args.world_size)
  print(f"rank {rank}: " + (f"pinned to CPU {cpu}" if cpu is not None else "not pinned"),
        flush=True)
  torch.set_num_threads(1)
  dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                          rank=rank, world_size=args.world_size)
  torch.manual_seed(args.seed)
  model = DistributedDataParallel(build_model(args))
  optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate,
                              momentum=args.momentum)
  images, labels = load_pool(args, rank)
  pick = torch.Generator().manual_seed(2000 + rank)

  synced = time_updates(model, optimizer, images, labels, args, args.updates, pick)
  dist.barrier()
  with model.no_sync():
    compute_only = time_updates(model, optimizer, images, labels, args,
                                args.no_sync_updates, pick)
  dist.barrier()
  gradient_allreduce = small_allreduce = 0.0
  if args.world_size > 1:
    numel = sum(p.numel() for p in model.parameters())
    gradient_allreduce = median_allreduce_seconds(numel)
    small_allreduce = median_allreduce_seconds(256)  # 1 KiB of float32
  rss_mib = peak_rss_mib()

  mine = {"synced": synced, "compute_only": compute_only, "rss": rss_mib,
          "gradient_allreduce": gradient_allreduce, "small_allreduce": small_allreduce}
  gathered = [None] * args.world_size
  dist.all_gather_object(gathered, mine)
  parameter_count = sum(p.numel() for p in model.parameters())
  # The DDP wrapper holds the process group: release it before the group.
  del model, optimizer
  dist.barrier()
  if rank != 0:
    exit_now()

  warm = args.warmup_updates
  synced = slowest_per_update([g["synced"] for g in gathered])[warm:]
  compute_only = slowest_per_update([g["compute_only"] for g in gathered])[warm:]
  examples = args.batch_per_rank * args.world_size
  median_update = statistics.median(synced) if synced else 0.0
  median_compute = statistics.median(compute_only) if compute_only else 0.0
  sync = max(0.0, median_update - median_compute)
  result = {
      "system": "pytorch_ddp",
      "torch_version": torch.__version__,
      "world_size": args.world_size,
      "batch_per_rank": args.batch_per_rank,
      "parameter_count": parameter_count,
      "updates": args.updates,
      "warmup_updates": warm,
      "window_updates": args.window_updates,
      "examples_per_second": window_median_rate(synced, examples, args.window_updates),
      "median_update_seconds": median_update,
      "median_compute_only_update_seconds": median_compute,
      "sync_seconds_per_update": sync,
      "sync_share": sync / median_update if median_update > 0 else 0.0,
      "peak_rss_mib": [g["rss"] for g in gathered],
      "allreduce_seconds_gradient": max(g["gradient_allreduce"] for g in gathered),
      "allreduce_seconds_1kib": max(g["small_allreduce"] for g in gathered),
  }
  with open(result_path, "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
  exit_now()


def exit_now():
  """Ends a worker whose work is done without tearing down the process group
  and the interpreter: that teardown is where torch 2.11's DDP workers abort
  now and then ("terminate called without an active exception"; a failed
  smoke test's attempt had already written its result file). Every figure is
  measured, gathered and written by then."""
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(0)


def free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def main(argv):
  args = parse_args(argv)
  if args.script_to:
    torch.manual_seed(args.seed)
    torch.jit.save(torch.jit.script(build_model(args)), args.script_to)
    return 0
  out = args.out or os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                 f"ddp_baseline_{os.getpid()}.json")
  try:
    mp.spawn(worker, args=(args, free_port(), out), nprocs=args.world_size, join=True)
  except Exception as e:  # a worker's failure, re-raised by spawn
    print(f"error: a DDP worker failed: {e}", file=sys.stderr)
    return 1
  if not args.out:
    with open(out) as f:
      sys.stdout.write(f.read())
    os.remove(out)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
