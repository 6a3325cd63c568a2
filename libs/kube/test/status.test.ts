// pkg/kubelet status: getPhase (kubelet_pods_test.go), conditions (status/generate_test.go) and
// generateAPIPodStatus.
import './cases/get-phase.js';
import './cases/pod-conditions.js';
import './cases/generate-api-pod-status.js';
