#!/bin/sh
# The command of an MPIJob worker pod (samples/k8s/mpijob.yaml), installed as
# /usr/local/bin/spool-mpi-worker in the image's mpi stage (samples/Dockerfile):
# it serves ssh for the launcher's mpirun and passes the pod's SIGTERM on to
# the ranks.
#
# Why not sshd alone: Kubernetes stops a pod (preemption, eviction, drain) by
# sending SIGTERM to the container's first process only. With sshd there,
# the ranks, which Open MPI's orted starts inside an ssh session, would hear
# nothing and be SIGKILLed when the grace period ends, without saving. Here
# SIGTERM goes to every child of orted (the ranks), which save their part of
# the step before the deadline (SPOOL_PREEMPTION_GRACE_SECONDS, passed on by
# mpirun -x) and exit 143; this script waits for them, then stops sshd and
# exits 143. orted itself is not signalled: it would kill the ranks after
# odls_base_sigkill_timeout (1 s unless the launcher sets it).
#
#   spool-mpi-worker [sshd options...]   (extra options go to sshd, e.g. -p PORT)
# Environment: SPOOL_SSHD_CONFIG (default /etc/ssh/sshd_config_spool).
set -u
config=${SPOOL_SSHD_CONFIG:-/etc/ssh/sshd_config_spool}
/usr/sbin/sshd -D -e -f "$config" "$@" &
sshd=$!

# The ranks: the live processes orted started (an exited rank stays a zombie
# until orted reaps it, which it does only after its own kill sequence).
ranks() {
  for daemon in $(pgrep -x orted); do pgrep -P "$daemon" --runstates D,R,S,T,t; done
}

stop() {
  trap '' TERM INT
  for pid in $(ranks); do kill -TERM "$pid" 2>/dev/null; done
  while [ -n "$(ranks)" ]; do sleep 0.2; done
  kill -TERM "$sshd" 2>/dev/null
  wait "$sshd"
  exit 143
}

trap stop TERM INT
wait "$sshd"
