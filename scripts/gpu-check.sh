#!/usr/bin/env bash
# easeml: check the GPU path on a machine with one NVIDIA GPU (as root).
#
#   scripts/gpu-check.sh
#
# Needs what scripts/setup.sh installs (PostgreSQL 15 and its headers,
# OpenBLAS, json-c, dataset-fashion-mnist), the CUDA toolkit (CUDA_HOME,
# default /usr/local/cuda), the NVIDIA driver, and PyTorch with CUDA for
# /usr/bin/python3 (PYTHON to use another).  No network.  In under five
# minutes it:
#
#   1. builds easeml with the CUDA backend and installs it (PG_CONFIG);
#   2. checks every CUDA kernel and every GPU family against the CPU on
#      fresh random inputs (easeml-device-test --cuda: relative error at
#      most 1e-4 in fp32, CPU and GPU scores within 1 point);
#   3. starts a throw-away cluster, loads Fashion-MNIST (60,000 x 784) and
#      lets the scheduler train mlp-256, cnn-16-32 and a PyTorch custom
#      trainer on the GPU, then mlp-256 again on the CPU (same seed: the
#      accuracies must agree within 1 point);
#   4. times an epoch of PyTorch for the same networks and batch sizes.
#
# The last line is
#   RESULT mlp_vs_torch=<ours/theirs> cnn_vs_torch=<ours/theirs>
# (seconds per epoch, ours from the runs' train_seconds / epochs; target
# <= 1.2).  The exit status is non-zero if any check failed.
#
# To test this script where there is no GPU, EASEML_GPU_CHECK_EMULATE=1
# runs the same steps on the trainer's CPU emulation of a GPU and PyTorch
# on the CPU (its RESULT line then measures nothing about GPUs), and
# EASEML_GPU_CHECK_ROWS=N loads only N images.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PYTHON=${PYTHON:-/usr/bin/python3}
export PG_CONFIG CUDA_HOME
BINDIR=$($PG_CONFIG --bindir)
EMULATE=${EASEML_GPU_CHECK_EMULATE:-0}
ROWS=${EASEML_GPU_CHECK_ROWS:-}
failed=0
start=$SECONDS

fail() { echo "FAILED: $*"; failed=1; }
die() { echo "gpu-check.sh: $*" >&2; exit 1; }
step() { printf '\n== %s (%d s)\n' "$*" $((SECONDS - start)); }

[ "$(id -u)" = 0 ] || die "run as root (it installs easeml and creates a cluster owned by postgres)"
if [ "$EMULATE" = 1 ]; then
	echo "gpu-check.sh: EASEML_GPU_CHECK_EMULATE=1: the GPU is the CPU emulation, PyTorch runs on the CPU"
	torch_device=cpu
	device_test=(./easeml-device-test)
	torch_kinds='{cpu}'
else
	[ -x "$CUDA_HOME/bin/nvcc" ] || die "no nvcc in $CUDA_HOME/bin: set CUDA_HOME"
	"$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
		die "$PYTHON cannot use a GPU through PyTorch"
	torch_device=cuda
	device_test=(./easeml-device-test --cuda)
	torch_kinds='{cuda}'
fi

step "build with the CUDA backend"
make -s PG_CONFIG="$PG_CONFIG" CUDA_HOME="$CUDA_HOME"
make -s PG_CONFIG="$PG_CONFIG" CUDA_HOME="$CUDA_HOME" install
make -s PG_CONFIG="$PG_CONFIG" easeml-device-test
[ -f easeml-cuda.so ] || [ "$EMULATE" = 1 ] || die "easeml-cuda.so was not built"
./easeml-trainer --probe

step "every CUDA kernel and GPU family against the CPU"
"${device_test[@]}" || fail "${device_test[*]}"

