#!/bin/bash
# //samplers:audit from the command line: every kind of bad flag gets a
# message naming it and exit 2; a good run writes the JSON and the summary.
# Usage: audit_cli_test.sh PATH_TO_AUDIT
set -uo pipefail

AUDIT="$1"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
OUT="$TMP/audit.json"
failures=0

fail() {
  echo "FAIL $*"
  failures=$((failures + 1))
}

# expect_exit CODE DESCRIPTION NEEDLE ARGS...: exit CODE, NEEDLE on stderr.
expect_exit() {
  local want="$1" what="$2" needle="$3"
  shift 3
  local err rc
  err=$("$AUDIT" "$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne $want ]]; then
    fail "$what: exit $rc, want $want; stderr: $err"
  elif [[ "$err" != *"$needle"* ]]; then
    fail "$what: stderr lacks '$needle': $err"
  else
    echo "ok   $what"
  fi
}

GOOD=(--num_ids=5 --world_size=2 --policy=masked_tail --out="$OUT")
expect_exit 2 "negative num_ids" "--num_ids=-3" "${GOOD[@]}" --num_ids=-3
expect_exit 2 "missing num_ids" "--num_ids" --world_size=2 \
  --policy=masked_tail --out="$OUT"
expect_exit 2 "world_size 0" "--world_size=0" "${GOOD[@]}" --world_size=0
expect_exit 2 "epochs 0" "--epochs=0" "${GOOD[@]}" --epochs=0
expect_exit 2 "missing out" "--out" --num_ids=5 --world_size=2 \
  --policy=masked_tail
expect_exit 2 "unknown policy" \
  "no sampler_policy plugin named 'nope'; registered: drop_tail, duplicate_pad, global_batches, masked_tail" \
  "${GOOD[@]}" --policy=nope
expect_exit 2 "missing policy" "registered: drop_tail, duplicate_pad" \
  --num_ids=5 --world_size=2 --out="$OUT"
expect_exit 2 "local batch count" "have 1 entries; world_size is 2" \
  "${GOOD[@]}" --local_batch_sizes=3
expect_exit 2 "local batch not a number" "'x' is not an integer" \
  "${GOOD[@]}" --local_batch_sizes=x,1
expect_exit 2 "negative local batch" "rank 1 is -1" \
  "${GOOD[@]}" --local_batch_sizes=1,-1
expect_exit 2 "extra argument" "unexpected argument 'stray'" \
  "${GOOD[@]}" stray
expect_exit 1 "unwritable out" "cannot write" \
  --num_ids=5 --world_size=2 --policy=masked_tail --out="$TMP/no/such/dir/a.json"
[[ -e "$OUT" ]] && fail "a rejected run wrote $OUT"

# A good run: summary on stdout, log on stderr, JSON in --out.
if "$AUDIT" --num_ids=47 --world_size=3 --seed=5 --epochs=2 \
    --policy=masked_tail --out="$OUT" >"$TMP/summary" 2>"$TMP/log"; then
  grep -q "^epoch 1: 48 slots for 47 ids: 1 masked slot (rank 2 slot 15), no id twice$" \
    "$TMP/summary" || fail "summary: $(cat "$TMP/summary")"
  grep -q "wrote $OUT" "$TMP/log" || fail "log: $(cat "$TMP/log")"
  /usr/bin/python3 - "$OUT" <<'PY' || fail "JSON shape"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["num_ids"], d["world_size"], d["seed"], d["policy"]) == (
    47, 3, 5, "masked_tail"), d
assert d["epoch_orders_differ"] is True
for e, epoch in enumerate(d["epochs"]):
    assert epoch["epoch"] == e and epoch["ranks_agree"] is True
    assert epoch["masked_slots"] == [{"rank": 2, "slot": 15}], epoch
    assert epoch["duplicated_ids"] == [] and epoch["never_seen"] == []
    assert epoch["unique_ids"] == 47 and epoch["dropped_ids"] == []
    for r, rank in enumerate(epoch["ranks"]):
        assert rank["rank"] == r and len(rank["indices"]) == 16
        assert rank["receipt_ids"] == [str(i) for i in rank["indices"]]
        assert len(rank["valid"]) == 16
PY
else
  fail "good run: $(cat "$TMP/log")"
fi

# A large audit: the slots in OUT's side file (audit.slots), the JSON the
# summary with the same keys; --slots_file_above=0 makes 47 ids large.
if "$AUDIT" --num_ids=47 --world_size=3 --seed=5 --epochs=2 --policy=masked_tail \
    --slots_file_above=0 --out="$OUT" >"$TMP/summary_large" 2>"$TMP/log"; then
  cmp -s "$TMP/summary" "$TMP/summary_large" || fail "large summary differs"
  [[ -s "$TMP/audit.slots" ]] || fail "no side file $TMP/audit.slots"
  /usr/bin/python3 - "$OUT" "$TMP/audit.slots" <<'PY' || fail "large JSON shape"
import json, os, sys, zlib
d = json.load(open(sys.argv[1]))
raw = open(sys.argv[2], "rb").read()
assert d["slots_file"] == "audit.slots", d["slots_file"]
assert d["slots_file_bytes"] == len(raw) and raw[:8] == b"RPSLOTS1"
assert d["slots_file_checksum"] == "crc32:%08x" % zlib.crc32(raw)
assert d["epoch_orders_differ"] is True
for epoch in d["epochs"]:
    assert epoch["masked_slots"] == [{"rank": 2, "slot": 15}], epoch
    assert epoch["unique_ids"] == 47 and epoch["updates"] == []
    for rank in epoch["ranks"]:
        assert rank["num_slots"] == 16 and rank["indices"] == []
        assert rank["plan_fingerprint"]
