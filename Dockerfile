# splitlet's images, from one multi-stage build (docker-compose.yml builds both targets):
#
#   --target splitlet   every splitlet process; the command names it (`pod-worker`, `sync-loop`, …,
#                       `splitlet` for the CLI, `splitlet-node` for node setup). Runs as `node` (uid
#                       1000); compose runs the node-local processes that touch containerd's socket
#                       and the kubelet dirs as root.
#   --target node       a containerd node: containerd, runc, the CNI plugins, busybox-static and the
#                       busybox/pause images built at build time (no registry needed at run time).
#                       `splitlet-node run` is its process; it needs privileges (compose: privileged).
#
# Base images are build ARGs; the defaults are the official images. The built tree comes from
# APP_FROM: `app-npm` (default) runs `npm ci` and the build in the image (needs the npm registry);
# `app-context` takes a tree already built on the host from `.build/app/` in the context (what CI
# does: test/e2e/stage-app.sh). No HEALTHCHECK here: compose and k8s probe /healthz and /readyz.
ARG NODE_IMAGE=node:24-bookworm-slim
ARG DEBIAN_IMAGE=debian:bookworm-slim
ARG APP_FROM=app-npm

# The built tree, from the npm registry: sources in, dev dependencies out.
FROM ${NODE_IMAGE} AS app-npm
WORKDIR /opt/splitlet
COPY package.json package-lock.json tsconfig.json tsconfig.base.json ./
COPY libs libs
COPY services services
RUN npm ci --no-audit --no-fund --ignore-scripts \
 && npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf libs/*/src libs/*/test services/*/src services/*/test

# The built tree, staged on the host.
FROM scratch AS app-context
COPY .build/app /opt/splitlet

FROM ${APP_FROM} AS app

# Debian with the node's packages; installs only what the base lacks.
FROM ${DEBIAN_IMAGE} AS node-os
RUN set -eu; \
    missing=""; \
    for p in containerd runc containernetworking-plugins busybox-static iproute2 ca-certificates; do \
      dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; \
    done; \
    if [ -n "$missing" ]; then \
      apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing \
      && rm -rf /var/lib/apt/lists/*; \
    fi

FROM ${NODE_IMAGE} AS node-runtime

# Every splitlet process.
FROM ${NODE_IMAGE} AS splitlet
COPY --from=node-os /bin/busybox /usr/local/bin/busybox
COPY --from=app /opt/splitlet /opt/splitlet
COPY docker/splitlet-entrypoint.sh /usr/local/bin/splitlet-entrypoint
# The apiserver's state (CA, certificates, token, kubeconfig): a volume there starts owned by `node`.
RUN mkdir -p /var/lib/splitlet-api && chown node:node /var/lib/splitlet-api
ENV NODE_ENV=production
USER node
WORKDIR /opt/splitlet
ENTRYPOINT ["/usr/local/bin/splitlet-entrypoint"]
CMD ["splitlet", "--help"]

# The containerd node.
FROM node-os AS node
COPY --from=node-runtime /usr/local/bin/node /usr/local/bin/node
COPY --from=app /opt/splitlet /opt/splitlet
COPY docker/splitlet-entrypoint.sh /usr/local/bin/splitlet-entrypoint
RUN node /opt/splitlet/libs/node-setup/bin/splitlet-node.js images --out /opt/splitlet/images
ENV NODE_ENV=production
WORKDIR /opt/splitlet
VOLUME ["/var/lib/splitlet", "/var/log/pods", "/var/lib/kubelet"]
ENTRYPOINT ["/usr/local/bin/splitlet-entrypoint"]
CMD ["splitlet-node", "run", "--state-dir", "/var/lib/splitlet", "--image-cache", "/opt/splitlet/images"]
