// Admission (lifecycle/predicate.go), quantities/requests/QoS, and the pod workers' grace and requeue
// rules (pod_workers.go).
import './cases/admission.js';
import './cases/quantity.js';
import './cases/workers.js';
