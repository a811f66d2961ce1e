package etcdload

import "testing"

// TestConfigMap: the caller's fields are kept, the UID follows seq, and
// every object has the same creation time.
func TestConfigMap(t *testing.T) {
	a := ConfigMap("ns", "a", 1, map[string]string{"app": "x"}, map[string]string{"k": "v"})
	b := ConfigMap("ns", "b", 2, nil, nil)
	if a.Namespace != "ns" || a.Name != "a" || a.Labels["app"] != "x" || a.Data["k"] != "v" || a.Kind != "ConfigMap" || a.APIVersion != "v1" {
		t.Errorf("a = %+v", a)
	}
	if a.UID == "" || a.UID == b.UID {
		t.Errorf("UIDs %q and %q: want distinct and set", a.UID, b.UID)
	}
	if again := ConfigMap("other", "c", 1, nil, nil); again.UID != a.UID {
		t.Errorf("seq 1 gave UIDs %q and %q", a.UID, again.UID)
	}
	if !a.CreationTimestamp.Equal(&Created) || !b.CreationTimestamp.Equal(&Created) {
		t.Errorf("creation times %v, %v; want %v", a.CreationTimestamp, b.CreationTimestamp, Created)
	}
}
