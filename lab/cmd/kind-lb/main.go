// Command kind-lb is kind's load balancer on Debian's haproxy, for the
// offline kind image that stands where docker.io/envoyproxy/envoy cannot
// be pulled. It is installed as `envoy` in that image, because kind v0.33
// starts its load-balancer container with `envoy -c <bootstrap>`; it reads
// the bootstrap's listener and cluster files as envoy would and runs
// haproxy on them (lab/pkg/kindlb). hack/kind-images.sh builds the image;
// hack/kind-up.sh uses it only when envoy's image is not in Docker.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/freshcache/freshcache/lab/pkg/kindlb"
)

func main() {
	bootstrap := flag.String("c", "/home/envoy/envoy.yaml", "envoy's bootstrap file, as kind writes it")
	cfg := flag.String("haproxy-config", "/etc/haproxy/haproxy.cfg", "where the haproxy configuration is written")
	bin := flag.String("haproxy", "haproxy", "the haproxy binary")
	poll := flag.Duration("poll", 500*time.Millisecond, "how often kind's files are read again")
	flag.Parse()
	if err := run(*bootstrap, *cfg, *bin, *poll); err != nil {
		fmt.Fprintf(os.Stderr, "kind-lb: %v\n", err)
		os.Exit(1)
	}
}

func run(bootstrap, cfg, bin string, poll time.Duration) error {
	data, err := os.ReadFile(bootstrap)
	if err != nil {
		return err
	}
	lds, cds, err := kindlb.Bootstrap(data)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	s := &kindlb.Supervisor{LDS: lds, CDS: cds, Config: cfg, HAProxy: bin, Poll: poll, Log: os.Stdout}
	return s.Run(ctx)
}
