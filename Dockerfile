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
# `app-context` takes a tree already built on the host from `.build/` in the context (what CI
# does: test/e2e/stage-app.sh). No HEALTHCHECK here: compose and k8s probe /healthz and /readyz.
#
# Layers are ordered for reuse: the dependencies (node_modules, from package.json and
# package-lock.json only) are one layer and the built workspaces (dist/, bin/, proto/) another, so a
# source change rebuilds and ships only the second; `npm ci` reruns only when a package file changes.
ARG NODE_IMAGE=node:24-bookworm-slim
ARG DEBIAN_IMAGE=debian:bookworm-slim
ARG APP_FROM=app-npm

# The package files alone (every workspace's package.json): the key of the npm ci layers below.
FROM ${NODE_IMAGE} AS package-files
WORKDIR /src
COPY libs libs
COPY services services
RUN find libs services -type f ! -name package.json -exec rm -f {} + && find libs services -depth -type d -empty -exec rmdir {} +

# From the npm registry: the production dependencies …
FROM ${NODE_IMAGE} AS npm-deps
WORKDIR /opt/splitlet
COPY package.json package-lock.json ./
COPY --from=package-files /src ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts

# … and the build (with the dev dependencies), of which only the workspaces' outputs are kept.
FROM ${NODE_IMAGE} AS npm-build
WORKDIR /opt/splitlet
COPY package.json package-lock.json ./
COPY --from=package-files /src ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.base.json ./
COPY libs libs
COPY services services
RUN npm run build \
 && mkdir /out \
 && for ws in libs/* services/*; do \
      [ -f "$ws/package.json" ] || continue; \
      mkdir -p "/out/$ws" && cp "$ws/package.json" "/out/$ws/"; \
      for d in dist bin proto; do [ ! -e "$ws/$d" ] || cp -a "$ws/$d" "/out/$ws/"; done; \
    done \
 && find /out -name '*.tsbuildinfo' -delete

FROM scratch AS app-npm-deps
COPY --from=npm-deps /opt/splitlet /opt/splitlet

FROM scratch AS app-npm
COPY --from=npm-build /out /opt/splitlet

# The built tree, staged on the host (test/e2e/stage-app.sh): dependencies and workspaces.
FROM scratch AS app-context-deps
COPY .build/deps /opt/splitlet

FROM scratch AS app-context
COPY .build/app /opt/splitlet

FROM ${APP_FROM}-deps AS deps
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
# The apiserver's state (CA, certificates, token, kubeconfig): a volume there starts owned by `node`.
RUN mkdir -p /var/lib/splitlet-api && chown node:node /var/lib/splitlet-api
COPY docker/splitlet-entrypoint.sh /usr/local/bin/splitlet-entrypoint
COPY --from=deps /opt/splitlet /opt/splitlet
COPY --from=app /opt/splitlet /opt/splitlet
ENV NODE_ENV=production
USER node
WORKDIR /opt/splitlet
ENTRYPOINT ["/usr/local/bin/splitlet-entrypoint"]
CMD ["splitlet", "--help"]

# The busybox and pause image archives pods run from (deterministic: an unchanged result keeps
# the node image's layer).
FROM node-os AS node-images
COPY --from=node-runtime /usr/local/bin/node /usr/local/bin/node
COPY --from=deps /opt/splitlet /opt/splitlet
COPY --from=app /opt/splitlet /opt/splitlet
RUN node /opt/splitlet/libs/node-setup/bin/splitlet-node.js images --out /images

# The containerd node.
FROM node-os AS node
COPY --from=node-runtime /usr/local/bin/node /usr/local/bin/node
COPY --from=node-images /images /opt/splitlet/images
COPY docker/splitlet-entrypoint.sh /usr/local/bin/splitlet-entrypoint
COPY --from=deps /opt/splitlet /opt/splitlet
COPY --from=app /opt/splitlet /opt/splitlet
ENV NODE_ENV=production
WORKDIR /opt/splitlet
VOLUME ["/var/lib/splitlet", "/var/log/pods", "/var/lib/kubelet"]
ENTRYPOINT ["/usr/local/bin/splitlet-entrypoint"]
CMD ["splitlet-node", "run", "--state-dir", "/var/lib/splitlet", "--image-cache", "/opt/splitlet/images"]
