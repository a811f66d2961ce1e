package scrape

import (
	"reflect"
	"testing"
)

func TestSamples(t *testing.T) {
	body := []byte(`# HELP apiserver_freshcache_reads_total Reads.
# TYPE apiserver_freshcache_reads_total counter
apiserver_freshcache_reads_total{resource="pods",served="cache"} 12
apiserver_freshcache_reads_total{resource="pods",served="etcd"} 3

process_start_time_seconds 1.7e+09
broken_line
not_a_number{a="b"} x
`)
	got, err := Samples(body)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`apiserver_freshcache_reads_total{resource="pods",served="cache"}`: 12,
		`apiserver_freshcache_reads_total{resource="pods",served="etcd"}`:  3,
		`process_start_time_seconds`:                                       1.7e9,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Samples = %v, want %v", got, want)
	}
}
