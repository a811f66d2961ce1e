package cluster

import (
	"reflect"
	"testing"
	"time"
)

func TestChurnScheduleIsDeterministicAndBounded(t *testing.T) {
	plan := churnPlan{Seed: 7, Replicas: []int32{30, 30, 30, 10, 1}, PodRate: 5, Duration: 10 * time.Minute}
	a, b := churnSchedule(plan), churnSchedule(plan)
	if len(a) == 0 {
		t.Fatal("no actions")
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same plan gave two schedules")
	}
	other := plan
	other.Seed = 8
	if reflect.DeepEqual(a, churnSchedule(other)) {
		t.Error("another seed gave the same schedule")
	}
	cur := append([]int32(nil), plan.Replicas...)
	kinds := map[string]int{}
	var prev time.Duration
	pods := 0
	for i, x := range a {
		if x.At < prev || x.At >= plan.Duration {
			t.Fatalf("action %d at %v after %v (duration %v)", i, x.At, prev, plan.Duration)
		}
		prev = x.At
		base := plan.Replicas[x.Deployment]
		switch x.Kind {
		case churnRollout:
			if x.Replicas != cur[x.Deployment] || x.Pods != 2*int(cur[x.Deployment]) {
				t.Fatalf("action %d: rollout of %d replicas says %d replicas, %d pods", i, cur[x.Deployment], x.Replicas, x.Pods)
			}
		case churnScaleUp, churnScaleDown:
			if d := x.Replicas - cur[x.Deployment]; int(max(d, -d)) != x.Pods {
				t.Fatalf("action %d: scale %d -> %d says %d pods", i, cur[x.Deployment], x.Replicas, x.Pods)
			}
		default:
			t.Fatalf("action %d: kind %q", i, x.Kind)
		}
		cur[x.Deployment] = x.Replicas
		if x.Replicas < max(1, base/2) || x.Replicas > base+base/2 {
			t.Fatalf("action %d: deployment %d at %d replicas, outside [%d, %d]", i, x.Deployment, x.Replicas, max(1, base/2), base+base/2)
		}
		kinds[x.Kind]++
		pods += x.Pods
	}
	for _, k := range []string{churnRollout, churnScaleUp, churnScaleDown} {
		if kinds[k] == 0 {
			t.Errorf("no %s in %d actions", k, len(a))
		}
	}
	// The rate holds: all but the last action's pods fit in the duration.
	if got := float64(pods-a[len(a)-1].Pods) / plan.Duration.Seconds(); got > plan.PodRate*1.01 || got < plan.PodRate*0.8 {
		t.Errorf("%.2f pods/s planned, want about %g", got, plan.PodRate)
	}
	if churnSchedule(churnPlan{Seed: 1, Replicas: []int32{5}, PodRate: 0, Duration: time.Minute}) != nil {
		t.Error("a zero pod rate must plan nothing")
	}
}

func TestDeploymentSizes(t *testing.T) {
	for _, c := range []struct {
		pods, per int
		want      []int32
	}{
		{100, 30, []int32{30, 30, 30, 10}},
		{30, 30, []int32{30}},
		{5, 30, []int32{5}},
		{0, 30, nil},
	} {
		if got := deploymentSizes(c.pods, c.per); !reflect.DeepEqual(got, c.want) {
			t.Errorf("deploymentSizes(%d, %d) = %v, want %v", c.pods, c.per, got, c.want)
		}
	}
}
