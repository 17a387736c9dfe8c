#!/bin/sh
# The container image's install and build steps, one subcommand per RUN of the Dockerfile.
# The Dockerfile runs them from /app; so does its recipe test
# (test/integration/install/install-container-recipe.test.ts), which is how the test cannot drift
# from the image.
#
#   deps      build stage: every dependency, the dev ones included (to compile)
#   compile   build stage: TypeScript to dist/
#   runtime   runtime stage: the production dependencies only
set -eu

# npm ci's postinstall (patch-package) patches kafkajs from patches/. Without that folder it
# prints "No patch files found" and exits 0, and the worker later refuses to start on the
# unpatched library: stop the build here instead, with the reason.
require_patches() {
  for patch in patches/*.patch; do
    if [ -f "$patch" ]; then return 0; fi
  done
  echo "build-steps.sh: no patches/*.patch in $(pwd): copy patches/ in before installing" >&2
  exit 1
}

case "${1:-}" in
  deps)
    require_patches
    npm ci --no-audit --no-fund
    ;;
  compile)
    npm run build
    ;;
  runtime)
    require_patches
    # patch-package is a production dependency: --omit=dev keeps the postinstall working.
    npm ci --omit=dev --no-audit --no-fund
    npm cache clean --force
    ;;
  *)
    echo "usage: build-steps.sh deps|compile|runtime" >&2
    exit 2
    ;;
esac
