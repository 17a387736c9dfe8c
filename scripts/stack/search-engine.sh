# The stack's search engine, sourced by scripts/stack.sh: Elasticsearch (default) or
# OpenSearch, from Maven Central's integ-test-zip distributions, into the same cache.
#
#   RXINGEST_SEARCH_ENGINE  elasticsearch (default) | opensearch
#   SEARCH_VERSION          the engine's version; for Elasticsearch ES_VERSION (9.2.4) is the
#                           default, for OpenSearch OPENSEARCH_VERSION (2.19.4)
#   ES_PORT, ES_HEAP        its HTTP port and heap, whichever the engine
#   ES_EXTRA_SETTINGS       lines added to its elasticsearch.yml / opensearch.yml (key: value)
#   ES_JAVA_HOME / OPENSEARCH_JAVA_HOME   the JDK (else found under /usr/lib/jvm:
#                           Elasticsearch and OpenSearch 3 need 21+, OpenSearch 2 runs on 11-21)
#   RXINGEST_SEARCH_SECURE=1  TLS and basic auth, user admin: its password in
#                           <state>/search-admin-password, the CA in <state>/search-ca.pem.
#                           OpenSearch: its security plugin (from Maven Central) with the
#                           plugin's demo certificates. Elasticsearch: x-pack security with a
#                           file-realm superuser and a CA and certificate made here (openssl),
#                           and an API key of admin's in <state>/search-api-key.
#                           (The secured stack with Kafka and Redis too is `--secure`.)
# The pid file is <state>/elasticsearch.pid and `down elasticsearch` stops it, whichever engine.

SEARCH_ENGINE=${RXINGEST_SEARCH_ENGINE:-elasticsearch}
case "$SEARCH_ENGINE" in
  elasticsearch)
    ES_VERSION=${SEARCH_VERSION:-$ES_VERSION}
    engine_version=$ES_VERSION engine_label=Elasticsearch engine_bin=elasticsearch
    engine_group=org.elasticsearch.distribution.integ-test-zip ;;
  opensearch)
    engine_version=${SEARCH_VERSION:-${OPENSEARCH_VERSION:-2.19.4}} engine_label=OpenSearch engine_bin=opensearch
    engine_group=org.opensearch.distribution.integ-test-zip ;;
  *) die "RXINGEST_SEARCH_ENGINE='$SEARCH_ENGINE' is not one of elasticsearch, opensearch" ;;
esac
engine_major=${engine_version%%.*}
es_home="$CACHE/elasticsearch-$ES_VERSION"
engine_home="$CACHE/$engine_bin-$engine_version"
SEARCH_SECURE=${RXINGEST_SEARCH_SECURE:-0}
if [ "$SEARCH_SECURE" = 1 ]; then
  plain_home=$engine_home engine_home="$CACHE/$engine_bin-$engine_version-secure"
fi
engine_scheme=http; [ "$SEARCH_SECURE" = 1 ] && engine_scheme=https

