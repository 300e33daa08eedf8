#!/bin/sh
# Runs inside the image's mpi stage as its user (tests/samples/image_test.py
# starts it): both sides of samples/k8s/mpijob.yaml on one machine. The
# worker side is the manifest's worker command, spool-mpi-worker, with a key
# pair in ~/.ssh as mpi-operator's Secret provides it; the launcher side is
# mpirun with the manifest's arguments, reaching the "worker" over ssh at
# 127.0.0.2 (an address Open MPI does not take for this host, so it starts
# orted over ssh as it does on a cluster).
#
#   mpi_in_image.sh PORT run MPIRUN-ARGS...
#       runs mpirun to the end; exits with mpirun's code
#   mpi_in_image.sh PORT preempt STEP MPIRUN-ARGS...
#       the program must write rank R's output to ~/rank-R.log (orted holds
#       back what it forwards while it stops ranks); once every rank logged
#       a step >= STEP, sends SIGTERM to the worker command, as Kubernetes
#       does to a pod it stops, and when it exits ends the rest of the
#       "pod"; prints "worker exit N", each rank's log as "rank R: ...",
#       and "mpirun exit N"
# mpirun's output (with --tag-output) goes to stdout.
set -u
port=$1 mode=$2
shift 2
step=0
if [ "$mode" = preempt ]; then step=$1; shift; fi

mkdir -p "$HOME/.ssh"
if [ ! -f "$HOME/.ssh/id_rsa" ]; then
  # mpi-operator's Secret: an ECDSA key under the name id_rsa, and its public
  # half as authorized_keys.
  ssh-keygen -q -t ecdsa -N '' -f "$HOME/.ssh/id_rsa"
  cp "$HOME/.ssh/id_rsa.pub" "$HOME/.ssh/authorized_keys"
fi

spool-mpi-worker -p "$port" >"$HOME/worker.log" 2>&1 &
worker=$!
ready=no
for _ in $(seq 100); do
  if ssh -p "$port" -o BatchMode=yes 127.0.0.2 true 2>/dev/null; then ready=yes; break; fi
  sleep 0.1
done
if [ $ready != yes ]; then
  echo "sshd did not accept the key on port $port"; cat "$HOME/worker.log"
  kill -TERM $worker; exit 1
fi

export OMPI_MCA_plm_rsh_args="-p $port"
log=$HOME/mpirun.log
mpirun --host 127.0.0.2:2 --tag-output "$@" >"$log" 2>&1 &
launcher=$!

if [ "$mode" = preempt ]; then
  # Every rank past STEP: each writes "step N/..." lines to ~/rank-R.log.
  while kill -0 $launcher 2>/dev/null; do
    past=0
    for r in 0 1; do
      last=$(sed -n 's/^step *\([0-9]*\)\/.*/\1/p' "$HOME/rank-$r.log" 2>/dev/null | tail -n 1)
      [ "${last:-0}" -ge "$step" ] && past=$((past + 1))
    done
    [ $past -ge 2 ] && break
    sleep 0.1
  done
  kill -TERM $worker
  wait $worker
  echo "worker exit $?"
  # The worker pod's first process has exited: Kubernetes ends what is
  # left in it, orted included (which would otherwise wait out
  # odls_base_sigkill_timeout before reaping the ranks).
  pkill -KILL -x orted
fi
wait $launcher
code=$?
cat "$log"
if [ "$mode" = preempt ]; then
  for r in 0 1; do sed "s/^/rank $r: /" "$HOME/rank-$r.log"; done
  echo "mpirun exit $code"
  exit 0
fi
kill -TERM $worker 2>/dev/null
wait $worker
exit $code
