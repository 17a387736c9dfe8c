#!/usr/bin/env bash
# The local stack: a real Kafka broker (KRaft), a real Elasticsearch and Redis on
# loopback, without Docker. Downloads come from Maven Central into a cache outside
# the work tree, so the second `up` on a machine takes seconds.
#
#   bash scripts/stack.sh up | down [server...] | status | owned   [--secure]
#
# --secure (or RXINGEST_STACK_SECURE=1): the secured stack instead (TLS, SASL, x-pack
# security, passwords; its own processes, ports and state: scripts/stack/secure.sh).
#
# Settings (environment):
#   KAFKA_PORT (9092)  KAFKA_CONTROLLER_PORT (9093)  ES_PORT (9200)  REDIS_PORT (6379)
#   KAFKA_VERSION (3.9.1)  ES_VERSION (9.2.4)  ES_HEAP (768m)
#   RXINGEST_SEARCH_ENGINE (elasticsearch | opensearch)  SEARCH_VERSION (ES_VERSION, or
#     OPENSEARCH_VERSION 2.19.4): which search engine runs on ES_PORT, e.g.
#     RXINGEST_SEARCH_ENGINE=opensearch SEARCH_VERSION=3.3.2 ES_PORT=9230 (scripts/stack/search-engine.sh)
#   KAFKA_CLUSTER_SIZE (1)  3: a 3-node KRaft cluster instead of the single broker, every node
#     broker + controller on 127.0.0.1, node N (1-3) at broker port KAFKA_PORT+2(N-1) and
#     controller port KAFKA_CONTROLLER_PORT+2(N-1): with the defaults brokers 9092, 9094,
#     9096 and controllers 9093, 9095, 9097. Topics default to replication 3, min ISR 2
#     (internal topics too); data in <state>/kafka-cluster, logs kafka-node-N.log.
#   KAFKA_NODE_HEAP (512m)  heap of each cluster node
#   RXINGEST_CACHE  (downloads; /var/cache/rxingest as root, else ~/.cache/rxingest)
#   RXINGEST_STACK_DIR (pids, logs and configs; <repo>/.stack)
#   RXINGEST_STACK_MODE  auto | native | docker  (auto: docker compose when an engine answers)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
ES_PORT=${ES_PORT:-9200}
REDIS_PORT=${REDIS_PORT:-6379}
KAFKA_VERSION=${KAFKA_VERSION:-3.9.1}
ES_VERSION=${ES_VERSION:-9.2.4}
ES_HEAP=${ES_HEAP:-768m}
ES_USER=${ES_USER:-rxingest}
KAFKA_CLUSTER_SIZE=${KAFKA_CLUSTER_SIZE:-1}
KAFKA_NODE_HEAP=${KAFKA_NODE_HEAP:-512m}
if [ "$(id -u)" = 0 ]; then default_cache=/var/cache/rxingest; else default_cache="${XDG_CACHE_HOME:-$HOME/.cache}/rxingest"; fi
CACHE=${RXINGEST_CACHE:-$default_cache}
STATE=${RXINGEST_STACK_DIR:-$here/.stack}
LOGS="$STATE/logs"
MODE=${RXINGEST_STACK_MODE:-auto}

say() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] ERROR: %s\n' "$*" >&2; exit 1; }
# fail_with SERVER WHY LOGFILE: one clear error with the log's last lines.
fail_with() {
  printf '[stack] ERROR: %s could not start: %s\n' "$1" "$2" >&2
  if [ -n "${3:-}" ] && [ -f "$3" ]; then
    printf '[stack] last lines of %s:\n' "$3" >&2
    tail -n 25 "$3" | sed 's/^/    /' >&2
  fi
  exit 1
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_for SECONDS PIDFILE COMMAND...: poll a readiness condition, never a blind sleep;
# give up at once if the process in PIDFILE (when given) has died.
wait_for() {
  local deadline=$((SECONDS + $1)) pidfile=$2; shift 2
  until "$@"; do
    [ -n "$pidfile" ] && ! pid_alive "$pidfile" && return 2
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.5
  done
}

docker_ready() {
  command -v docker >/dev/null 2>&1 && timeout 5 docker info >/dev/null 2>&1 && docker compose version >/dev/null 2>&1
}
use_docker() {
  case "$MODE" in
    docker) docker_ready || die "RXINGEST_STACK_MODE=docker but no Docker engine answers"; return 0 ;;
    native) return 1 ;;
    auto) docker_ready ;;
    *) die "RXINGEST_STACK_MODE='$MODE' is not one of auto, native, docker" ;;
  esac
}

# ---------------------------------------------------------------- Kafka
kafka_libs="$CACHE/kafka-$KAFKA_VERSION/libs"
# Kafka 4.x logs with log4j2 instead of log4j 1 (reload4j): its own pom (the log4j2
# binding) and log config. 3.x keeps kafka-pom.xml and kafka-log4j.properties.
if [ "${KAFKA_VERSION%%.*}" -ge 4 ] 2>/dev/null; then
  kafka_pom=kafka4-pom.xml kafka_logcfg=kafka4-log4j2.properties kafka_logprop=log4j2.configurationFile
