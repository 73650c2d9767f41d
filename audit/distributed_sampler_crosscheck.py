"""Cross-checks //samplers:audit against the real DistributedSampler.

Runs the audit binary for several (n, world size, seed, epochs, shuffle)
cases and each built-in policy, and compares every epoch's indices rank by
rank with torch.utils.data.DistributedSampler (the project's torch 2.11)
after set_epoch(epoch):
  duplicate_pad == DistributedSampler(drop_last=False), every slot valid;
  masked_tail   == the same indices, valid exactly for global positions < n;
  drop_tail     == DistributedSampler(drop_last=True), and the dropped
                   indices are the permutation's cut tail.
Every case runs twice: the per-slot record in the JSON, and in the side file
of a large audit (--slots_file_above=-1; samplers/audit_slots_file.h), read
back here with struct and checked against its JSON's size and CRC-32. One
case is above the default threshold.
Exits 1 on any mismatch. Run with the Python of the project's LibTorch (@libtorch//:python).

Usage: distributed_sampler_crosscheck.py PATH_TO_AUDIT
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import torch
from torch.utils.data import DistributedSampler

# (num_ids, world_size, seed, epochs, shuffle)
CASES = [
    (47, 3, 0, 2, True),
    (47, 3, 1234, 3, True),
    (48, 4, 9, 2, True),
    (1000, 8, 42, 2, True),
    (100, 7, 2**33 + 7, 2, True),
    (2, 5, 7, 2, True),  # fewer examples than ranks: padding wraps
    (1, 4, 3, 1, True),
    (0, 3, 5, 1, True),  # empty dataset
    (10, 3, 0, 2, False),
    (3, 8, 0, 1, False),
    (200003, 8, 5, 1, True),  # above --slots_file_above: the side file
]
DROP_LAST = {"duplicate_pad": False, "masked_tail": False, "drop_tail": True}


def read_slots(folder, data):
    """The side file of a large audit (samplers/audit_slots_file.h), checked
    against its JSON, into the JSON's ranks' indices and valid lists."""
    with open(os.path.join(folder, data["slots_file"]), "rb") as f:
        raw = f.read()
    assert len(raw) == data["slots_file_bytes"], (len(raw), data["slots_file_bytes"])
    assert "crc32:%08x" % zlib.crc32(raw) == data["slots_file_checksum"]
    magic, version, world, epochs, micro, num_ids, seed = struct.unpack_from(
        "<8sIIIIQQ", raw, 0)
    assert (magic, version) == (b"RPSLOTS1", 1), (magic, version)
    assert (world, epochs, num_ids, str(seed)) == (
        data["world_size"], len(data["epochs"]), data["num_ids"], data["seed_exact"])
    at = 40
    for e in range(epochs):
        for r in range(world):
            epoch, rank, n = struct.unpack_from("<IIQ", raw, at)
            assert (epoch, rank) == (e, r), (epoch, rank, e, r)
            at += 16
            indices = list(struct.unpack_from("<%di" % n, raw, at))
            at += 4 * n
            bits = raw[at:at + (n + 7) // 8]
            at += (n + 7) // 8 + (n if micro > 1 else 0)
            have = data["epochs"][e]["ranks"][r]
            assert not have["indices"], "a large audit's JSON lists no slots"
            have["indices"] = indices
            have["valid"] = [bool(bits[j // 8] >> (j % 8) & 1) for j in range(n)]
    assert at == len(raw), (at, len(raw))


def run_audit(audit, out, n, world, seed, epochs, shuffle, policy, side_file):
    args = [audit, f"--num_ids={n}", f"--world_size={world}",
            f"--seed={seed}", f"--epochs={epochs}", f"--policy={policy}",
            f"--out={out}"]
    if not shuffle:
        args.append("--no_shuffle")
    if side_file:
        args.append("--slots_file_above=-1")  # every size, 0 ids too
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        data = json.load(f)
    if data["slots_file"]:
        read_slots(os.path.dirname(out), data)
    return data


def permutation(n, seed, epoch, shuffle):
    if not shuffle:
        return list(range(n))
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    return torch.randperm(n, generator=g).tolist()


def check_case(audit, tmp, case, policy, side_file):
    """Returns a list of mismatch descriptions."""
    n, world, seed, epochs, shuffle = case
    drop_last = DROP_LAST[policy]
    label = (f"{policy} n={n} world={world} seed={seed} shuffle={shuffle} "
             f"side_file={side_file}")
    data = run_audit(audit, os.path.join(tmp, "audit.json"), n, world, seed,
                     epochs, shuffle, policy, side_file)
    if side_file and not data["slots_file"]:
        return [f"{label}: no side file"]
    errors = []
    if (data["num_ids"], data["world_size"], data["policy"]) != (
            n, world, policy) or data["seed_exact"] != str(seed):
        errors.append(f"{label}: header {data['num_ids']} "
                      f"{data['world_size']} {data['policy']} "
                      f"{data['seed_exact']}")
    if len(data["epochs"]) != epochs:
        return errors + [f"{label}: {len(data['epochs'])} epochs"]
    for epoch, got in enumerate(data["epochs"]):
        where = f"{label} epoch {epoch}"
        if not got["ranks_agree"]:
            errors.append(f"{where}: ranks disagree")
        for rank in range(world):
            sampler = DistributedSampler(range(n), num_replicas=world,
                                         rank=rank, shuffle=shuffle,
                                         seed=seed, drop_last=drop_last)
            sampler.set_epoch(epoch)
            want = list(sampler)
            have = got["ranks"][rank]
            if have["indices"] != want:
                errors.append(f"{where} rank {rank}: audit "
                              f"{have['indices'][:12]}... != torch "
                              f"{want[:12]}...")
            want_valid = [policy != "masked_tail" or k * world + rank < n
                          for k in range(len(want))]
            if have["valid"] != want_valid:
                errors.append(f"{where} rank {rank}: valid flags "
                              f"{have['valid']} != {want_valid}")
        order = permutation(n, seed, epoch, shuffle)
        kept = len(sampler) * world
        want_dropped = order[kept:] if drop_last else []
        if got["dropped_indices"] != want_dropped:
            errors.append(f"{where}: dropped {got['dropped_indices']} != "
                          f"{want_dropped}")
    return errors


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    audit = sys.argv[1]
    errors = []
    checked = 0
    with tempfile.TemporaryDirectory(
            dir=os.environ.get("TEST_TMPDIR")) as tmp:
        for case in CASES:
            for policy in DROP_LAST:
                # Every case in the JSON alone and with the side file.
                for side_file in (False, True):
                    errors += check_case(audit, tmp, case, policy, side_file)
                    checked += 1
    for error in errors:
        print("MISMATCH", error)
    print(f"{checked} audits against torch {torch.__version__} "
          f"DistributedSampler: {len(errors)} mismatches")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