step "a cluster"
tmp=$(mktemp -d)
chown postgres: "$tmp"
cleanup() {
	runuser -u postgres -- "$BINDIR/pg_ctl" -D "$tmp/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
runuser -u postgres -- "$BINDIR/initdb" -D "$tmp/data" -A trust -U postgres --no-sync >/dev/null
if [ "$EMULATE" = 1 ]; then
	printf '#!/bin/sh\nEASEML_GPU_EMULATE=1 exec %s/easeml-trainer "$@"\n' "$BINDIR" >"$tmp/trainer"
	chmod 755 "$tmp/trainer"
	echo "easeml.trainer_path = '$tmp/trainer'" >>"$tmp/data/postgresql.conf"
fi
cat >>"$tmp/data/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$tmp'
shared_preload_libraries = 'easeml'
easeml.database = 'postgres'
easeml.naptime = '200ms'
easeml.max_workers = 1
easeml.trainer_threads = 4
easeml.enabled = off
EOF
runuser -u postgres -- "$BINDIR/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w start >/dev/null
psql() { "$BINDIR/psql" -h "$tmp" -p "$port" -U postgres -d postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
value() { psql -At -c "$1"; }
# poll: wait up to $2 seconds for query $1 to return t
poll() {
	local i
	for ((i = 0; i < $2 * 2; i++)); do
		[ "$(value "$1")" = t ] && return 0
		sleep 0.5
	done
	return 1
}

psql -c 'CREATE EXTENSION easeml'
step "Fashion-MNIST into the cluster"
"$PYTHON" scripts/load_dataset.py fashion_mnist fashion ${ROWS:+--rows "$ROWS"} | psql
psql <<EOF
CREATE ROLE lab LOGIN;
SELECT easeml.add_tenant('lab');
GRANT SELECT ON public.fashion TO lab;
UPDATE easeml.models SET enabled = name IN ('mlp-256', 'cnn-16-32');
SELECT easeml.add_custom_model('torch-mlp', ARRAY['$PYTHON', '$PWD/scripts/custom_trainers/torch_mlp.py'],
							   device_kinds => '$torch_kinds', params => '{"hidden": 256, "epochs": 3}');
ALTER SYSTEM SET easeml.enabled = on;
SELECT pg_reload_conf();
EOF
poll "SELECT count(*) = 1 FROM easeml.devices WHERE kind = 'cuda' AND present" 60 ||
	{ cat "$tmp/data/easeml_runs/probe.json" "$tmp/data/easeml_runs/probe.log" 2>/dev/null
	  die "the scheduler's probe found no GPU"; }
psql -c "SELECT name, kind, memory, description FROM easeml.devices ORDER BY name"

step "the scheduler trains mlp-256, cnn-16-32 and torch-mlp on the GPU"
# no CPU slot meanwhile: the GPU-capable candidates would take it while the
# GPU is busy (emulated: a GPU slot for each, the CPU for the PyTorch one)
if [ "$EMULATE" = 1 ]; then
	psql -c "SELECT easeml.set_device_slots('cuda:0', 2)"
else
	psql -c "SELECT easeml.set_device_slots('cpu', 0)"
fi
psql -U lab -c "INSERT INTO easeml.tasks (name, source, target, input_shape)
				VALUES ('fashion', 'public.fashion', 'label', '{1,28,28}')"
poll "SELECT status IN ('completed', 'failed') FROM easeml.tasks WHERE name = 'fashion'" 200 ||
	fail "the task did not finish in time"
psql -c "SELECT m.name, r.status, r.device, r.metrics ->> 'device_kind' AS ran_on, round(r.score::numeric, 4) AS score,
				r.epoch, round((r.metrics ->> 'train_seconds')::numeric, 2) AS train_s, left(r.error, 120) AS error
		   FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id ORDER BY r.id"
for m in mlp-256 cnn-16-32 torch-mlp; do
	want=succeeded/cuda:0
	[ "$m" = torch-mlp ] && [ "$EMULATE" = 1 ] && want=succeeded/cpu
	[ "$(value "SELECT r.status || '/' || r.device FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
				WHERE m.name = '$m' ORDER BY r.id LIMIT 1")" = "$want" ] ||
		fail "$m did not end $want"
done
for m in mlp-256 cnn-16-32; do
	[ "$(value "SELECT r.metrics ->> 'device_kind' FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
				WHERE m.name = '$m' ORDER BY r.id LIMIT 1")" = cuda ] || fail "$m did not train on the GPU"
done

step "mlp-256 again, on the CPU"
psql -c "SELECT easeml.disable_device('cuda:0'), easeml.set_device_slots('cpu', NULL)"
cpu_run=$(psql -U lab -At -c "SELECT easeml.enqueue('fashion', 'mlp-256')")
poll "SELECT status NOT IN ('queued', 'running') FROM easeml.runs WHERE id = $cpu_run" 120 ||
	fail "the CPU run did not finish in time"
read -r gpu_score cpu_score <<<"$(value "SELECT (SELECT r.score FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
		WHERE m.name = 'mlp-256' AND r.device = 'cuda:0'), score FROM easeml.runs WHERE id = $cpu_run" | tr '|' ' ')"
echo "mlp-256 accuracy: GPU $gpu_score, CPU $cpu_score"
"$PYTHON" -c "import sys; sys.exit(0 if abs(float('$gpu_score') - float('${cpu_score:-nan}')) <= 0.01 else 1)" ||
	fail "CPU and GPU accuracies differ by more than a point"

epoch_seconds() {
	value "SELECT (r.metrics ->> 'train_seconds')::float8 / (r.metrics ->> 'epochs')::int
			 FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
			WHERE m.name = '$1' AND r.device = 'cuda:0' AND r.status = 'succeeded'"
}
ours_mlp=$(epoch_seconds mlp-256)
ours_cnn=$(epoch_seconds cnn-16-32)

step "PyTorch, the same networks and batch sizes, on the $torch_device"
torch_epoch() {
	"$PYTHON" scripts/bench/torch_epoch.py --device "$torch_device" ${ROWS:+--rows "$ROWS"} "$@" |
		"$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["seconds_per_epoch"])'
}
theirs_mlp=$(torch_epoch --model mlp --epochs 3)
theirs_cnn=$(torch_epoch --model cnn --epochs 2)
printf '%-10s %15s %15s\n' network easeml_s/epoch torch_s/epoch
printf '%-10s %15.4f %15.4f\n' mlp-256 "${ours_mlp:-nan}" "$theirs_mlp" cnn-16-32 "${ours_cnn:-nan}" "$theirs_cnn"
echo "done in $((SECONDS - start)) s"
[ $failed = 0 ] || echo "gpu-check.sh: some checks FAILED (see above)"
"$PYTHON" -c "
o1, t1, o2, t2 = '${ours_mlp:-nan}', '$theirs_mlp', '${ours_cnn:-nan}', '$theirs_cnn'
print('RESULT mlp_vs_torch=%.3f cnn_vs_torch=%.3f' % (float(o1) / float(t1), float(o2) / float(t2)))"
exit $failed
