#!/usr/bin/env bash
# What a new PostgreSQL connection costs the server on this machine, against a query on a kept
# one (docs/perf-data/run-log-2026-11.md, "Where the machine's CPU goes at 100 clusters"). It starts a
# throwaway PostgreSQL 15 with the local region's settings (TLS, scram-sha-256, fsync off) on
# loopback, runs pgbench's select-only script with and without a new connection per
# transaction (-C), with and without TLS, and prints tps and the server's CPU per transaction
# (the postmaster's own and its reaped backends' CPU time; pgbench itself is not counted).
# Usage: hack/pg-connection-cost.sh [transactions per client, default 500]. Run as root (the
# server runs as the postgres user, as in the region) on a quiet machine.
set -euo pipefail
tx=${1:-500}
bin=/usr/lib/postgresql/15/bin
[ -x "$bin/pgbench" ] || { echo "needs PostgreSQL 15 (hack/ensure-packages.sh postgresql)" >&2; exit 1; }
dir=$(mktemp -d /tmp/pg-connection-cost.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	su postgres -c "$bin/pg_ctl -D $dir/data stop -m immediate" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
chmod 755 "$dir"
mkdir "$dir/sock"
echo pw >"$dir/pw"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/key.pem" \
	-out "$dir/crt.pem" -days 1 -subj /CN=127.0.0.1 2>/dev/null
chmod 600 "$dir/key.pem"
chown -R postgres "$dir"
su postgres -c "$bin/initdb -D $dir/data -A scram-sha-256 --pwfile=$dir/pw" >/dev/null
su postgres -c "$bin/pg_ctl -D $dir/data -l $dir/log -w -o '-p $port -c listen_addresses=127.0.0.1 \
	-c unix_socket_directories=$dir/sock -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
	-c ssl=on -c ssl_cert_file=$dir/crt.pem -c ssl_key_file=$dir/key.pem -c password_encryption=scram-sha-256' start" >/dev/null
export PGPASSWORD=pw
"$bin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -i -s 1 postgres >/dev/null 2>&1
postmaster=$(head -1 "$dir/data/postmaster.pid")
hz=$(getconf CLK_TCK)
# server_cpu: the postmaster's utime+stime+cutime+cstime, in clock ticks.
server_cpu() { awk '{print $14+$15+$16+$17}' "/proc/$postmaster/stat"; }
echo "pgbench -S, 4 clients x $tx transactions; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for connect in "-C" ""; do
	for ssl in require disable; do
		before=$(server_cpu)
		out=$(PGSSLMODE=$ssl "$bin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -n -S -c 4 -t "$tx" $connect postgres 2>&1)
		after=$(server_cpu)
		tps=$(grep -oE '^tps = [0-9.]+' <<<"$out" | head -1)
		per=$(( (after - before) * 1000000 / hz / (4 * tx) ))
		what="kept connections"
		[ -n "$connect" ] && what="a new connection each"
		printf '%-22s sslmode=%-8s %-16s server CPU per transaction %6d µs\n' "$what" "$ssl" "$tps" "$per"
	done
done
