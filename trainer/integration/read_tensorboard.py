"""Prints the TensorBoard curves of a folder as TensorBoard itself reads them.

Usage: PYTHON read_tensorboard.py DIR            (PYTHON: the project's venv)
  {"scalars": {TAG: [[step, wall_time, value], ...]},
   "files": {NAME: [{"step", "wall_time", "tag" | "session_log" | "file_version", "value"}]}}

"scalars" is TensorBoard's EventAccumulator over DIR, its default
purge_orphaned_data on (what the TensorBoard UI shows); "files" is each
event file's raw events, by TensorBoard's EventFileLoader.
"""
import json
import os
import sys

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.backend.event_processing import event_file_loader


def raw_events(path):
  events = []
  for event in event_file_loader.EventFileLoader(path).Load():
    entry = {"step": event.step, "wall_time": event.wall_time}
    kind = event.WhichOneof("what")
    if kind == "file_version":
      entry["file_version"] = event.file_version
    elif kind == "session_log":
      entry["session_log"] = int(event.session_log.status)
    elif kind == "summary":
      for value in event.summary.value:
        entry["tag"] = value.tag
        # EventFileLoader turns simple_value into a tensor (data compat).
        entry["value"] = (value.simple_value if value.HasField("simple_value")
                          else float(value.tensor.float_val[0]))
    events.append(entry)
  return events


def main(folder):
  accumulator = event_accumulator.EventAccumulator(
      folder, size_guidance={event_accumulator.SCALARS: 0})
  accumulator.Reload()
  scalars = {tag: [[e.step, e.wall_time, e.value] for e in accumulator.Scalars(tag)]
             for tag in accumulator.Tags()["scalars"]}
  files = {name: raw_events(os.path.join(folder, name))
           for name in sorted(os.listdir(folder)) if "tfevents" in name}
  json.dump({"scalars": scalars, "files": files}, sys.stdout)


if __name__ == "__main__":
  main(sys.argv[1])
