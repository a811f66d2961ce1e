package etcdload

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Created is the creation time of every object ConfigMap builds
// (2025-01-01 UTC), so that an object's bytes depend only on what the
// scenario chose.
var Created = metav1.Unix(1735689600, 0)

// ConfigMap is a configmap as the scenarios store it: their name, labels
// and data, a UID that seq picks (distinct seqs, distinct UIDs), and the
// fixed creation time. The caller may change it further before Put.
func ConfigMap(namespace, name string, seq int64, labels, data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace,
			UID:               types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", seq)),
			CreationTimestamp: Created,
			Labels:            labels,
		},
		Data: data,
	}
}
