/**
 * The local runtime: a containerd that splitlet starts itself under its state dir, with its own CNI
 * network, and the images it needs built locally (no registry, no docker). Backs
 * `splitlet runtime up|down|status` and `splitlet up --runtime containerd`.
 *
 * ```ts
 * const rt = await startContainerd({ stateDir });          // reuses a running one
 * await ensureImages(rt);                                 // busybox:1.36, :1.37, :latest, pause:3.9
 * // … GrpcRuntimeService.connect({ endpoint: rt.socket }) …
 * await rt.stop();                                        // drains pods, deletes the bridge
 * ```
 *
 * Needs root and the Debian packages containerd, runc, containernetworking-plugins,
 * busybox-static and iproute2 ({@link missingPrerequisites} lists what is absent).
 * @packageDocumentation
 */
export { startContainerd, stopContainerd, containerdStatus, containerdPaths, missingPrerequisites, isStaticBusybox, DEAD_PROXY, NO_PROXY } from './containerd.js';
export { RUNTIME_PATH } from './host-command.js';
export type { StartContainerdOptions, StopContainerdOptions, LocalContainerd, ContainerdStatus } from './containerd.js';
export type { ContainerdPaths, Snapshotter } from './containerd-config.js';
export type { PodNetwork } from './cni-network.js';
export { IMAGES } from './images.js';
export type { ImageName } from './images.js';
export { buildBusyboxImage, ensureImages, importImage, IMAGE_RECIPES, isLocalImage } from './oci-image.js';
export type { BuildImageOptions, BuiltImage, EnsuredImage, ImageRecipe, ImageTarget, ImportImageOptions } from './oci-image.js';
export { ensureLocalRuntime, runtimeCommand } from './runtime-command.js';
export type { LocalRuntimeOptions, RuntimeCommandArgs } from './runtime-command.js';
export { RuntimeError, RuntimeErrorCodes, isRuntimeError } from './runtime-error.js';
export type { RuntimeErrorCode } from './runtime-error.js';
export { NODE_USAGE, nodeCommand } from './node-command.js';
