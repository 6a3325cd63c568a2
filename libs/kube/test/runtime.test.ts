// pkg/kubelet/kuberuntime: computePodActions (kuberuntime_manager_test.go), sandbox and container
// lookups, container hash, and the crash-loop backoff (client-go flowcontrol).
import './cases/compute-pod-actions.js';
import './cases/runtime-helpers.js';
import './cases/backoff.js';
