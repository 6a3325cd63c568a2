// pkg/kubelet/config: PodConfig merge (config_test.go) and static pod defaulting/validation (common.go).
import './cases/pod-storage.js';
import './cases/pod-storage-changes.js';
import './cases/static-pod.js';
