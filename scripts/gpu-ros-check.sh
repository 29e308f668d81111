#!/usr/bin/env bash
# GPU-loaned messages through real ROS 2 programs (examples/ros/rgaps_gpu_examples),
# run on a GPU machine in a ROS 2 environment (a sourced workspace, or a bundle's):
#   1. one host: gpu_image_pub writes IMAGE-byte frames with a kernel into device
#      loans -> SUBS gpu_image_sub processes (checked by a kernel) + CPU_SUBS
#      cpu_image_sub processes on the same topic;
#   2. two emulated hosts (two rgaps daemons on loopback with their own shared-memory
#      prefixes, wire WIRE): the same with the publisher on host a, subscribers on b;
#   3. rclpy: tensor_pub.py on host a -> tensor_sub.py on host b, with PyTorch on a GPU
#      machine, numpy on host memory (PYTHON selects the interpreter).
# Each subscriber prints "frames=N bad_bytes=B on_device=D"; a check passes when every
# subscriber got every frame with no bad byte, the GPU subscribers on the device when a GPU
# is there and the CPU ones in host memory.
# Settings: FRAMES (20), IMAGE (64M), SUBS (8), CPU_SUBS (2), RATE (10), WIRE (fabric:shm),
# EX (directory of the programs; default: found on PATH), OUT (logs; default a temp dir).
set -u
FRAMES=${FRAMES:-20} IMAGE=${IMAGE:-64M} SUBS=${SUBS:-8} CPU_SUBS=${CPU_SUBS:-2} RATE=${RATE:-10}
WIRE=${WIRE:-fabric:shm} PYTHON=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d /tmp/gpu-ros-check.XXXXXX)}
mkdir -p "$OUT"
if [ -n "${EX:-}" ]; then PATH=$EX:$PATH; fi
export RMW_IMPLEMENTATION=rmw_rgaps RGAPS_POOL_SIZE=${RGAPS_POOL_SIZE:-2G} ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-43}
export RGAPS_EXAMPLES_DEPTH=$FRAMES   # KEEP_LAST as deep as the stream: every frame is expected
GPU=0; nvidia-smi -L >/dev/null 2>&1 && GPU=1
bytes() { numfmt --from=iec "$1"; }
ok=0; bad=0
result() { if [ "$1" = PASS ]; then ok=$((ok+1)); else bad=$((bad+1)); fi; echo "== $1: $2"; }

# judge NAME LOGS...: every log's summary has all frames, no bad byte, on the device if GPU=1.
judge() {
	local name=$1 f line dev fails=0 n=0; shift
	for f in "$@"; do
		n=$((n+1)); line=$(grep -h 'frames=' "$f" | tail -1)
		echo "   $(basename "$f" .log): ${line:-no summary}"
		dev=$GPU; case "$f" in *-cpu*) dev=0 ;; esac   # CPU subscribers get host memory
		case "$line" in *"frames=$FRAMES bad_bytes=0 on_device=$dev"*) ;; *) fails=$((fails+1)); tail -n 3 "$f" | sed 's/^/      | /' ;; esac
	done
	[ $fails = 0 ] && result PASS "$name: $n subscribers" || result FAIL "$name: $fails of $n subscribers short (logs in $OUT)"
}

# stream TAG PREFIX_A PREFIX_B: the publisher with prefix a, the subscribers with prefix b.
stream() {
	local tag=$1 pa=$2 pb=$3 pids="" logs="" i
	for i in $(seq "$SUBS"); do
		RGAPS_SHM_PREFIX=$pb gpu_image_sub "$FRAMES" "$(bytes "$IMAGE")" > "$OUT/$tag-gpu$i.log" 2>&1 & pids="$pids $!"
		logs="$logs $OUT/$tag-gpu$i.log"
	done
	for i in $(seq "$CPU_SUBS"); do
		RGAPS_SHM_PREFIX=$pb cpu_image_sub "$FRAMES" "$(bytes "$IMAGE")" > "$OUT/$tag-cpu$i.log" 2>&1 & pids="$pids $!"
		logs="$logs $OUT/$tag-cpu$i.log"
	done
	RGAPS_SHM_PREFIX=$pa timeout -s INT 120 gpu_image_pub "$FRAMES" "$(bytes "$IMAGE")" "$RATE" $((SUBS + CPU_SUBS)) \
		> "$OUT/$tag-pub.log" 2>&1
	echo "   $(tail -1 "$OUT/$tag-pub.log")"
	for _ in $(seq 100); do kill -0 $pids 2>/dev/null || break; sleep 0.1; done
	kill -INT $pids 2>/dev/null; wait $pids 2>/dev/null
	# shellcheck disable=SC2086
	judge "$tag: $FRAMES frames of $IMAGE, kernel-written, to $SUBS GPU and $CPU_SUBS CPU subscriber processes" $logs
}

P=rgroscheck$$
echo "== GPU=$GPU FRAMES=$FRAMES IMAGE=$IMAGE SUBS=$SUBS CPU_SUBS=$CPU_SUBS logs: $OUT"
stream one-host "${P}x" "${P}x"

# two emulated hosts: b listens, a dials it
secret=$OUT/secret; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$secret"; chmod 600 "$secret"
port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
pa=$(port); pb=$(port)
RGAPS_SHM_PREFIX=${P}b RGAPS_DAEMON_IDLE=0 rgaps daemon -domain "$ROS_DOMAIN_ID" -listen "127.0.0.1:$pb" -secret-file "$secret" \
	-host-id b -provider "$WIRE" > "$OUT/daemon-b.log" 2>&1 & DB=$!
sleep 1
RGAPS_SHM_PREFIX=${P}a RGAPS_DAEMON_IDLE=0 rgaps daemon -domain "$ROS_DOMAIN_ID" -listen "127.0.0.1:$pa" -secret-file "$secret" \
	-host-id a -provider "$WIRE" -peers "127.0.0.1:$pb" > "$OUT/daemon-a.log" 2>&1 & DA=$!
for _ in $(seq 100); do grep -q "peer up" "$OUT/daemon-a.log" 2>/dev/null && break; sleep 0.1; done
stream two-hosts "${P}a" "${P}b"

need=rclpy,rgaps_gpu; [ $GPU = 1 ] && need=$need,torch   # numpy on host memory without a GPU
if "$PYTHON" -c "import $need" > "$OUT/python-import.log" 2>&1; then
	RGAPS_SHM_PREFIX=${P}b "$PYTHON" "$(command -v tensor_sub.py)" "$FRAMES" > "$OUT/py-sub.log" 2>&1 & PS=$!
	RGAPS_SHM_PREFIX=${P}a timeout -s INT 120 "$PYTHON" "$(command -v tensor_pub.py)" "$FRAMES" 1024 4096 1 > "$OUT/py-pub.log" 2>&1
	for _ in $(seq 100); do kill -0 $PS 2>/dev/null || break; sleep 0.1; done
	kill -INT $PS 2>/dev/null; wait $PS 2>/dev/null
	judge "rclpy (${need#rclpy,rgaps_gpu}): $FRAMES tensors of 4 MiB from host a to host b" "$OUT/py-sub.log"
else
	result FAIL "$need not importable by $PYTHON: $(tail -1 "$OUT/python-import.log")"
fi
kill -TERM $DA $DB 2>/dev/null; wait $DA $DB 2>/dev/null
rm -f /dev/shm/"${P}"* 2>/dev/null
echo "== summary: $ok passed, $bad failed"
[ $bad = 0 ]