engine_fetch() {
  [ -x "$engine_home/bin/$engine_bin" ] && return 0
  command -v mvn >/dev/null || die "$engine_label: Maven (mvn) is needed to fetch the distribution from Maven Central"
  command -v unzip >/dev/null || die "$engine_label: unzip is needed (apt-get install unzip)"
  say "fetching $engine_label $engine_version (integ-test-zip) from Maven Central into $CACHE"
  mkdir -p "$CACHE"
  local tmp; tmp=$(mktemp -d)
  if ! mvn -q dependency:copy -Dartifact="$engine_group:$engine_bin:$engine_version:zip" \
      -DoutputDirectory="$tmp" > "$tmp/mvn.log" 2>&1; then
    fail_with "$engine_label" "Maven could not fetch integ-test-zip:$engine_bin:$engine_version" "$tmp/mvn.log"
  fi
  unzip -q "$tmp/$engine_bin-$engine_version.zip" -d "$tmp/x"
  # Two `up`s fetching at once: the first to finish wins, the other keeps it.
  if [ ! -x "$engine_home/bin/$engine_bin" ]; then
    rm -rf "$engine_home"; mv "$tmp/x/$engine_bin-$engine_version" "$engine_home"
  fi
  chmod -R a+rX "$engine_home"; rm -rf "$tmp"
}
# A copy of the OpenSearch home with the security plugin and its demo configuration (TLS
# certificates, an admin with a random password): made once per version, in the cache.
os_secure_fetch() {
  [ -f "$engine_home/.rxingest-ready" ] && return 0
  local secure_home=$engine_home jh; engine_home=$plain_home; engine_fetch; engine_home=$secure_home
  jh=$(java_home_for_engine) || die "$engine_label $engine_version needs $(java_wanted); none found under /usr/lib/jvm"
  local tmp; tmp=$(mktemp -d)
  say "adding the security plugin $engine_version.0 (Maven Central) to a copy of OpenSearch $engine_version"
  mvn -q dependency:copy -Dartifact="org.opensearch.plugin:opensearch-security:$engine_version.0:zip" \
    -DoutputDirectory="$tmp" > "$tmp/mvn.log" 2>&1 \
    || fail_with OpenSearch "Maven could not fetch opensearch-security:$engine_version.0" "$tmp/mvn.log"
  rm -rf "$engine_home.tmp"; cp -a "$plain_home" "$engine_home.tmp"
  OPENSEARCH_JAVA_HOME="$jh" "$engine_home.tmp/bin/opensearch-plugin" install --batch \
    "file://$tmp/opensearch-security-$engine_version.0.zip" > "$tmp/install.log" 2>&1 \
    || fail_with OpenSearch "the security plugin could not be installed" "$tmp/install.log"
  # Strong enough for the plugin's password rules; a development stack's secret, kept beside it.
  local pw; pw="Rx$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 16)-9a"
  OPENSEARCH_JAVA_HOME="$jh" OPENSEARCH_INITIAL_ADMIN_PASSWORD="$pw" \
    bash "$engine_home.tmp/plugins/opensearch-security/tools/install_demo_configuration.sh" -y -i > "$tmp/demo.log" 2>&1 \
    || fail_with OpenSearch "the security plugin's demo configuration failed" "$tmp/demo.log"
  printf '%s' "$pw" > "$engine_home.tmp/.rxingest-admin-password"
  touch "$engine_home.tmp/.rxingest-ready"
  rm -rf "$engine_home"; mv "$engine_home.tmp" "$engine_home"; chmod -R a+rX "$engine_home"; rm -rf "$tmp"
}
engine_curl() {
  if [ "$SEARCH_SECURE" = 1 ]; then
    curl -fsS -m 2 --cacert "$STATE/search-ca.pem" -u "admin:$(cat "$STATE/search-admin-password" 2>/dev/null)" "$@"
  else curl -fsS -m 2 "$@"; fi
}

