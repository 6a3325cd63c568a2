import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyKubeletFlags, isConfigError, kubeletConfigEnv, parseGoDuration, parseKubeletConfig } from '../src/index.js';

const head = { kind: 'KubeletConfiguration', apiVersion: 'kubelet.config.k8s.io/v1beta1' };

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(isConfigError(e), `expected a ConfigError, got ${String(e)}`);
    return e.message;
  }
  assert.fail('expected a ConfigError');
}

describe('KubeletConfiguration', () => {
  it('parses Go durations as the kubelet writes them', () => {
    assert.equal(parseGoDuration('1m0s'), 60_000);
    assert.equal(parseGoDuration('20s'), 20_000);
    assert.equal(parseGoDuration('1h30m'), 5_400_000);
    assert.equal(parseGoDuration('500ms'), 500);
    assert.equal(parseGoDuration('1.5s'), 1500);
    assert.equal(parseGoDuration('0'), 0);
    assert.equal(parseGoDuration('20'), undefined);
    assert.equal(parseGoDuration('soon'), undefined);
  });

  it('translates every honoured field into the variables of the process that honours it', () => {
    const { config, warnings } = parseKubeletConfig({
      ...head,
      maxPods: 7,
      staticPodPath: '/etc/kubernetes/manifests',
      staticPodURL: 'http://example.test/pods.yaml',
      staticPodURLHeader: { Authorization: ['Bearer x'] },
      syncFrequency: '30s',
      fileCheckFrequency: '5s',
      httpCheckFrequency: '1m0s',
      nodeStatusUpdateFrequency: '4s',
      nodeStatusReportFrequency: '1m',
      nodeLeaseDurationSeconds: 20,
      kubeAPIQPS: 20,
      kubeAPIBurst: 40,
      eventRecordQPS: 0,
      eventBurst: 10,
      clusterDNS: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
      resolvConf: '/run/systemd/resolve/resolv.conf',
      serializeImagePulls: false,
      registryPullQPS: 2,
      registryBurst: 4,
      runtimeRequestTimeout: '2m',
      containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
      podLogsDir: '/var/log/pods',
      evictionHard: { 'memory.available': '200Mi', 'nodefs.available': '5%', 'pid.available': '10%' },
      evictionPressureTransitionPeriod: '30s',
    });
    assert.deepEqual(warnings, []);
    assert.deepEqual(kubeletConfigEnv(config), {
      'config-source': {
        MANIFEST_DIR: '/etc/kubernetes/manifests',
        MANIFEST_URL: 'http://example.test/pods.yaml',
        MANIFEST_URL_HEADER: 'Authorization: Bearer x',
        FILE_CHECK_FREQUENCY_MS: '5000',
        HTTP_CHECK_FREQUENCY_MS: '60000',
      },
      'cri-adapter': {
        CLUSTER_DNS: '10.96.0.10',
        CLUSTER_DOMAIN: 'cluster.local',
        RESOLV_CONF: '/run/systemd/resolve/resolv.conf',
        SERIALIZE_IMAGE_PULLS: 'false',
        REGISTRY_PULL_QPS: '2',
        REGISTRY_BURST: '4',
        RUNTIME_REQUEST_TIMEOUT_MS: '120000',
        CRI_ENDPOINT: 'unix:///run/containerd/containerd.sock',
        POD_LOG_DIR: '/var/log/pods',
      },
      prober: { RUNTIME_REQUEST_TIMEOUT_MS: '120000', CRI_ENDPOINT: 'unix:///run/containerd/containerd.sock' },
      'volume-manager': { NODE_MAX_PODS: '7', EVICTION_HARD: 'memory.available<200Mi,nodefs.available<5%,pid.available<10%', EVICTION_PRESSURE_TRANSITION_PERIOD_MS: '30000' },
      'status-manager': {
        NODE_STATUS_UPDATE_FREQUENCY_MS: '4000',
        NODE_STATUS_REPORT_FREQUENCY_MS: '60000',
        NODE_LEASE_DURATION_SECONDS: '20',
        KUBE_API_QPS: '20',
        KUBE_API_BURST: '40',
        EVENT_RECORD_QPS: '0',
        EVENT_BURST: '10',
      },
      'pod-worker': { SYNC_FREQUENCY_MS: '30000' },
    });
  });

  it("an empty configuration sets nothing: every process keeps its (the kubelet's) defaults", () => {
    const env = kubeletConfigEnv(parseKubeletConfig(head).config);
    assert.ok(Object.values(env).every((e) => Object.keys(e).length === 0));
  });

  it('names unknown and unsupported fields in warnings, and ignores them', () => {
    const { config, warnings } = parseKubeletConfig({
      ...head,
      maxPods: 50,
      imageGCHighThresholdPercent: 85,
      podPidsLimit: 100,
      maxPod: 3,
      evictionHard: { 'imagefs.available': '15%', 'memory.available': '1Gi' },
    });
    assert.deepEqual(config, { maxPods: 50, evictionHard: { 'imagefs.available': '15%', 'memory.available': '1Gi' } });
    assert.deepEqual(warnings, [
      'imageGCHighThresholdPercent: not supported by splitlet, ignored',
      'podPidsLimit: not supported by splitlet, ignored',
      'maxPod: unknown field, ignored',
      'evictionHard.imagefs.available: not evaluated by splitlet (no separate image filesystem), ignored',
    ]);
    assert.equal(kubeletConfigEnv(config)['volume-manager']['EVICTION_HARD'], 'memory.available<1Gi', 'only the signals splitlet evaluates reach the process');
  });

  it('refuses invalid values naming the field path', () => {
    assert.equal(
      configError(() => parseKubeletConfig({ ...head, maxPods: -1 })),
      'invalid configuration: maxPods: must be >= 0',
    );
    assert.equal(
      configError(() => parseKubeletConfig({ ...head, nodeLeaseDurationSeconds: 0 })),
      'invalid configuration: nodeLeaseDurationSeconds: must be greater than 0',
    );
    assert.equal(
      configError(() => parseKubeletConfig({ ...head, eventRecordQPS: -1 })),
      'invalid configuration: eventRecordQPS: must be >= 0 (0: no limit)',
    );
    assert.equal(
      configError(() => parseKubeletConfig({ ...head, kubeAPIQPS: 0 })),
      'invalid configuration: kubeAPIQPS: must be greater than 0',
    );
    assert.match(
      configError(() => parseKubeletConfig({ ...head, syncFrequency: '1 minute' })),
      /^invalid configuration: syncFrequency: must be a duration such as 20s/,
    );
    assert.equal(
      configError(() => parseKubeletConfig({ ...head, clusterDNS: ['10.96.0.10', 'dns'] })),
      'invalid configuration: clusterDNS.1: must be an IP address',
    );
    assert.match(
      configError(() => parseKubeletConfig({ ...head, evictionHard: { 'memory.available': 'lots' } })),
      /evictionHard\.memory\.available: must be a quantity/,
    );
    assert.match(
      configError(() => parseKubeletConfig({ ...head, serializeImagePulls: 'yes' })),
      /serializeImagePulls: must be true or false/,
    );
    assert.match(
      configError(() => parseKubeletConfig({ ...head, staticPodURLHeader: { A: ['1', '2'] } })),
      /staticPodURLHeader: splitlet sends at most one header value/,
    );
    assert.match(
      configError(() => parseKubeletConfig({ ...head, nodeStatusUpdateFrequency: '1m', nodeStatusReportFrequency: '10s' })),
      /nodeStatusReportFrequency: must not be less than nodeStatusUpdateFrequency/,
    );
    assert.match(
      configError(() => parseKubeletConfig({ kind: 'KubeletConfiguration', apiVersion: 'kubelet.config.k8s.io/v1', maxPods: 'ten' })),
      /apiVersion: must be kubelet\.config\.k8s\.io\/v1beta1.*; maxPods: must be an integer/,
    );
  });

  it('flags override the file, converted to the field types and validated the same way', () => {
    const doc = applyKubeletFlags(
      { ...head, maxPods: 30, clusterDomain: 'cluster.local' },
      {
        'max-pods': '12',
        'registry-qps': '0',
        'kube-api-qps': '25',
        'event-qps': '0',
        'event-burst': '7',
        'cluster-dns': '10.0.0.10, 10.0.0.11',
        'serialize-image-pulls': 'false',
        'eviction-hard': 'memory.available<1Gi,nodefs.available<20%',
        'node-status-update-frequency': undefined,
      },
    );
    const { config } = parseKubeletConfig(doc);
    assert.deepEqual(config, {
      maxPods: 12,
      registryPullQPS: 0,
      kubeAPIQPS: 25,
      eventRecordQPS: 0,
      eventBurst: 7,
      clusterDomain: 'cluster.local',
      clusterDNS: ['10.0.0.10', '10.0.0.11'],
      serializeImagePulls: false,
      evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '20%' },
    });
    assert.equal(
      configError(() => parseKubeletConfig(applyKubeletFlags(head, { 'max-pods': '-3' }))),
      'invalid configuration: maxPods: must be >= 0',
    );
    assert.match(
      configError(() => parseKubeletConfig(applyKubeletFlags(head, { 'max-pods': 'many' }))),
      /maxPods: must be an integer/,
    );
  });
});
