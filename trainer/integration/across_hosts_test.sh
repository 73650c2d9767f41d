#!/bin/bash
# Two ranks on two "hosts": two network namespaces joined by a veth pair,
# rank 0's store bound to its namespace's address, Gloo on the veth
# interfaces (GLOO_SOCKET_IFNAME). The result must equal the same run on
# loopback: the same first update (byte-identical first_step.json), the same
# validation, the same final parameters.
# Needs root (CI runs as root); without it the test says so and skips.
# Usage: across_hosts_test.sh PATH_TO_TRAIN
set -uo pipefail
TRAIN="$(realpath "$1")"
TMP="$(mktemp -d "${TEST_TMPDIR:-/tmp}/hosts.XXXXXX")"

if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
  echo "SKIPPED: needs root and iproute2 to create network namespaces"
  exit 0
fi

id=$$
NS_A="rp-a-$id"
NS_B="rp-b-$id"
VETH_A="rpa$id"
VETH_B="rpb$id"
ADDR_A="10.213.$((id % 200 + 10)).1"
ADDR_B="10.213.$((id % 200 + 10)).2"
cleanup() {
  ip netns del "$NS_A" 2>/dev/null
  ip netns del "$NS_B" 2>/dev/null
}
trap cleanup EXIT

set -e
ip netns add "$NS_A"
ip netns add "$NS_B"
ip link add "$VETH_A" type veth peer name "$VETH_B"
ip link set "$VETH_A" netns "$NS_A"
ip link set "$VETH_B" netns "$NS_B"
ip -n "$NS_A" addr add "$ADDR_A/24" dev "$VETH_A"
ip -n "$NS_B" addr add "$ADDR_B/24" dev "$VETH_B"
for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
ip -n "$NS_A" link set "$VETH_A" up
ip -n "$NS_B" link set "$VETH_B" up
set +e

cat >"$TMP/two.pbtxt" <<'PB'
data {
  synthetic { num_identities: 40 rare_class_fraction: 0.05 seed: 3 }
  views_per_identity: 1 validation_fraction: 0.25 split_seed: 5
  augmentation_seed: 7 image_size: 16
}
model { architecture: "cnn" conv_channels: [4] hidden_units: [8] }
optimizer { sgd { learning_rate: 0.05 momentum: 0.9 } }
seeds { model_init: 37 sampler: 99 }
global_batch: 4
world_size: 2
local_batch_sizes: [3, 1]
epochs: 2
run { collective_timeout_seconds: 30 log_every_updates: 1000 }
PB

fail() { echo "FAIL: $*"; exit 1; }

"$TRAIN" --config="$TMP/two.pbtxt" --out="$TMP/loopback" >"$TMP/loopback.log" 2>&1 \
  || fail "loopback run: $(tail -5 "$TMP/loopback.log")"

run_rank() {  # NS RANK IFNAME
  ip netns exec "$1" env RANK="$2" WORLD_SIZE=2 LOCAL_RANK=0 \
    MASTER_ADDR="$ADDR_A" MASTER_PORT=29611 GLOO_SOCKET_IFNAME="$3" \
    "$TRAIN" --config="$TMP/two.pbtxt" --out="$TMP/hosts" >"$TMP/rank$2.log" 2>&1
}
run_rank "$NS_A" 0 "$VETH_A" &
rank0=$!
run_rank "$NS_B" 1 "$VETH_B" &
rank1=$!
wait $rank0 || fail "rank 0 in $NS_A: $(tail -5 "$TMP/rank0.log")"
wait $rank1 || fail "rank 1 in $NS_B: $(tail -5 "$TMP/rank1.log")"
grep -q "joined the Gloo process group at $ADDR_A:29611" "$TMP/rank1.log" \
  || fail "rank 1 did not join through $ADDR_A"

cmp "$TMP/loopback/first_step.json" "$TMP/hosts/first_step.json" \
  || fail "first_step.json differs between loopback and two namespaces"
cmp "$TMP/loopback/validation.json" "$TMP/hosts/validation.json" \
  || fail "validation.json differs"
/usr/bin/python3 - "$TMP" <<'PY' || fail "summaries differ"
import json, sys
a = json.load(open(sys.argv[1] + "/loopback/run_summary.json"))
b = json.load(open(sys.argv[1] + "/hosts/run_summary.json"))
assert a["final_parameter_hash"] == b["final_parameter_hash"], "parameters differ"
assert [p["loss"] for p in a["loss_curve"]] == [p["loss"] for p in b["loss_curve"]]
assert json.load(open(sys.argv[1] + "/hosts/parity.json"))["pass"]
PY
echo "PASS: the two-namespace run equals the loopback run"
