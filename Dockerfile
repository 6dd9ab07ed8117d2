# syntax=docker/dockerfile:1
# Container image for the MCPSAG skill router: the daemon (router) and the CLI
# (routerctl), static binaries on an empty base. See docs/deployment.md.
#
#   docker build -t mcpsag/router:dev .
#   docker run --read-only -p 7443:7443 \
#     -v "$PWD/examples/skills:/workspace/skills:ro" \
#     -v mcpsag-state:/var/lib/mcpsag mcpsag/router:dev
#
# The build image is pinned to an exact Go patch release on a named Debian
# release (it must satisfy the go line of go.mod); pin it by digest too with
# --build-arg GO_IMAGE=golang:1.26.8-bookworm@sha256:... where a registry
# mirror resolves it. The runtime stage is "scratch": there is no base image
# to pin or patch, only the two binaries, CA certificates (for OTLP exporters
# over TLS) and a passwd entry for the unprivileged user.
ARG GO_IMAGE=golang:1.26.8-bookworm

FROM ${GO_IMAGE} AS build
ARG VERSION=dev
ARG REVISION=unknown
WORKDIR /src
# Modules first, so source edits reuse the download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO_ENABLED=0 gives fully static binaries (the embedding model runs in pure
# Go); -trimpath keeps build paths out of them. VERSION and REVISION are
# stamped into both (their version commands, Status, service.version): the
# build context has no .git to read a revision from.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/mcpsag/router/internal/buildinfo.version=${VERSION} -X github.com/mcpsag/router/internal/buildinfo.revision=${REVISION}" \
    -o /out/bin/ ./cmd/router ./cmd/routerctl
# The runtime file tree: an unprivileged user (uid/gid 65532), an empty
# workspace for the skills mount, and the state directory owned by that user.
RUN mkdir -p /out/rootfs/etc/ssl/certs /out/rootfs/workspace /out/state \
 && echo 'mcpsag:x:65532:65532:MCPSAG router:/nonexistent:/sbin/nologin' > /out/rootfs/etc/passwd \
 && echo 'mcpsag:x:65532:' > /out/rootfs/etc/group \
 && cp /etc/ssl/certs/ca-certificates.crt /out/rootfs/etc/ssl/certs/

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="mcpsag-router" \
      org.opencontainers.image.description="MCPSAG skill router: indexes agent skill folders, matches tasks to skills, loads them progressively over gRPC" \
      org.opencontainers.image.source="https://github.com/mcpsag/router" \
      org.opencontainers.image.documentation="https://github.com/mcpsag/router/blob/main/docs/deployment.md" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/rootfs/ /
COPY --from=build /out/bin/router /out/bin/routerctl /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/state /var/lib/mcpsag
# Skills are mounted read-only under /workspace (skills/, agents/*/skills/);
# the bbolt cache and the extracted model live in the state volume, the only
# place the router writes, so the root file system can be read-only.
ENV MCPSAG_WORKSPACE=/workspace \
    MCPSAG_STATE_DIR=/var/lib/mcpsag \
    MCPSAG_ADDR=:7443 \
    MCPSAG_ADMIN_ADDR=:9464
VOLUME ["/var/lib/mcpsag"]
EXPOSE 7443 9464
USER 65532:65532
# One gRPC health check per run; NOT_SERVING (first index still building, or
# draining before a stop) and an unreachable router both count as unhealthy.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/routerctl", "--addr", "127.0.0.1:7443", "--timeout", "3s", "health"]
ENTRYPOINT ["/usr/local/bin/router"]
