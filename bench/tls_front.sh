#!/usr/bin/env bash
# HTTPS the way users reach AWS and GCS, in front of the local RGW: TLS ends
# in nginx, which streams both ways to the RGW over kept-alive connections
# (no buffering of bodies) and passes the Host header on, so that the
# client's SigV4 signature holds. A self-signed certificate for 127.0.0.1
# is made in the folder; clients trust it with its cert.pem.
#
#   bench/tls_front.sh start <folder> <TLS port> <RGW port>   prints nothing; fails if it does not answer
#   bench/tls_front.sh stop <folder>
# Used by scripts/bench and bench/disk_download.sh. Needs nginx (nginx-light).
set -euo pipefail
action=${1:?usage: tls_front.sh start|stop <folder> [TLS port] [RGW port]}
tls_dir=${2:?usage: tls_front.sh start|stop <folder> [TLS port] [RGW port]}
if [[ $action == stop ]]; then
  [[ -s $tls_dir/nginx.pid ]] && kill "$(<"$tls_dir/nginx.pid")" 2>/dev/null || true
  exit 0
fi
tls_port=${3:?tls_front.sh start: give the TLS port} rgw_port=${4:?tls_front.sh start: give the RGW port}
[[ -x /usr/sbin/nginx ]] || { echo "tls_front.sh: needs nginx (apt-get install nginx-light)" >&2; exit 1; }
rm -rf "$tls_dir" && mkdir -p "$tls_dir/tmp"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$tls_dir/key.pem" -out "$tls_dir/cert.pem" 2>/dev/null
cat >"$tls_dir/nginx.conf" <<NGINX
worker_processes 2;
pid $tls_dir/nginx.pid;
error_log $tls_dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $tls_dir/tmp/body; proxy_temp_path $tls_dir/tmp/proxy;
  fastcgi_temp_path $tls_dir/tmp/fcgi; uwsgi_temp_path $tls_dir/tmp/uwsgi; scgi_temp_path $tls_dir/tmp/scgi;
  upstream rgw { server 127.0.0.1:$rgw_port; keepalive 128; }
  server {
    listen 127.0.0.1:$tls_port ssl;
    ssl_certificate $tls_dir/cert.pem;
    ssl_certificate_key $tls_dir/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:tls:10m;
    keepalive_requests 100000;
    client_max_body_size 0;
    location / {
      proxy_pass http://rgw;
      proxy_http_version 1.1;
      proxy_set_header Host \$http_host;
      proxy_set_header Connection "";
      proxy_request_buffering off;
      proxy_buffering off;
      proxy_max_temp_file_size 0;
      proxy_read_timeout 300s;
    }
  }
}
NGINX
/usr/sbin/nginx -p "$tls_dir" -c "$tls_dir/nginx.conf" -e "$tls_dir/error.log"
curl -s -o /dev/null --max-time 10 --cacert "$tls_dir/cert.pem" "https://127.0.0.1:$tls_port/" \
  || { echo "tls_front.sh: https://127.0.0.1:$tls_port does not answer; see $tls_dir/error.log" >&2; exit 1; }