PY
else
  fail "large run: $(cat "$TMP/log")"
fi
rm -f "$TMP/audit.slots"
# More ids than this machine's memory holds: refused before allocating.
expect_exit 2 "num_ids beyond memory" "GB of memory (90 bytes per id); this machine has" \
  "${GOOD[@]}" --num_ids=2000000000

# --no_shuffle, uneven local batches: rank 0 takes 3 of every 4 positions.
if "$AUDIT" --num_ids=9 --world_size=2 --epochs=2 --policy=duplicate_pad \
    --no_shuffle --local_batch_sizes=3,1 --out="$OUT" >/dev/null 2>"$TMP/log"; then
  /usr/bin/python3 - "$OUT" <<'PY' || fail "no_shuffle / local batches"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["local_batch_sizes"] == [3, 1], d["local_batch_sizes"]
assert d["epoch_orders_differ"] is False
ranks = d["epochs"][1]["ranks"]
assert ranks[0]["indices"] == [0, 2, 3, 4, 6, 7, 8], ranks[0]["indices"]
assert ranks[1]["indices"] == [1, 5, 0], ranks[1]["indices"]
PY
else
  fail "no_shuffle run: $(cat "$TMP/log")"
fi

# --config: the training config's real receipt ids, world size and policy.
if "$AUDIT" --config=configs/three_worker_47_ids.pbtxt --out="$OUT" \
    >"$TMP/stdout" 2>"$TMP/log"; then
  grep -q "48 slots for 47 ids" "$TMP/stdout" || fail "--config summary"
  /usr/bin/python3 - "$OUT" <<'PY' || fail "--config JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["num_ids"] == 47 and d["world_size"] == 3, d["num_ids"]
assert d["policy"] == "masked_tail"
ids = [i for r in d["epochs"][0]["ranks"] for i in r["receipt_ids"]]
assert all(i.startswith("rcpt-") for i in ids), ids[:3]
assert d["epochs"][0]["masked_slots"] == [{"rank": 2, "slot": 15}]
PY
else
  fail "--config run: $(cat "$TMP/log")"
fi
# --config with --set (issue 30): the override is the audit's seed and
# policy; a bad one, or --set without --config, is refused naming itself.
if "$AUDIT" --config=configs/three_worker_47_ids.pbtxt --set seeds.sampler=11 \
    --set 'sampler={ name: "duplicate_pad" }' --out="$OUT" >"$TMP/stdout" 2>"$TMP/log"; then
  /usr/bin/python3 - "$OUT" <<'PY' || fail "--config --set JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["seed"] == 11, d["seed"]
assert d["policy"] == "duplicate_pad", d["policy"]
assert d["epochs"][0]["masked_slots"] == [], d["epochs"][0]["masked_slots"]
PY
else
  fail "--config --set run: $(cat "$TMP/log")"
fi
rm -f "$OUT"
expect_exit 2 "unknown --set field" "--set seeds.samplr=1" \
  --config=configs/three_worker_47_ids.pbtxt --set seeds.samplr=1 --out="$OUT"
expect_exit 2 "--set without --config" "give --config too" \
  "${GOOD[@]}" --set seeds.sampler=1
expect_exit 2 "bare --set" "--set needs a value" \
  --config=configs/three_worker_47_ids.pbtxt --out="$OUT" --set
[[ -e "$OUT" ]] && fail "a refused --set wrote $OUT"
# --config, large (--slots_file_above=0): the slots to the side file, the
# JSON's summary naming receipts by their real ids.
rm -f "$TMP/audit.slots"
if "$AUDIT" --config=configs/three_worker_47_ids.pbtxt --slots_file_above=0 --out="$OUT" \
    >"$TMP/stdout" 2>"$TMP/log"; then
  grep -q "48 slots for 47 ids" "$TMP/stdout" || fail "--config large summary"
  [[ -s "$TMP/audit.slots" ]] || fail "--config large: no side file"
  /usr/bin/python3 - "$OUT" "$TMP/audit.slots" <<'PY' || fail "--config large JSON"
import json, sys, zlib
d = json.load(open(sys.argv[1]))
raw = open(sys.argv[2], "rb").read()
assert d["slots_file"] == "audit.slots" and d["slots_file_bytes"] == len(raw)
assert d["slots_file_checksum"] == "crc32:%08x" % zlib.crc32(raw)
assert d["num_ids"] == 47 and d["world_size"] == 3
assert all(r["receipt_ids"] == [] for r in d["epochs"][0]["ranks"])
assert d["epochs"][0]["masked_slots"] == [{"rank": 2, "slot": 15}]
PY
else
  fail "--config large run: $(cat "$TMP/log")"
fi
expect_exit 2 "--config with --policy" "drop --num_ids and --policy" \
  --config=configs/three_worker_47_ids.pbtxt --policy=masked_tail --out="$OUT"
expect_exit 2 "--config missing file" "no such file" \
  --config=/nonexistent/x.pbtxt --out="$OUT"

echo "$failures failed"
[[ $failures -eq 0 ]]
