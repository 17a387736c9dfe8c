# syntax=docker/dockerfile:1
# The rxingest worker. Build: docker build -t rxingest .   Run: see docs/container.md.
# Every install and build step is in scripts/image/build-steps.sh, which the recipe test
# (test/integration/install/install-container-recipe.test.ts) runs the same way, without an engine.

# Build stage: compile TypeScript with the dev dependencies.
FROM node:20-alpine AS build
WORKDIR /app
# patches/ before the install: npm ci's postinstall patches kafkajs from it.
COPY package.json package-lock.json ./
COPY patches ./patches
COPY scripts/image/build-steps.sh ./scripts/image/
RUN sh scripts/image/build-steps.sh deps
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN sh scripts/image/build-steps.sh compile

# Runtime stage: production dependencies and the compiled worker only, as the unprivileged `node` user.
FROM node:20-alpine AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
COPY scripts/image/build-steps.sh ./scripts/image/
RUN sh scripts/image/build-steps.sh runtime
COPY --from=build /app/dist ./dist
COPY examples ./examples
USER node
EXPOSE 9464
# /healthz answers 200 while the process runs and its event loop turns (HTTP_PORT must not be 0).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.HTTP_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself: the worker drains, commits and exits 0.
ENTRYPOINT ["node", "--max-semi-space-size=4", "dist/cli/main.js"]
CMD ["worker"]