# Elasticsearch with x-pack security (the integ-test-zip has it), in the node's config folder
# CONF: TLS on HTTP with a CA and server certificate made anew at every `up` (openssl), and a
# file-realm superuser admin with a random password.
es_secure_config() {
  local conf=$1 jh=$2 c="$STATE/search-certs" log="$LOGS/search-secure.log"
  command -v openssl >/dev/null || die "Elasticsearch (secured): openssl is needed to make the certificates"
  rm -rf "$c"; mkdir -p "$c"
  {
    openssl req -x509 -new -noenc -newkey rsa:2048 -days 30 -subj "/CN=rxingest search CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout "$c/ca.key" -out "$c/ca.crt"
    openssl req -new -noenc -newkey rsa:2048 -subj "/CN=rxingest-search" -keyout "$c/server.key" -out "$c/server.csr"
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" > "$c/server.ext"
    openssl x509 -req -in "$c/server.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial -days 30 \
      -extfile "$c/server.ext" -out "$c/server.crt"
  } > "$log" 2>&1 || fail_with "Elasticsearch (secured)" "openssl could not make the certificates" "$log"
  mkdir -p "$conf/certs"; cp "$c/ca.crt" "$c/server.crt" "$c/server.key" "$conf/certs/"
  sed -i 's/^xpack.security.enabled: false$/xpack.security.enabled: true/' "$conf/elasticsearch.yml"
  printf '%s\n' "xpack.security.http.ssl.enabled: true" "xpack.security.http.ssl.key: certs/server.key" \
    "xpack.security.http.ssl.certificate: certs/server.crt" \
    'xpack.security.http.ssl.certificate_authorities: [ "certs/ca.crt" ]' >> "$conf/elasticsearch.yml"
  # Strong enough for any password rule; a development stack's secret, kept beside it.
  local pw; pw="Rx$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 16)-9a"
  ES_JAVA_HOME="$jh" ES_PATH_CONF="$conf" "$engine_home/bin/elasticsearch-users" useradd admin -p "$pw" -r superuser \
    >> "$log" 2>&1 || fail_with "Elasticsearch (secured)" "elasticsearch-users could not add the user admin" "$log"
  cp "$c/ca.crt" "$STATE/search-ca.pem"
  printf '%s' "$pw" > "$STATE/search-admin-password"; chmod 600 "$STATE/search-admin-password"
}

# A copy of the Elasticsearch home with the analysis components the .security index needs
# (API keys live there), which the integ-test-zip lacks: our stand-in plugin, built against
# that version (the secured stack's plugin, scripts/stack/es-security-analysis-plugin).
es_secure_fetch() {
  local secure_home=$engine_home jh; engine_home=$plain_home; engine_fetch; engine_home=$secure_home
  jh=$(java_home_for_es) || die "Elasticsearch $engine_version needs $(java_wanted); none found under /usr/lib/jvm"
  if [ ! -x "$engine_home/bin/elasticsearch" ]; then
    rm -rf "$engine_home.tmp"; cp -a "$plain_home" "$engine_home.tmp" && mv "$engine_home.tmp" "$engine_home" \
      || die "Elasticsearch (secured): could not copy $plain_home to $engine_home"
  fi
  ES_JAVA_HOME="$jh" bash "$here/scripts/stack/install-es-root-plugin.sh" "$engine_home" "$CACHE" es-security-analysis-plugin \
    || die "Elasticsearch (secured): the security-analysis plugin could not be built or installed (see above)"
}
# An API key of admin's (the .security index made on the way), for the clients that use one.
es_secure_api_key() {
  local answer key
  answer=$(engine_curl -m 60 -X POST "https://127.0.0.1:$ES_PORT/_security/api_key" \
    -H 'Content-Type: application/json' -d '{"name":"rxingest-dev"}') \
    || fail_with "Elasticsearch (secured)" "no API key could be made" "$LOGS/elasticsearch.log"
  key=$(printf '%s' "$answer" | sed -n 's/.*"encoded" *: *"\([^"]*\)".*/\1/p')
  [ -n "$key" ] || die "Elasticsearch (secured): the API key answer has no encoded key"
  printf '%s' "$key" > "$STATE/search-api-key"; chmod 600 "$STATE/search-api-key"
}

# The secured stack (Elasticsearch only) fetches through this name.
es_fetch() {
  local engine_home="$es_home" engine_bin=elasticsearch engine_label=Elasticsearch engine_version=$ES_VERSION
  local engine_group=org.elasticsearch.distribution.integ-test-zip
  engine_fetch
}

