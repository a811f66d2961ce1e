package kwoknode

import (
	"strconv"
	"strings"
)

// Config is kwok's --config file: the Stages that say how a kwok node and
// its pods behave (doc.go lists what they do). The controller's options
// are its flags (Args): a KwokConfiguration document in the file would
// replace kwok's defaults for every option it leaves out with zero, and
// kwok refuses a zero worker count. The stage templates are kwok's Go
// templates over the object; the placeholders in configTemplate are
// filled from o.
func (o Options) Config() string {
	statusMS := o.NodeStatusInterval.Milliseconds()
	r := strings.NewReplacer(
		"@STATUS_MS@", strconv.FormatInt(statusMS, 10),
		"@STATUS_MAX_MS@", strconv.FormatInt(statusMS+statusMS/10, 10),
		"@NODE_READY_SELECTOR@", nodeReadySelector,
		"@NODE_CONDITION@", nodeCondition,
	)
	return r.Replace(configTemplate)
}

// StageNames are the stages Config defines, in its order.
var StageNames = []string{"freshcache-node-ready", "freshcache-node-heartbeat", "freshcache-pod-running", "freshcache-pod-gone"}

// nodeReadySelector picks nodes by their Ready condition's status, which
// the two node stages compare with "True" each its own way.
const nodeReadySelector = `spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'`

// nodeCondition is one node condition as both node stages write it back,
// with a new heartbeat; they differ in its transition time.
const nodeCondition = `      - type: {{ .type | Quote }}
        status: {{ .status | Quote }}
        reason: {{ .reason | Quote }}
        message: {{ .message | Quote }}
        lastHeartbeatTime: {{ $now | Quote }}`

// configTemplate: the stages.
//
//   - freshcache-node-ready: a node whose Ready condition is not True gets
//     kwok's standard set of conditions (Ready True, no pressure) and
//     phase Running.
//   - freshcache-node-heartbeat: a Ready node's conditions get a new
//     lastHeartbeatTime every NodeStatusInterval (+10% jitter), as a
//     kubelet's status report; the Lease is renewed by kwok's lease
//     controller, not by a stage.
//   - freshcache-pod-running: a Pending pod bound to a kwok node, not
//     being deleted, becomes Running with every container running and
//     ready, a pod IP from the CIDR and the node's IP as host IP.
//   - freshcache-pod-gone: a pod being deleted is deleted for good.
const configTemplate = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: freshcache-node-ready
@NODE_READY_SELECTOR@
      operator: NotIn
      values: ["True"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
@NODE_CONDITION@
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: freshcache-node-heartbeat
@NODE_READY_SELECTOR@
      operator: In
      values: ["True"]
  delay:
    durationMilliseconds: @STATUS_MS@
    jitterDurationMilliseconds: @STATUS_MAX_MS@
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range .status.conditions }}
@NODE_CONDITION@
        lastTransitionTime: {{ .lastTransitionTime | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: freshcache-pod-running
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: ["Pending"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
      startTime: {{ $now | Quote }}
      conditions:
      - type: Initialized
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: ContainersReady
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: freshcache-pod-gone
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
  next:
    delete: true
`
