# shellcheck shell=bash
# The 3-node KRaft cluster of the local stack (KAFKA_CLUSTER_SIZE=3), sourced by
# scripts/stack.sh (it uses that script's settings and helpers). Every node is broker +
# controller on 127.0.0.1: node N at broker port KAFKA_PORT+2(N-1), controller port
# KAFKA_CONTROLLER_PORT+2(N-1). The single-broker stack (the default, what CI runs) does
# not come through here at all.

case "$KAFKA_CLUSTER_SIZE" in
  1 | 3) ;;
  *) die "KAFKA_CLUSTER_SIZE='$KAFKA_CLUSTER_SIZE' is invalid: expected 1 (one broker, the default) or 3 (a 3-node KRaft cluster)" ;;
esac

CLUSTER_NODES=(1 2 3)
cluster_dir="$STATE/kafka-cluster"
node_port() { echo $((KAFKA_PORT + 2 * ($1 - 1))); }
node_controller_port() { echo $((KAFKA_CONTROLLER_PORT + 2 * ($1 - 1))); }
node_pidfile() { echo "$STATE/kafka-node-$1.pid"; }
node_log() { echo "$LOGS/kafka-node-$1.log"; }
cluster_brokers() {
  local n out=()
  for n in "${CLUSTER_NODES[@]}"; do out+=("127.0.0.1:$(node_port "$n")"); done
  (IFS=,; echo "${out[*]}")
}

cluster_any_up() {
  local n; for n in "${CLUSTER_NODES[@]}"; do pid_alive "$(node_pidfile "$n")" && return 0; done; return 1
}

# Ready: the node answers and logged its start (a combined node logs it once it has
# joined the quorum and registered as a broker).
node_ready() { port_open "$(node_port "$1")" && grep -q "Kafka Server started" "$(node_log "$1")" 2>/dev/null; }
cluster_ready() { local n; for n in "${CLUSTER_NODES[@]}"; do node_ready "$n" || return 1; done; }
# Any node whose JVM died makes the wait give up at once.
cluster_alive() { local n; for n in "${CLUSTER_NODES[@]}"; do pid_alive "$(node_pidfile "$n")" || return 1; done; }

