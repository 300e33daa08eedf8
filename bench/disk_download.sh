#!/usr/bin/env bash
# A large object from the local Ceph RGW to a file on a local disk (not
# tmpfs): spool cp, spool cp --fsync, rclone, and rclone followed by an fsync
# of its file (`sync -d`), alternating, the previous file removed and `sync`
# plus a pause before each run. Prints wall seconds, user and system CPU
# (GNU time) and the /proc/vmstat counters that moved (compaction, huge
# pages, major faults): the kernel side of a download.
#
# With https, the downloads go through nginx terminating TLS in front of the
# RGW (bench/tls_front.sh, port 47482), as users reach AWS and GCS.
#
#   bench/disk_download.sh <build dir> [folder on a disk (/var/tmp)] [MiB (1024)] [rounds (5)] [pause s (2)] [http|https]
set -euo pipefail
build=$(realpath "${1:?usage: disk_download.sh <build dir> [folder] [MiB] [rounds] [pause]}")
folder=${2:-/var/tmp}/spool-disk-download-$$
mib=${3:-1024} rounds=${4:-5} pause=${5:-2} scheme=${6:-http}
root=$(cd "$(dirname "$0")/.." && pwd)
command -v rclone >/dev/null || { echo "disk_download.sh: needs rclone (apt-get install rclone)" >&2; exit 1; }
# shellcheck source=rgw_env.sh
source "$root/bench/rgw_env.sh" spool-disk-bench
tls_dir=$local_dir/tls
trap '"$root/bench/tls_front.sh" stop "$tls_dir"; rm -rf "$local_dir" "$folder"' EXIT
spool=$build/cli/spool url=s3://$bucket/disk-$$/source.bin
head -c $((mib << 20)) /dev/urandom >"$local_dir/source.bin"
"$spool" -q cp "$local_dir/source.bin" "$url"
rm "$local_dir/source.bin"
rclone_tls=()
if [[ $scheme == https ]]; then
  "$root/bench/tls_front.sh" start "$tls_dir" 47482 "${AWS_ENDPOINT_URL##*:}"
  export AWS_ENDPOINT_URL=https://127.0.0.1:47482 AWS_CA_BUNDLE=$tls_dir/cert.pem  # spool reads AWS_CA_BUNDLE
  rclone_tls=(--ca-cert "$tls_dir/cert.pem")
fi
export RCLONE_CONFIG_B_TYPE=s3 RCLONE_CONFIG_B_PROVIDER=Ceph RCLONE_CONFIG_B_ENDPOINT=$AWS_ENDPOINT_URL \
  RCLONE_CONFIG_B_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID RCLONE_CONFIG_B_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
vmstat() { grep -E '^(compact_stall|compact_fail|compact_success|thp_fault_alloc|thp_fault_fallback|pgmajfault|allocstall_normal) ' /proc/vmstat; }
for round in $(seq "$rounds"); do
  for tool in spool spool-fsync rclone rclone+sync; do
    rm -rf "$folder" && mkdir -p "$folder" && sync && sleep "$pause"
    out=$folder/object.bin
    case $tool in
      spool) cmd=("$spool" -q cp "$url" "$out") ;;
      spool-fsync) cmd=("$spool" -q cp --fsync "$url" "$out") ;;
      rclone) cmd=(env -u AWS_CA_BUNDLE rclone -q "${rclone_tls[@]}" --multi-thread-streams 8 copyto "B:$bucket/disk-$$/source.bin" "$out") ;;
      rclone+sync) cmd=(bash -c 'env -u AWS_CA_BUNDLE rclone -q "${@:3}" --multi-thread-streams 8 copyto "$1" "$2" && sync -d "$2"' _
                        "B:$bucket/disk-$$/source.bin" "$out" "${rclone_tls[@]}") ;;
    esac
    before=$(vmstat)
    /usr/bin/time -f '%e %U %S' -o "$local_dir/time" "${cmd[@]}"
    # The same counters in the same order before and after: side by side.
    moved=$(paste -d' ' <(echo "$before") <(vmstat) | awk '$4 != $2 {printf "%s+%d ", $1, $4 - $2}')
    read -r wall user sys <"$local_dir/time"
    printf '%-12s round %d  %6.2f s  %7.1f MiB/s  user %5.2f  sys %5.2f  %s\n' "$tool" "$round" "$wall" \
      "$(awk -v m="$mib" -v s="$wall" 'BEGIN{print m / s}')" "$user" "$sys" "$moved"
  done
done
