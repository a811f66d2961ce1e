package robustness

import (
	"flag"
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain keeps the caches' klog output out of the test log unless
// ROBUSTNESS_KLOG=1: a run logs every expected etcd error the faults cause.
func TestMain(m *testing.M) {
	if os.Getenv("ROBUSTNESS_KLOG") != "1" {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
	os.Exit(m.Run())
}