else
  kafka_pom=kafka-pom.xml kafka_logcfg=kafka-log4j.properties kafka_logprop=log4j.configuration
fi
kafka_fetch() {
  [ -f "$kafka_libs/.complete" ] && return 0
  command -v mvn >/dev/null || die "Kafka: Maven (mvn) is needed to fetch the broker jars from Maven Central"
  say "fetching Kafka $KAFKA_VERSION jars from Maven Central into $kafka_libs"
  mkdir -p "$kafka_libs"
  local pomdir; pomdir=$(mktemp -d)
  sed "s/@KAFKA_VERSION@/$KAFKA_VERSION/" "$here/scripts/stack/$kafka_pom" > "$pomdir/pom.xml"
  if ! mvn -q -f "$pomdir/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$kafka_libs" > "$pomdir/mvn.log" 2>&1; then
    fail_with Kafka "Maven could not fetch kafka_2.13:$KAFKA_VERSION" "$pomdir/mvn.log"
  fi
  touch "$kafka_libs/.complete"; rm -rf "$pomdir"
}

kafka_up() {
  if port_open "$KAFKA_PORT"; then
    say "Kafka: something already listens on 127.0.0.1:$KAFKA_PORT; using it"; return 0
  fi
  kafka_fetch
  local dir="$STATE/kafka" cfg="$STATE/kafka/server.properties" log="$LOGS/kafka.log"
  mkdir -p "$dir/data" "$LOGS"
  sed -e "s|@KAFKA_PORT@|$KAFKA_PORT|g" -e "s|@CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" \
      -e "s|@DATA@|$dir/data|g" "$here/scripts/stack/kafka-server.properties.tmpl" > "$cfg"
  local cp="$kafka_libs/*" logcfg="$dir/log4j.properties" toolopts=()
  [ "$kafka_pom" = kafka-pom.xml ] || logcfg="$dir/log4j2.properties"
  cp "$here/scripts/stack/$kafka_logcfg" "$logcfg"
  local jopts=(-Xms512m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true -D$kafka_logprop="file:$logcfg")
  # log4j2 without a config complains on stderr (into the log); give the tool ours.
  [ "$kafka_pom" = kafka-pom.xml ] || toolopts=(-D$kafka_logprop="file:$logcfg")
  if [ ! -f "$dir/data/meta.properties" ]; then
    local id; id=$(java "${toolopts[@]}" -cp "$cp" kafka.tools.StorageTool random-uuid 2>>"$log")
    java "${jopts[@]}" -cp "$cp" kafka.tools.StorageTool format -t "$id" -c "$cfg" >>"$log" 2>&1 \
      || fail_with Kafka "formatting the KRaft storage failed" "$log"
  fi
  say "starting Kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT"
  nohup java "${jopts[@]}" -cp "$cp" kafka.Kafka "$cfg" >>"$log" 2>&1 &
  echo $! > "$STATE/kafka.pid"
  wait_for 90 "$STATE/kafka.pid" kafka_ready || {
    pid_alive "$STATE/kafka.pid" || fail_with Kafka "the JVM exited" "$log"
    fail_with Kafka "not ready on port $KAFKA_PORT after 90 s" "$log"
  }
}
# Ready means the broker answers on its port and has registered with the controller.
kafka_ready() {
  port_open "$KAFKA_PORT" && grep -q "Kafka Server started" "$LOGS/kafka.log" 2>/dev/null
}

# The 3-node cluster (KAFKA_CLUSTER_SIZE=3) lives in scripts/stack/kafka-cluster.sh.
# shellcheck source=stack/kafka-cluster.sh
. "$here/scripts/stack/kafka-cluster.sh"

# ---------------------------------------------------------------- the search engine
# Elasticsearch (default) or OpenSearch: scripts/stack/search-engine.sh.
# shellcheck source=stack/search-engine.sh
. "$here/scripts/stack/search-engine.sh"

