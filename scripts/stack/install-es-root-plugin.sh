#!/usr/bin/env bash
# Builds scripts/stack/es-root-plugin (GET / and HEAD / banner, which the
# integ-test-zip distribution lacks) and installs it into an Elasticsearch home.
#
#   bash scripts/stack/install-es-root-plugin.sh ES_HOME CACHE_DIR [PLUGIN_DIR]
#
# PLUGIN_DIR (a folder next to this script, default es-root-plugin) builds and installs
# another plugin of the same layout instead (the secured stack's es-security-analysis-plugin).
#
# Idempotent: exits 0 at once when the same build of the plugin is installed.
# Build output and logs go under CACHE_DIR/PLUGIN_DIR, never into the work tree.
# Needs Maven (Maven Central) and a JDK 21+: ES_JAVA_HOME if set, else Temurin 25.
set -euo pipefail

plugin_dir=${3:-es-root-plugin}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/$plugin_dir" && pwd)
NAME=$(sed -n 's/^name=//p' "$src/src/main/plugin-metadata/plugin-descriptor.properties")

say() { printf "[%s] %s\n" "$plugin_dir" "$*" >&2; }
die() { printf '[es-root-plugin] ERROR: %s\n' "$*" >&2; exit 1; }
# die_log WHY LOG: the one-line error, then the log's last lines for context.
die_log() {
  printf '[es-root-plugin] ERROR: %s (full log: %s)\n' "$1" "$2" >&2
  # (Maven on JDK 24+ warns about sun.misc.Unsafe; that is noise here.)
  [ -f "$2" ] && grep -v -e 'sun\.misc\.Unsafe' -e 'AbstractFuture\$UnsafeAtomicHelper' "$2" | sed 's/\x1b\[[0-9;]*m//g' | tail -n 15 | sed 's/^/    /' >&2
  exit 1
}

[ $# -eq 2 ] || [ $# -eq 3 ] || die "usage: $0 ES_HOME CACHE_DIR [PLUGIN_DIR]"
es_home=${1%/}
cache=${2%/}
[ -x "$es_home/bin/elasticsearch-plugin" ] || die "$es_home/bin/elasticsearch-plugin not found: ES_HOME is not an Elasticsearch home"

# The version of the Elasticsearch in ES_HOME, from its server jar (lib/elasticsearch-X.Y.Z.jar).
es_version=
for j in "$es_home"/lib/elasticsearch-[0-9]*.jar; do
  [ -f "$j" ] || continue
  es_version=${j##*/elasticsearch-}; es_version=${es_version%.jar}
done
[ -n "$es_version" ] || die "no lib/elasticsearch-<version>.jar in $es_home: cannot tell its version"

# A hash of the plugin's sources, written into the descriptor's version field: an
# install built from other sources (or for another Elasticsearch) is replaced.
src_hash=$(cd "$src" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
want_version="1-$src_hash"

installed_desc="$es_home/plugins/$NAME/plugin-descriptor.properties"
desc_value() { sed -n "s/^$1=//p" "$installed_desc" 2>/dev/null | head -n 1; }
is_installed() {
  [ -f "$installed_desc" ] && [ "$(desc_value version)" = "$want_version" ] \
    && [ "$(desc_value elasticsearch.version)" = "$es_version" ]
}
is_installed && exit 0

# A JDK 21+ with javac: it compiles the plugin (--release 21) and runs the plugin tool.
jdk=${ES_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
[ -x "$jdk/bin/javac" ] || die "no JDK at $jdk (set ES_JAVA_HOME to a JDK 21+ with javac)"
command -v mvn >/dev/null || die "Maven (mvn) is needed to build the plugin"

work="$cache/$plugin_dir"
mkdir -p "$work" || die "cannot create $work"
# One build/install at a time per cache (parallel `stack.sh up`s).
exec 9>"$work/.lock"
flock 9 || die "cannot lock $work/.lock"
is_installed && exit 0

build="$work/build-$es_version-$src_hash"
zip="$build/$NAME-$es_version.zip"
log="$work/build.log"
if [ ! -f "$zip" ]; then
  say "building the $NAME plugin for Elasticsearch $es_version (Maven, JDK $jdk)"
  rm -rf "$build"
  if ! JAVA_HOME="$jdk" mvn -B -q -Dstyle.color=never -f "$src/pom.xml" package \
      -Des.version="$es_version" -Dplugin.version="$want_version" -DbuildDirectory="$build" \
      >"$log" 2>&1 || [ ! -f "$zip" ]; then
    rm -rf "$build"
    die_log "building the $NAME plugin failed (is org.elasticsearch:elasticsearch:$es_version on Maven Central?)" "$log"
  fi
fi

log="$work/install.log"
if [ -d "$es_home/plugins/$NAME" ]; then
  say "replacing the installed $NAME plugin (built from other sources)"
  ES_JAVA_HOME="$jdk" "$es_home/bin/elasticsearch-plugin" remove --purge "$NAME" >"$log" 2>&1 \
    || die_log "elasticsearch-plugin remove $NAME failed" "$log"
fi
say "installing $NAME into $es_home"
ES_JAVA_HOME="$jdk" "$es_home/bin/elasticsearch-plugin" install --batch "file://$zip" >"$log" 2>&1 \
  || die_log "elasticsearch-plugin install failed" "$log"
is_installed || die_log "elasticsearch-plugin reported success but $installed_desc is missing or stale" "$log"
