# syntax=docker/dockerfile:1
# One image for everything: orders-pg, orders-mongo and orders-bench. Compose picks the command.
#
#   docker build -t orders-bench .          # the runtime image
#   docker build --target export --output type=local,dest=.local/dist .
#                                           # only the Linux binaries (what infra/do/do.sh uploads)
# Needs BuildKit (the default builder of current Docker; with docker-compose 1.x set
# DOCKER_BUILDKIT=1 COMPOSE_DOCKER_CLI_BUILD=1).

FROM rust:1-bookworm AS builder
WORKDIR /src
COPY . .
# The cache mounts keep the crates.io index, downloaded crates and incremental build output
# between builds; the binaries are copied out of the cached target directory.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release -p orders-pg -p orders-mongo -p orders-bench \
 && mkdir -p /out \
 && cp target/release/orders-pg target/release/orders-mongo target/release/orders-bench /out/

# `--target export` stage: the three binaries and nothing else.
FROM scratch AS export
COPY --from=builder /out/ /

# The runtime image (the default target: keep it last).
FROM debian:bookworm-slim AS runtime
# ca-certificates unpinned on purpose: it should be the current one from bookworm's updates.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 orders \
 && useradd --system --uid 10001 --gid orders --home-dir /app --shell /usr/sbin/nologin orders
WORKDIR /app
COPY --from=builder /out/ /usr/local/bin/
# Migrations are applied by orders-pg at start-up; shipped beside the binary in case they are
# read from disk (relative to the working directory) rather than compiled in.
COPY migrations/ /app/migrations/
ENV BIND_ADDR=0.0.0.0:8080 \
    LOG_FORMAT=json \
    RUST_LOG=info
USER 10001:10001
EXPOSE 8080
CMD ["orders-pg"]