# ---------------------------------------------------------------- Redis
redis_ready() { [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; }
redis_up() {
  if redis_ready; then say "Redis: already answering on 127.0.0.1:$REDIS_PORT; using it"; return 0; fi
  if port_open "$REDIS_PORT"; then
    die "Redis: port $REDIS_PORT is taken by something that is not Redis (set REDIS_PORT)"
  fi
  command -v redis-server >/dev/null || die "Redis: redis-server not found (apt-get install redis-server)"
  mkdir -p "$STATE/redis" "$LOGS"
  say "starting redis-server on 127.0.0.1:$REDIS_PORT"
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no --dir "$STATE/redis" \
    --daemonize yes --pidfile "$STATE/redis.pid" --logfile "$LOGS/redis.log" \
    || fail_with Redis "redis-server refused to start" "$LOGS/redis.log"
  wait_for 20 "" redis_ready || fail_with Redis "no PONG on port $REDIS_PORT after 20 s" "$LOGS/redis.log"
}

# ---------------------------------------------------------------- commands
stop_pidfile() {
  local name=$1 file=$2
  if pid_alive "$file"; then
    local pid; pid=$(cat "$file")
    say "stopping $name (pid $pid)"
    kill -TERM -- "$pid" 2>/dev/null || true
    # Children (ES forks a controller via runuser) go with it; wait, then insist.
    local deadline=$((SECONDS + 60))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.3; done
    kill -0 "$pid" 2>/dev/null && { say "$name did not stop in 60 s; killing"; kill -KILL "$pid" 2>/dev/null || true; }
  fi
  rm -f "$file"
}


cmd_up() {
  mkdir -p "$STATE" "$LOGS"
  # The compose file has one broker: the cluster always runs natively.
  if [ "$KAFKA_CLUSTER_SIZE" = 3 ] && [ "$MODE" = docker ]; then
    die "KAFKA_CLUSTER_SIZE=3 runs natively only (docker-compose.yml has one broker); unset RXINGEST_STACK_MODE=docker"
  fi
  if [ "$KAFKA_CLUSTER_SIZE" != 3 ] && use_docker; then
    say "Docker engine found: docker compose up"
    docker compose -f "$here/docker-compose.yml" up -d --wait; return
  fi
  redis_up
  if [ "$KAFKA_CLUSTER_SIZE" = 3 ]; then cluster_up; else kafka_up; fi
  es_up
  cmd_status
}

cmd_down() {
  # With names, stop only those (a test run stops what it started and nothing else).
  if [ $# -gt 0 ]; then
    local s; for s in "$@"; do
      case "$s" in
        elasticsearch) stop_pidfile "$engine_label" "$STATE/elasticsearch.pid" ;;
        kafka) stop_pidfile Kafka "$STATE/kafka.pid"; cluster_down ;;
        redis) stop_pidfile Redis "$STATE/redis.pid" ;;
        *) die "unknown server '$s' (elasticsearch, kafka, redis)" ;;
      esac
    done
    return 0
  fi
  if [ "$MODE" != native ] && docker_ready && [ -n "$(docker compose -f "$here/docker-compose.yml" ps -q 2>/dev/null)" ]; then
    docker compose -f "$here/docker-compose.yml" down
  fi
  stop_pidfile "$engine_label" "$STATE/elasticsearch.pid"
  for p in $(es_leftovers); do kill -TERM "$p" 2>/dev/null || true; done
  stop_pidfile Kafka "$STATE/kafka.pid"
  cluster_down
  stop_pidfile Redis "$STATE/redis.pid"
  if sec_any_up; then secure_down; fi
  say "down (data kept in $STATE and $(es_run_dir); remove them for a fresh start)"
}

cmd_status() {
  local ok=0
  if redis_ready; then echo "redis          up    redis://127.0.0.1:$REDIS_PORT"; else echo "redis          down"; ok=1; fi
  if [ "$KAFKA_CLUSTER_SIZE" = 3 ] || cluster_any_up; then cluster_status || ok=1
  elif port_open "$KAFKA_PORT"; then echo "kafka          up    127.0.0.1:$KAFKA_PORT"; else echo "kafka          down"; ok=1; fi
  es_status || ok=1
  if sec_any_up; then echo "secure stack   up    (npm run stack:status -- --secure)"; fi
  return $ok
}

# Which servers this script started (so a test run can leave the stack as it found it).
cmd_owned() {
  pid_alive "$STATE/redis.pid" && echo redis
  { pid_alive "$STATE/kafka.pid" || cluster_any_up; } && echo kafka
  pid_alive "$STATE/elasticsearch.pid" && echo elasticsearch
  return 0
}

# --secure anywhere in the arguments (or RXINGEST_STACK_SECURE=1) selects the secured stack;
# the plain commands know about it too (status mentions it, a bare down stops it).
# shellcheck source=stack/secure.sh
. "$here/scripts/stack/secure.sh"
secure=${RXINGEST_STACK_SECURE:-0}
args=()
for a in "$@"; do
  if [ "$a" = --secure ]; then secure=1; else args+=("$a"); fi
done
set -- "${args[@]+"${args[@]}"}"
if [ "$secure" = 1 ] || [ "$secure" = true ]; then
  case "${1:-}" in
    up) secure_up; exit ;;
    down) secure_down; exit ;;
    status) secure_status; exit ;;
    owned) secure_owned; exit ;;
  esac
fi

case "${1:-}" in
  up) cmd_up ;;
  down) shift; cmd_down "$@" ;;
  status) cmd_status ;;
  owned) cmd_owned ;;
  -h|--help|help|"") sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command '$1' (use up, down, status)" ;;
esac
