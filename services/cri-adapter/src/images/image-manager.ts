/**
 * The image manager: makes sure a container's image is on the node before it is created, with the
 * pull policy, pull backoff and (by default) one pull at a time.
 *
 * Models pkg/kubelet/images/image_manager.go (EnsureImageExists, shouldPullImage, evalCRIPullErr),
 * puller.go (serialImagePuller, parallelImagePuller), types.go (the Err* values) and
 * kuberuntime/kuberuntime_image.go (PullImage: the pull with each matching credential in turn).
 *
 * Credentials (pod pull secrets, then the node's docker config) only ever reach the CRI
 * PullImageRequest: they are never logged, put on a span or an event, or published.
 */
import { PULL_QPS_EXCEEDED, type PullThrottle } from './pull-throttle.js';
import type { Tracer } from '@opentelemetry/api';
import type { BoundPod, Container } from '@splitlet/api';
import type { AuthConfig, CriInput, PodSandboxConfig, PullImageResponse } from '@splitlet/cri';
import { isCriError } from '@splitlet/cri';
import { defaultPullPolicy, formatGoDuration, type Backoff } from '@splitlet/kube';
import type { Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { podSpanAttributes, withSpan } from '@splitlet/telemetry';
import type { DockerKeyring, TrackedAuthConfig } from '../credentials/keyring.js';
import type { NodeKeyringProvider } from '../credentials/node-keyring.js';
import { makeDockerKeyring } from '../credentials/pull-secrets.js';
import type { CriImages, EventPodRef, EventRecorder, PullSecret } from '../ports.js';
import type { KubeRuntimeMetrics } from '../kuberuntime/metrics.js';
import { aggregateErrors } from '../kuberuntime/aggregate-errors.js';
import { SyncErrors, type PullWindow, type StepFailure } from '../kuberuntime/sync-result.js';
import { applyDefaultImageTag, parseImageName } from './image-reference.js';

/** The outcome of {@link ImageManager.ensureImageExists}: the image ref, or the kubelet error. */
export type EnsureImageResult = { readonly ok: true; readonly imageRef: string } | ({ readonly ok: false } & StepFailure);

/** What {@link ImageManager.ensureImageExists} needs to know about the container. */
export interface EnsureImageRequest {
  readonly pod: BoundPod;
  readonly podRef: EventPodRef;
  readonly container: Container;
  readonly fieldPath: string;
  /** The pod's pull secrets that could be retrieved (their credentials come before the node's). */
  readonly pullSecrets: readonly PullSecret[];
  readonly sandboxConfig: CriInput<PodSandboxConfig>;
  /** Where the pull's start and successful end are recorded (the pod start SLI leaves them out). */
  readonly pulls?: PullWindow;
}

/** Dependencies of the {@link ImageManager}. */
export interface ImageManagerOptions {
  readonly images: CriImages;
  /** The node's docker config credentials (the default keyring). @default none */
  readonly nodeKeyring?: NodeKeyringProvider;
  readonly recorder: EventRecorder;
  readonly clock: Clock;
  /** Pull backoff per `<podUID>_<image>`: 10 s doubling to 300 s. */
  readonly backoff: Backoff;
  /** One pull at a time (`serializeImagePulls`). @default true */
  readonly serializePulls?: boolean;
  /** The pull rate limit (`registryPullQPS`/`registryBurst`). @default none */
  readonly throttle?: PullThrottle;
  readonly metrics: KubeRuntimeMetrics;
  readonly logger: Logger;
  readonly tracer: Tracer;
}

interface PullOutcome {
  readonly imageRef: string;
  readonly sizeBytes: number;
  /** Time of the PullImage call alone. */
  readonly pullMs: number;
}

/**
 * `Always` pulls every time; `IfNotPresent` pulls when absent; `Never` never pulls.
 *
 * Models images.shouldPullImage.
 */
export function shouldPullImage(policy: 'Always' | 'IfNotPresent' | 'Never', present: boolean): boolean {
  if (policy === 'Never') return false;
  return policy === 'Always' || !present;
}

const NO_CREDENTIALS: DockerKeyring = { lookup: () => [] };

const REGISTRY_UNAVAILABLE = 'RegistryUnavailable';
const SIGNATURE_VALIDATION_FAILED = 'SignatureValidationFailed';

/**
 * The kubelet error for a failed pull: RegistryUnavailable / SignatureValidationFailed when the
 * runtime's message starts with that name, else ErrImagePull with the runtime's message.
 *
 * Models images.evalCRIPullErr.
 */
export function evalPullError(image: string, err: unknown): StepFailure {
  const text = err instanceof Error ? err.message : String(err);
  const details = isCriError(err) ? err.details : text;
  if (details.startsWith(REGISTRY_UNAVAILABLE)) {
    return { error: SyncErrors.RegistryUnavailable, message: `image pull failed for ${image} because the registry is unavailable${details.slice(REGISTRY_UNAVAILABLE.length)}` };
  }
  if (details.startsWith(SIGNATURE_VALIDATION_FAILED)) {
    return {
      error: SyncErrors.SignatureValidationFailed,
      message: `image pull failed for ${image} because the signature validation failed${details.slice(SIGNATURE_VALIDATION_FAILED.length)}`,
    };
  }
  return { error: SyncErrors.ErrImagePull, message: text };
}

/**
 * Ensures images are present. Concurrency: safe for concurrent use; with `serializePulls` the
 * PullImage calls run one at a time in arrival order (the "including waiting" part of the Pulled
 * message is the queue time plus the pull).
 */
export class ImageManager {
  readonly #o: ImageManagerOptions;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ImageManagerOptions) {
    this.#o = options;
  }

  /**
   * Makes sure the container's image is present and returns its image ref (the id to create the
   * container with), recording the kubelet's events: InspectFailed for a reference that does not
   * parse (InvalidImageName) or an ImageStatus failure (ImageInspectError); `Pulled` "already
   * present" when no pull is needed; ErrImageNeverPull for a missing image under `Never`; BackOff
   * (Normal) while the pull is in backoff (ImagePullBackOff); Pulling, then Failed (ErrImagePull,
   * backoff bumped) or Pulled "Successfully pulled image … Image size: N bytes.". Never throws for
   * an image problem; a thrown error is a bug or a cancelled call.
   *
   * Models imageManager.EnsureImageExists.
   */
  async ensureImageExists(req: EnsureImageRequest): Promise<EnsureImageResult> {
    const { pod, container } = req;
    const requested = container.image ?? '';
    return withSpan(
      this.#o.tracer,
      'EnsureImageExists',
      {
        attributes: {
          ...podSpanAttributes(pod.metadata),
          'k8s.container.name': container.name,
          'container.image.name': requested,
        },
      },
      async (span) => {
        const result = await this.#ensure(req, requested);
        span.setAttribute('splitlet.image.result', result.ok ? 'ok' : result.error);
        return result;
      },
    );
  }

  async #ensure(req: EnsureImageRequest, requested: string): Promise<EnsureImageResult> {
    const { pod, container } = req;
    const o = this.#o;
    const event = (eventType: 'Normal' | 'Warning', reason: string, message: string): void =>
      o.recorder.record({ pod: req.podRef, fieldPath: req.fieldPath, eventType, reason, message });

    let image: string;
    try {
      image = applyDefaultImageTag(requested);
    } catch (e) {
      const msg = `Failed to apply default image tag ${JSON.stringify(requested)}: ${e instanceof Error ? e.message : String(e)}`;
      event('Warning', 'InspectFailed', msg);
      return { ok: false, error: SyncErrors.InvalidImageName, message: msg };
    }

    let presentRef: string;
    try {
      const st = await o.images.ImageStatus({ image: { image, userSpecifiedImage: requested } });
      presentRef = st.image?.id ?? '';
    } catch (e) {
      const msg = `Failed to inspect image ${JSON.stringify(requested)}: ${e instanceof Error ? e.message : String(e)}`;
      event('Warning', 'InspectFailed', msg);
      return { ok: false, error: SyncErrors.ImageInspectError, message: msg };
    }
    const present = presentRef !== '';
    const policy = container.imagePullPolicy ?? defaultPullPolicy(requested);
    if (!shouldPullImage(policy, present)) {
      if (present) {
        event('Normal', 'Pulled', `Container image ${JSON.stringify(requested)} already present on machine`);
        return { ok: true, imageRef: presentRef };
      }
      const msg = `Container image ${JSON.stringify(requested)} is not present with pull policy of Never`;
      event('Warning', 'ErrImageNeverPull', msg);
      return { ok: false, error: SyncErrors.ErrImageNeverPull, message: msg };
    }

    const backoffKey = `${pod.metadata.uid}_${requested}`;
    if (o.backoff.isInBackOffSinceUpdate(backoffKey, o.clock.now())) {
      const msg = `Back-off pulling image ${JSON.stringify(requested)}`;
      event('Normal', 'BackOff', msg);
      const since = o.backoff.lastUpdate(backoffKey);
      return { ok: false, error: SyncErrors.ImagePullBackOff, message: msg, ...(since !== undefined ? { retryAt: since + o.backoff.get(backoffKey) } : {}) };
    }

    event('Normal', 'Pulling', `Pulling image ${JSON.stringify(requested)}`);
    // A pull is the long step of a pod's first start: say so on the console of `splitlet up`.
    const podRef = `${pod.metadata.namespace}/${pod.metadata.name}`;
    o.logger.info('pulling image', { pod: podRef, image: requested });
    req.pulls?.started(o.clock.now());
    const enqueuedAt = performance.now();
    let outcome: PullOutcome;
    try {
      const credentials = await this.#credentialsFor(image, req.pullSecrets);
      if (o.logger.isEnabled('debug')) {
        // Where the credentials come from, never what they are.
        o.logger.debug(credentials.length === 0 ? 'Pulling image without credentials' : 'Pulling image with credentials', {
          pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
          image: requested,
          from: credentials.map((c) => c.source),
        });
      }
      outcome = await this.#schedule(() => this.#pull(image, requested, req.sandboxConfig, credentials));
    } catch (e) {
      event('Warning', 'Failed', `Failed to pull image ${JSON.stringify(requested)}: ${e instanceof Error ? e.message : String(e)}`);
      o.logger.warn('image pull failed', { pod: podRef, image: requested, err: e instanceof Error ? e.message : String(e) });
      o.backoff.next(backoffKey, o.clock.now());
      const failure = evalPullError(requested, e);
      return { ok: false, ...failure };
    }
    req.pulls?.finished(o.clock.now());
    const totalMs = Math.trunc(performance.now() - enqueuedAt);
    event(
      'Normal',
      'Pulled',
      `Successfully pulled image ${JSON.stringify(requested)} in ${formatGoDuration(Math.trunc(outcome.pullMs))} (${formatGoDuration(totalMs)} including waiting). Image size: ${outcome.sizeBytes} bytes.`,
    );
    o.metrics.imagePull(outcome.sizeBytes, outcome.pullMs / 1000);
    o.logger.info('pulled image', { pod: podRef, image: requested, pullMs: Math.trunc(outcome.pullMs), totalMs, sizeBytes: outcome.sizeBytes });
    o.backoff.gc();
    return { ok: true, imageRef: outcome.imageRef };
  }

  /** Runs `fn` now (parallel puller) or after every earlier pull (serial puller). */
  #schedule<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#o.serializePulls === false) return fn();
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * The credentials to try for `image`, in order: the pod's pull secrets, then the node's docker
   * config, each by most specific registry key (keyring Lookup of the image's repository).
   * Rejects with a CredentialError when a pull secret holds an invalid docker config.
   */
  async #credentialsFor(image: string, pullSecrets: readonly PullSecret[]): Promise<TrackedAuthConfig[]> {
    const keyring = makeDockerKeyring(pullSecrets, (await this.#o.nodeKeyring?.keyring()) ?? NO_CREDENTIALS);
    return keyring.lookup(parseImageName(image).repository);
  }

  /**
   * PullImage, anonymously when there are no credentials, else with each credential in turn until
   * one works; when all fail, the error of the kubelet's utilerrors.NewAggregate (the one error, or
   * `[e1, e2]` of the distinct messages).
   */
  async #pullWithCredentials(image: string, requested: string, sandboxConfig: CriInput<PodSandboxConfig>, credentials: readonly TrackedAuthConfig[]): Promise<PullImageResponse> {
    const spec = { image, userSpecifiedImage: requested };
    if (credentials.length === 0) return this.#o.images.PullImage({ image: spec, sandboxConfig });
    const errors: unknown[] = [];
    for (const c of credentials) {
      try {
        return await this.#o.images.PullImage({ image: spec, auth: criAuth(c), sandboxConfig });
      } catch (e) {
        errors.push(e);
      }
    }
    throw aggregatePullErrors(errors);
  }

  async #pull(image: string, requested: string, sandboxConfig: CriInput<PodSandboxConfig>, credentials: readonly TrackedAuthConfig[]): Promise<PullOutcome> {
    if (this.#o.throttle !== undefined && !this.#o.throttle.tryAccept()) throw new Error(PULL_QPS_EXCEEDED);
    const started = performance.now();
    const resp = await this.#pullWithCredentials(image, requested, sandboxConfig, credentials);
    const pullMs = performance.now() - started;
    let sizeBytes = 0;
    let imageRef = resp.imageRef;
    try {
      const st = await this.#o.images.ImageStatus({ image: { image: resp.imageRef !== '' ? resp.imageRef : image } });
      sizeBytes = Number(st.image?.size ?? '0') || 0;
      if (imageRef === '' && st.image !== null) imageRef = st.image.id;
    } catch (e) {
      this.#o.logger.warn('could not read the size of a pulled image', { image: requested, err: e });
    }
    return { imageRef, sizeBytes, pullMs };
  }
}

/** The CRI AuthConfig of one credential (the kubelet's PullImage: every field of the credential). */
function criAuth(c: TrackedAuthConfig): CriInput<AuthConfig> {
  return { username: c.username, password: c.password, identityToken: c.identityToken, registryToken: c.registryToken };
}

/**
 * One error for several failed attempts, like apimachinery's utilerrors.NewAggregate: the error
 * itself when there is one distinct message (so its CRI code still counts), else an Error
 * `[m1, m2, …]` of the distinct messages.
 */
export function aggregatePullErrors(errors: readonly unknown[]): unknown {
  const messages = errors.map((e) => (e instanceof Error ? e.message : String(e)));
  if (new Set(messages).size <= 1) return errors[0];
  return new Error(aggregateErrors(messages), { cause: errors });
}
