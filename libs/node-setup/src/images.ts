/**
 * The images a local containerd gets without any registry: built here from Debian's busybox-static
 * and imported under the names pod specs and containerd's config use.
 */

/**
 * The image names, fully qualified as containerd stores them.
 *
 * - `busybox136` and `busybox137`: busybox with `Cmd ["sh"]`, as the Docker Hub image. Same layer,
 *   but each has its own config (a version label), so the two have different image ids and a test
 *   can "change the image" of a container and see the id change.
 * - `busyboxLatest`: the same image as 1.37, because `image: busybox` (no tag) resolves to
 *   `docker.io/library/busybox:latest`.
 * - `pause`: the sandbox image named in containerd's config (`sandbox_image`); busybox whose
 *   process is `sleep infinity`.
 */
export const IMAGES = {
  busybox136: 'docker.io/library/busybox:1.36',
  busybox137: 'docker.io/library/busybox:1.37',
  busyboxLatest: 'docker.io/library/busybox:latest',
  pause: 'registry.k8s.io/pause:3.9',
} as const;
export type ImageName = (typeof IMAGES)[keyof typeof IMAGES];
