package cluster

// The cluster benchmark's pod churn: a schedule of Deployment changes made
// from a seed alone (pure, so every configuration gets the same one), and
// the driver that carries it out through the API.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/freshcache/freshcache/tools/bench/ctxsleep"
)

// Kinds of churnAction.
const (
	churnScaleUp   = "scale-up"
	churnScaleDown = "scale-down"
	// churnRollout changes an annotation of the pod template: the
	// Deployment replaces every pod (maxSurge and maxUnavailable 25%).
	churnRollout = "rollout"
)

// churnAction is one change of one Deployment.
type churnAction struct {
	// At is the offset from the start of the churn.
	At         time.Duration `json:"at"`
	Deployment int           `json:"deployment"`
	Kind       string        `json:"kind"`
	// Replicas is the Deployment's replica count after the action.
	Replicas int32 `json:"replicas"`
	// Rollout numbers the Deployment's rollouts (the annotation's value).
	Rollout int `json:"rollout,omitempty"`
	// Pods is how many pods the action creates plus deletes: the
	// difference for a scale, twice the replicas for a rollout.
	Pods int `json:"pods"`
}

// churnPlan is what churnSchedule needs: the Deployments' sizes, the pod
// rate and the length of the churn.
type churnPlan struct {
	Seed uint64
	// Replicas are the Deployments' replica counts at the start.
	Replicas []int32
	// PodRate is the pods created plus deleted per second, on average over
	// the schedule: each action waits Pods/PodRate after the previous one.
	PodRate  float64
	Duration time.Duration
}

// churnSchedule returns the actions of plan, in time order. It depends on
// nothing but plan: the same plan gives the same schedule. A Deployment
// stays between half and one and a half times its starting size, so the
// pod count is bounded; a scale changes it by a fifth of its starting
// size (at least one pod).
func churnSchedule(plan churnPlan) []churnAction {
	if len(plan.Replicas) == 0 || plan.PodRate <= 0 || plan.Duration <= 0 {
		return nil
	}
	rnd := rand.New(rand.NewPCG(plan.Seed, 0x636875726e)) // "churn"
	cur := append([]int32(nil), plan.Replicas...)
	rollouts := make([]int, len(cur))
	var out []churnAction
	var at time.Duration
	for at < plan.Duration {
		d := rnd.IntN(len(cur))
		base := plan.Replicas[d]
		step := max(1, base/5)
		lo, hi := max(1, base/2), base+base/2
		a := churnAction{Deployment: d}
		switch r := rnd.Float64(); {
		case r < 0.4:
			a.Kind = churnRollout
		case r < 0.7:
			a.Kind = churnScaleUp
		default:
			a.Kind = churnScaleDown
		}
		if a.Kind == churnScaleUp && cur[d]+step > hi {
			a.Kind = churnScaleDown
		}
		if a.Kind == churnScaleDown && cur[d]-step < lo {
			a.Kind = churnScaleUp
			if cur[d]+step > hi { // a Deployment of one: only rollouts
				a.Kind = churnRollout
			}
		}
		switch a.Kind {
		case churnRollout:
			rollouts[d]++
			a.Rollout = rollouts[d]
			a.Pods = 2 * int(cur[d])
		case churnScaleUp:
			cur[d] += step
			a.Pods = int(step)
		case churnScaleDown:
			cur[d] -= step
			a.Pods = int(step)
		}
		a.Replicas, a.At = cur[d], at
		out = append(out, a)
		at += time.Duration(float64(a.Pods) / plan.PodRate * float64(time.Second))
	}
	return out
}

// deploymentSizes splits pods into Deployments of perDeployment replicas
// (the last one takes the rest).
func deploymentSizes(pods, perDeployment int) []int32 {
	if pods <= 0 || perDeployment <= 0 {
		return nil
	}
	var out []int32
	for left := pods; left > 0; left -= perDeployment {
		out = append(out, int32(min(left, perDeployment)))
	}
	return out
}

const (
	clusterNamespace  = "cluster-bench"
	churnLabel        = "cluster-bench/app"
	rolloutAnnotation = "cluster-bench/rollout"
)

func churnName(d int) string { return fmt.Sprintf("churn-%03d", d) }

func churnDeployment(d int, replicas int32) *appsv1.Deployment {
	labels := map[string]string{churnLabel: churnName(d)}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: churnName(d), Namespace: clusterNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
					// Replaced pods go at once: the churn rate is the
					// controllers' and kubelets' work, not a grace period.
					TerminationGracePeriodSeconds: ptr.To(int64(0)),
				},
			},
		},
	}
}

// churnResult counts what the driver did.
type churnResult struct {
	Actions    int64  `json:"actions"`
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

// runChurn carries out actions, each at its offset from now, until ctx is
// done or the schedule ends. Each is a merge patch, so no read comes
// before it.
func runChurn(ctx context.Context, cs kubernetes.Interface, actions []churnAction) churnResult {
	var res churnResult
	start := time.Now()
	for _, a := range actions {
		if err := ctxsleep.Sleep(ctx, time.Until(start.Add(a.At))); err != nil {
			break
		}
		var patch string
		if a.Kind == churnRollout {
			patch = fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:"%d"}}}}}`, rolloutAnnotation, a.Rollout)
		} else {
			patch = fmt.Sprintf(`{"spec":{"replicas":%d}}`, a.Replicas)
		}
		_, err := cs.AppsV1().Deployments(clusterNamespace).Patch(ctx, churnName(a.Deployment), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if res.Errors == 0 {
				res.FirstError = err.Error()
			}
			res.Errors++
			continue
		}
		res.Actions++
	}
	return res
}
