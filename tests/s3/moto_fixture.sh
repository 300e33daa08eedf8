#!/usr/bin/env bash
# The moto_s3 CTest fixture: a second real S3 server, moto's (moto[server]
# in the project's virtual environment), beside the ceph_rgw fixture's Ceph
# RGW, so that the S3 tests also meet a server that behaves differently
# (conditional writes on CompleteMultipartUpload, no signature checks, no
# flexible-checksum storage without x-amz-sdk-checksum-algorithm; see
# docs/integrity.md).
#
#   moto_fixture.sh up   <python> <state dir> <bucket>
#   moto_fixture.sh down <python> <state dir>
#
# "up" starts moto on the host and port of $AWS_ENDPOINT_URL (127.0.0.1
# only), or finds the one it started earlier running, and creates <bucket>;
# so other test folders can call it again for a bucket of their own. "down"
# stops the server "up" started, named by the pid file in <state dir> (in the
# build tree), and nothing else. moto keeps everything in memory (objects over
# 5 MiB in temporary files): stopping it is the cleanup.
set -euo pipefail
action=${1:-} python=${2:-} state=${3:-} bucket=${4:-}
[[ -n $action && -n $python && -n $state ]] || {
  echo "usage: $0 up <python> <state dir> <bucket> | down <python> <state dir>" >&2; exit 2; }

pid_file=$state/moto.pid
log_file=$state/moto.log

# http://127.0.0.1:27490 -> host and port. moto must listen on loopback
# only: it accepts any keys.
endpoint=${AWS_ENDPOINT_URL:?AWS_ENDPOINT_URL must name the moto endpoint}
hostport=${endpoint#http://}
host=${hostport%:*} port=${hostport##*:}
[[ $host == 127.0.0.1 && $port =~ ^[0-9]+$ ]] || {
  echo "moto_fixture: AWS_ENDPOINT_URL must be http://127.0.0.1:<port>, not $endpoint" >&2; exit 2; }

# The pid in the pid file, when it is a live moto server that this script
# started (pid files outlive their processes, and pids are reused).
our_pid() {
  [[ -s $pid_file ]] || return 1
  local pid
  pid=$(<"$pid_file")
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "moto.server -H 127.0.0.1 -p $port" || return 1
  echo "$pid"
}

# GET / (ListBuckets) answers 200 once moto serves requests.
answers() {
  [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$endpoint/" 2>/dev/null) == 200 ]]
}

start() {
  if our_pid >/dev/null && answers; then return; fi
  # Another process on the port (a stale moto of another build tree, any
  # other server) would take our requests: refuse rather than test it.
  if answers || ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; then
    echo "moto_fixture: port $port is taken by a process this fixture did not start" >&2; exit 1
  fi
  mkdir -p "$state"
  # Its own session, output to a log and stdin from /dev/null: CTest waits
  # for every holder of the test's output pipe, so the server must hold none.
  setsid "$python" -m moto.server -H 127.0.0.1 -p "$port" </dev/null >"$log_file" 2>&1 &
  echo $! >"$pid_file"
  for _ in $(seq 1 300); do  # up to 30 s; about 2 s on 2 cores
    answers && return
    if ! our_pid >/dev/null; then
      echo "moto_fixture: moto_server exited at start; its log ($log_file):" >&2
      tail -n 20 "$log_file" >&2; rm -f "$pid_file"; exit 1
    fi
    sleep 0.1
  done
  echo "moto_fixture: moto_server did not answer on $endpoint within 30 s" >&2
  stop; exit 1
}

stop() {
  local pid
  if ! pid=$(our_pid); then rm -f "$pid_file"; return; fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do  # up to 10 s
    [[ -d /proc/$pid ]] || break
    sleep 0.1
  done
  [[ -d /proc/$pid ]] && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pid_file"
}

case $action in
  up)
    [[ -n $bucket ]] || { echo "usage: $0 up <python> <state dir> <bucket>" >&2; exit 2; }
    start
    # PUT /bucket: 200 when created or already ours (moto in us-east-1).
    # Signed like a client would, though moto checks no signature.
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X PUT \
      --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
      -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$endpoint/$bucket")
    [[ $code == 200 || $code == 409 ]] || { echo "creating bucket $bucket answered HTTP $code" >&2; exit 1; }
    echo "moto_s3: $endpoint (pid $(our_pid)), bucket $bucket"
    ;;
  down)
    stop
    ;;
  *) echo "usage: $0 up|down <python> <state dir> [bucket]" >&2; exit 2 ;;
esac