java_major() { "$1/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/{print $2}'; }
# java_between MIN MAX: the first JDK under /usr/lib/jvm whose major version is in MIN..MAX.
java_between() {
  local j v
  for j in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*; do
    [ -x "$j/bin/java" ] || continue
    v=$(java_major "$j"); v=${v%%.*}
    if [ "$v" -ge "$1" ] 2>/dev/null && [ "$v" -le "$2" ]; then echo "$j"; return; fi
  done
  return 1
}
java_home_for_es() {
  # Elasticsearch 8.19 and 9 run on Java 21+; the machines' default is 17.
  if [ -n "${ES_JAVA_HOME:-}" ]; then echo "$ES_JAVA_HOME"; return; fi
  java_between 21 99
}
# OpenSearch 2 uses the Java security manager, which Java 24 removed: 11-21. OpenSearch 3: 21+.
java_home_for_engine() {
  [ "$SEARCH_ENGINE" = elasticsearch ] && { java_home_for_es; return; }
  if [ -n "${OPENSEARCH_JAVA_HOME:-}" ]; then echo "$OPENSEARCH_JAVA_HOME"; return; fi
  if [ "$engine_major" -le 2 ] 2>/dev/null; then java_between 11 21; else java_between 21 99; fi
}
java_wanted() {
  if [ "$SEARCH_ENGINE" = opensearch ] && [ "$engine_major" -le 2 ] 2>/dev/null; then echo "Java 11-21 (OPENSEARCH_JAVA_HOME)"
  elif [ "$SEARCH_ENGINE" = opensearch ]; then echo "Java 21+ (OPENSEARCH_JAVA_HOME)"
  else echo "Java 21+ (ES_JAVA_HOME)"; fi
}

# Elasticsearch and OpenSearch refuse to run as root: as root we run them as an unprivileged
# user, whose data and config live where that user can write (not under /root).
es_run_dir() {
  local name=es; [ "$SEARCH_ENGINE" = opensearch ] && name=opensearch
  if [ "$(id -u)" = 0 ]; then echo "/var/lib/rxingest/$name-$ES_PORT"; else echo "$STATE/$SEARCH_ENGINE"; fi
}
# as_es_user DIR LABEL: as root, gives DIR to the unprivileged user and sets the caller's
# `runner` to the command prefix that runs as that user (empty otherwise).
as_es_user() {
  [ "$(id -u)" = 0 ] || return 0
  id -u "$ES_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$ES_USER" \
    || die "$2: could not create the unprivileged user '$ES_USER'"
  chown -R "$ES_USER" "$1"
  runner=(runuser -u "$ES_USER" --)
}
es_up() {
  if port_open "$ES_PORT"; then
    say "$engine_label: something already listens on 127.0.0.1:$ES_PORT; using it"; return 0
  fi
  if [ "$SEARCH_SECURE" = 1 ] && [ "$SEARCH_ENGINE" = opensearch ]; then os_secure_fetch
  elif [ "$SEARCH_SECURE" = 1 ]; then es_secure_fetch
  else engine_fetch; fi
  local jh; jh=$(java_home_for_engine) || die "$engine_label $engine_version needs $(java_wanted); none found under /usr/lib/jvm"
  # The integ-test-zip lacks the rest-root module, so `GET /` answers 405; our small plugin
  # restores the usual banner (version, tagline). It is built against Elasticsearch 9's API.
  if [ "$SEARCH_ENGINE" = elasticsearch ] && [ "$engine_major" -ge 9 ]; then
    ES_JAVA_HOME="$jh" bash "$here/scripts/stack/install-es-root-plugin.sh" "$engine_home" "$CACHE" \
      || die "Elasticsearch: the root-endpoint plugin could not be built or installed (see above)"
  fi
  local run; run=$(es_run_dir)
  local log="$LOGS/elasticsearch.log"
  mkdir -p "$run/data" "$run/logs" "$LOGS"
  rm -rf "$run/config"; cp -r "$engine_home/config" "$run/config"
  sed -e "s|@ES_PORT@|$ES_PORT|g" -e "s|@DATA@|$run/data|g" -e "s|@LOGS@|$run/logs|g" \
      "$here/scripts/stack/$engine_bin.yml.tmpl" > "$run/config/$engine_bin.yml"
  [ -n "${ES_EXTRA_SETTINGS:-}" ] && printf '%s\n' "$ES_EXTRA_SETTINGS" >> "$run/config/$engine_bin.yml"
  if [ "$SEARCH_SECURE" = 1 ] && [ "$SEARCH_ENGINE" = elasticsearch ]; then
    es_secure_config "$run/config" "$jh"
  elif [ "$SEARCH_SECURE" = 1 ]; then
    sed -n '/Start OpenSearch Security Demo/,/End OpenSearch Security Demo/p' "$engine_home/config/opensearch.yml" \
      | grep -v '^node.max_local_storage_nodes' >> "$run/config/opensearch.yml"
    cp "$engine_home/config/root-ca.pem" "$STATE/search-ca.pem"
    cp "$engine_home/.rxingest-admin-password" "$STATE/search-admin-password"
    chmod 600 "$STATE/search-admin-password"
  fi
  # OpenSearch's jvm.options put the GC log and heap dumps under its home (the shared cache).
  [ "$SEARCH_ENGINE" = opensearch ] && sed -i -e "s|file=logs/gc.log|file=$run/logs/gc.log|" \
    -e "s|-Xloggc:logs/gc.log|-Xloggc:$run/logs/gc.log|" -e "s|HeapDumpPath=data|HeapDumpPath=$run/data|" \
    "$run/config/jvm.options"
  local runner=(); as_es_user "$run" "$engine_label"
  local envs=(ES_JAVA_HOME="$jh" ES_PATH_CONF="$run/config" ES_JAVA_OPTS="-Xms$ES_HEAP -Xmx$ES_HEAP ${ES_EXTRA_JAVA_OPTS:-}")
  [ "$SEARCH_ENGINE" = opensearch ] && envs=(OPENSEARCH_JAVA_HOME="$jh" OPENSEARCH_PATH_CONF="$run/config" \
    OPENSEARCH_JAVA_OPTS="-Xms$ES_HEAP -Xmx$ES_HEAP ${ES_EXTRA_JAVA_OPTS:-}")
  say "starting $engine_label $engine_version on $engine_scheme://127.0.0.1:$ES_PORT (Java: $jh, heap $ES_HEAP)"
  # The root shell opens the log file, so the log can live in the work tree.
  nohup "${runner[@]}" env "${envs[@]}" "$engine_home/bin/$engine_bin" >>"$log" 2>&1 &
  echo $! > "$STATE/elasticsearch.pid"
  wait_for 180 "$STATE/elasticsearch.pid" es_ready || {
    pid_alive "$STATE/elasticsearch.pid" || fail_with "$engine_label" "the JVM exited" "$log"
    fail_with "$engine_label" "cluster not green/yellow on port $ES_PORT after 180 s" "$log"
  }
  if [ "$SEARCH_SECURE" = 1 ] && [ "$SEARCH_ENGINE" = elasticsearch ]; then es_secure_api_key; fi
}
es_ready() {
  engine_curl "$engine_scheme://127.0.0.1:$ES_PORT/_cluster/health?wait_for_status=yellow&timeout=1s" >/dev/null 2>&1
}
es_leftovers() {
  pgrep -f "org\.(elasticsearch|opensearch)\.bootstrap\.[A-Za-z]+.*$(es_run_dir)/config" || true
  pgrep -f "$(es_run_dir)/.*controller" || true
}
es_status() {
  if es_ready; then
    local v; v=$(engine_curl "$engine_scheme://127.0.0.1:$ES_PORT/_nodes/_local?filter_path=nodes.*.version" | sed -n 's/.*"version" *: *"\([^"]*\)".*/\1/p')
    printf '%-14s up    %s://127.0.0.1:%s (version %s)\n' "$SEARCH_ENGINE" "$engine_scheme" "$ES_PORT" "$v"
  else printf '%-14s down\n' "$SEARCH_ENGINE"; return 1; fi
}
