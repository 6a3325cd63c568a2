/**
 * `@splitlet/images`: what splitlet's local images contain, shared by the simulator and the builder
 * of the local containerd images.
 */
export { BUSYBOX_APPLETS } from './busybox-applets.js';
export { BUSYBOX_SHIMS } from './busybox-shims.js';
