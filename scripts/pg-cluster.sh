#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests, benches and CI (docs/scale-out.md, "Test cluster"); never a system service.
#
#   scripts/pg-cluster.sh start <dir> [port]   initdb into <dir>/data, start it, create database `paddock`, and print
#                                              its URL (Unix socket in <dir>; with a port, also 127.0.0.1:<port>)
#   scripts/pg-cluster.sh stop <dir>           stop it (immediate: nothing in it is worth a checkpoint) and remove <dir>
#   scripts/pg-cluster.sh restart <dir>        restart it as an operator would (`-m fast`: every connection is ended)
#
# PG_CLUSTER_FSYNC=off starts the server without fsync (and without full-page writes): a commit still waits for its
# WAL to be written to the kernel, so it survives the server's or a client's crash — only a crash of the machine
# itself could lose it. Tests use it (they prove paddock's promises against killed processes, not a disk's); benches
# leave it on, so their PostgreSQL figures pay what a real server pays.
#
# PostgreSQL refuses to run as root, and CI runs as root: then every server binary runs as the `postgres` user that
# Debian's package creates (runuser), and <dir> is handed to that user. <dir> must be reachable by it (under /tmp,
# not under /root). As any other user the binaries run as that user. Missing PostgreSQL fails loudly, naming the fix.
set -euo pipefail

usage() {
  echo "usage: $0 start <dir> [port] | stop <dir>" >&2
  exit 2
}
[ $# -ge 2 ] || usage
action=$1
dir=$2
port=${3:-}

# PADDOCK_PG_BINDIR names another folder of server binaries (a test points it at an empty one to see the failure).
bindir=${PADDOCK_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)}
if [ "$action" = stop ] && [ ! -f "$dir/data/postmaster.pid" ]; then
  rm -rf "$dir" # nothing was started (or it is already stopped): nothing needs the binaries
  exit 0
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "pg-cluster: PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin;" \
    "install them: apt-get install postgresql (scripts/setup.sh does as root)" >&2
  exit 1
fi

as_owner=()
if [ "$(id -u)" = 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    echo "pg-cluster: running as root needs the 'postgres' user (Debian's postgresql package creates it)" >&2
    exit 1
  fi
  as_owner=(runuser -u postgres --)
fi

case "$action" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ ${#as_owner[@]} -eq 0 ] || chown postgres: "$dir"
    chmod 0700 "$dir"
    # -N: no fsync of the new files (a throwaway cluster); trust: only the socket's owner (and root) can reach a
    # folder of mode 0700, and TCP listens on loopback alone.
    "${as_owner[@]}" "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 -N \
      >"$dir/initdb.log" 2>&1 || {
      cat "$dir/initdb.log" >&2
      exit 1
    }
    listen="''"
    durability=""
    [ "${PG_CLUSTER_FSYNC:-on}" != off ] || durability="-c fsync=off -c full_page_writes=off"
    [ -z "$port" ] || listen=127.0.0.1
    "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -s \
      -o "-k $dir -c listen_addresses=$listen ${port:+-p $port} -c max_connections=200 $durability" start >&2 || {
      cat "$dir/server.log" >&2
      exit 1
    }
    "${as_owner[@]}" "$bindir/createdb" -h "$dir" ${port:+-p "$port"} -U postgres paddock
    echo "postgresql:///paddock?host=$dir&user=postgres${port:+&port=$port}"
    ;;
  restart)
    # pg_ctl restart starts it with the options it was started with (postmaster.opts).
    "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -s restart >&2
    ;;
  stop)
    "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -s stop >&2 || true
    rm -rf "$dir"
    ;;
  *) usage ;;
esac