cluster_up() {
  if cluster_any_up && cluster_ready; then say "Kafka cluster: already up ($(cluster_brokers))"; return 0; fi
  local n
  for n in "${CLUSTER_NODES[@]}"; do
    pid_alive "$(node_pidfile "$n")" && continue
    port_open "$(node_port "$n")" && die "Kafka cluster: port $(node_port "$n") (node $n) is taken; a single-broker stack? stop it first (npm run stack:down -- kafka) or set KAFKA_PORT"
    port_open "$(node_controller_port "$n")" && die "Kafka cluster: controller port $(node_controller_port "$n") (node $n) is taken; set KAFKA_CONTROLLER_PORT"
  done
  kafka_fetch
  mkdir -p "$cluster_dir" "$LOGS"
  local cp="$kafka_libs/*" logcfg="$cluster_dir/log4j.properties" toolopts=()
  [ "$kafka_pom" = kafka-pom.xml ] || logcfg="$cluster_dir/log4j2.properties"
  cp "$here/scripts/stack/$kafka_logcfg" "$logcfg"
  [ "$kafka_pom" = kafka-pom.xml ] || toolopts=(-D$kafka_logprop="file:$logcfg")
  # Each node's heap is small on purpose: three JVMs share the machine with ES and the workers.
  local jopts=(-Xms256m "-Xmx$KAFKA_NODE_HEAP" -XX:+UseG1GC -Djava.awt.headless=true -D$kafka_logprop="file:$logcfg")
  local voters=() id
  for n in "${CLUSTER_NODES[@]}"; do voters+=("$n@127.0.0.1:$(node_controller_port "$n")"); done
  # One cluster id for every node, kept so that a restart finds its formatted storage.
  [ -f "$cluster_dir/cluster.id" ] || java "${toolopts[@]}" -cp "$cp" kafka.tools.StorageTool random-uuid \
    > "$cluster_dir/cluster.id" 2>>"$(node_log 1)"
  id=$(cat "$cluster_dir/cluster.id")
  for n in "${CLUSTER_NODES[@]}"; do
    pid_alive "$(node_pidfile "$n")" && continue
    local dir="$cluster_dir/node-$n" cfg="$cluster_dir/node-$n/server.properties"
    mkdir -p "$dir/data"
    sed -e "s|@NODE_ID@|$n|g" -e "s|@VOTERS@|$(IFS=,; echo "${voters[*]}")|g" \
        -e "s|@KAFKA_PORT@|$(node_port "$n")|g" -e "s|@CONTROLLER_PORT@|$(node_controller_port "$n")|g" \
        -e "s|@DATA@|$dir/data|g" "$here/scripts/stack/kafka-cluster.properties.tmpl" > "$cfg"
    if [ ! -f "$dir/data/meta.properties" ]; then
      java "${jopts[@]}" -cp "$cp" kafka.tools.StorageTool format -t "$id" -c "$cfg" >>"$(node_log "$n")" 2>&1 \
        || fail_with "Kafka node $n" "formatting the KRaft storage failed" "$(node_log "$n")"
    fi
    say "starting Kafka $KAFKA_VERSION node $n on 127.0.0.1:$(node_port "$n") (controller :$(node_controller_port "$n"), heap $KAFKA_NODE_HEAP)"
    nohup java "${jopts[@]}" -cp "$cp" kafka.Kafka "$cfg" >>"$(node_log "$n")" 2>&1 &
    echo $! > "$(node_pidfile "$n")"
  done
  # All three start together: none can finish before a quorum of controllers is up.
  local deadline=$((SECONDS + 120))
  until cluster_ready; do
    if ! cluster_alive; then
      for n in "${CLUSTER_NODES[@]}"; do
        pid_alive "$(node_pidfile "$n")" || fail_with "Kafka node $n" "the JVM exited" "$(node_log "$n")"
      done
    fi
    [ $SECONDS -ge $deadline ] && fail_with "Kafka cluster" "not every node ready after 120 s" "$(node_log 1)"
    sleep 0.5
  done
}

# All nodes at once: one by one, the last node's controlled shutdown waits for a controller
# quorum that is already gone, and hangs until it is killed.
cluster_down() {
  local n pids=() deadline=$((SECONDS + 60))
  for n in "${CLUSTER_NODES[@]}"; do
    pid_alive "$(node_pidfile "$n")" || { rm -f "$(node_pidfile "$n")"; continue; }
    pids+=("$(cat "$(node_pidfile "$n")")")
    say "stopping Kafka node $n (pid ${pids[-1]})"
  done
  [ ${#pids[@]} -eq 0 ] && return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  while [ $SECONDS -lt $deadline ]; do
    local alive=0 p; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.3
  done
  for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null && { say "Kafka (pid $p) did not stop in 60 s; killing"; kill -KILL "$p" 2>/dev/null || true; }
  done
  for n in "${CLUSTER_NODES[@]}"; do rm -f "$(node_pidfile "$n")"; done
}

cluster_status() {
  local n ok=0 up=()
  for n in "${CLUSTER_NODES[@]}"; do
    if pid_alive "$(node_pidfile "$n")" && port_open "$(node_port "$n")"; then up+=("$n"); else ok=1; fi
  done
  if [ $ok = 0 ]; then echo "kafka          up    $(cluster_brokers) (3-node KRaft cluster)"
  elif [ ${#up[@]} -gt 0 ]; then echo "kafka          degraded    nodes up: ${up[*]} of 3 ($(cluster_brokers))"
  else echo "kafka          down  (3-node cluster)"; fi
  return $ok
}
