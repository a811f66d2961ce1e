package stall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
	"github.com/freshcache/freshcache/tools/bench/ctxsleep"
	"github.com/freshcache/freshcache/tools/bench/report"
)

// Run runs every configuration of cfg in turn and returns what each
// measured. A configuration that fails is recorded with its error and the
// next one runs; Run returns an error only for a bad cfg or when ctx ends.
func Run(ctx context.Context, cfg Config) (Result, error) {
	res := Result{When: time.Now().UTC(), Commit: report.GitCommit(), Machine: report.ThisMachine(), Config: cfg,
		DataBytes: int64(cfg.Objects) * int64(cfg.ObjectBytes)}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	dir := cfg.DataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "freshcache-bench-stall-")
		if err != nil {
			return res, err
		}
		defer func() { _ = os.RemoveAll(d) }()
		dir = d
	}
	var err error
	for i, name := range cfg.Configurations {
		if err = ctx.Err(); err != nil {
			break
		}
		fmt.Fprintf(cfg.progress(), "# %s: %s\n", name, strings.Join(Args(name), " "))
		r, rerr := runOne(ctx, cfg, name, filepath.Join(dir, fmt.Sprintf("%d-%s", i, name)))
		if rerr != nil {
			r.Error = rerr.Error()
			fmt.Fprintf(cfg.progress(), "# %s failed: %v\n", name, rerr)
		}
		res.Configs = append(res.Configs, r)
		if r.Skipped == "" && r.Error == "" {
			fmt.Fprintf(cfg.progress(), "# %s: apiserver RSS %.0f -> %.0f MiB (%.2fx), etcd RSS %.0f -> %.0f MiB (%.2fx), reads 2xx=%d 429=%d 5xx=%d other=%d\n",
				name, mib(r.APIServer.Pre), mib(r.APIServer.Peak), r.APIServer.Growth, mib(r.Etcd.Pre), mib(r.Etcd.Peak), r.Etcd.Growth,
				r.Reads.OK, r.Reads.Retry, r.Reads.Err5xx, r.Reads.Other)
		}
	}
	res.Ratios = ComputeRatios(res.Configs)
	res.ClosingLine = res.Ratios.ClosingLine()
	return res, err
}

// runOne runs one configuration on a fresh etcd and apiserver in dir.
func runOne(ctx context.Context, cfg Config, name, dir string) (res ConfigResult, err error) {
	res = ConfigResult{Name: name, Args: Args(name)}
	progress := cfg.progress()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	etcd, err := startEtcd(ctx, cfg.EtcdCommand, filepath.Join(dir, "etcd"), filepath.Join(dir, "etcd.log"))
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, etcd.stop()) }()

	st, err := newStore(etcd.endpoint, cfg.ObjectBytes)
	if err != nil {
		return res, err
	}
	defer st.close()
	t := time.Now()
	if err := st.load(ctx, cfg.Objects); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "# %s: wrote %d configmaps of %d bytes to etcd %s (pid %d) in %v\n",
		name, cfg.Objects, cfg.ObjectBytes, etcd.endpoint, etcd.pid(), time.Since(t).Round(time.Millisecond))

	lu, err := launch.Start(ctx, launch.Options{BinDir: cfg.BinDir, DataDir: filepath.Join(dir, "local-up"),
		Args: append(Args(name), "--etcd-servers="+etcd.endpoint)})
	if errors.Is(err, launch.ErrExited) {
		if why, refused := refusal(err.Error()); refused {
			res.Skipped = why
			fmt.Fprintf(progress, "# %s skipped: %s\n", name, why)
			return res, nil
		}
	}
	if err != nil {
		return res, err
	}
	defer func() { _ = lu.Stop(0) }()
	if len(lu.Ready.APIServers) == 0 {
		return res, errors.New("stall: local-up's ready file names no kube-apiserver")
	}
	apiPID := lu.Ready.APIServers[0].PID
	rc, err := clientcmd.BuildConfigFromFlags("", lu.Ready.Kubeconfig)
	if err != nil {
		return res, err
	}
	rc.QPS, rc.Burst = -1, 0
	if err := waitServed(ctx, rc, cfg.Objects); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "# %s: kube-apiserver pid %d serves all %d configmaps (%v after local-up started)\n",
		name, apiPID, cfg.Objects, time.Since(t).Round(time.Millisecond))

	rt, err := rest.TransportFor(rc)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	smp := &sampler{apiPID: apiPID, etcdPID: etcd.pid(), every: cfg.SampleEvery, t0: t0,
		hc: &http.Client{Transport: rt}, apiMetrics: strings.TrimSuffix(rc.Host, "/") + "/metrics", etcdMetrics: etcd.endpoint + "/metrics"}
	smp.start(ctx)
	samplerStopped := false
	defer func() {
		if !samplerStopped {
			smp.stop()
		}
	}()
	wctx, stopWrites := context.WithCancel(ctx)
	writesDone := make(chan [2]int64, 1)
	go func() { d, f := st.writeLoop(wctx, cfg.Objects, cfg.WritesPerSec); writesDone <- [2]int64{d, f} }()
	defer stopWrites()
	readers, err := startReaders(ctx, rc, cfg, t0)
	if err != nil {
		return res, err
	}

	var tl Timeline
	burstDone := make(chan [2]int64, 1)
	startBurst := func() error {
		if err := etcd.pause(); err != nil {
			return err
		}
		go func() { d, f := st.burst(wctx, cfg.Objects, cfg.StallWrites); burstDone <- [2]int64{d, f} }()
		return nil
	}
	steps := []struct {
		wait time.Duration
		do   func() error
		mark *time.Duration
		say  string
	}{
		{cfg.Warmup, nil, &tl.SteadyFrom, "steady window"},
		{cfg.Steady, startBurst, &tl.StallAt, "SIGSTOP etcd"},
		{cfg.Stall, etcd.resume, &tl.ResumeAt, "SIGCONT etcd"},
		{cfg.After, nil, &tl.End, "end of observation; draining reads in flight"},
	}
	for _, s := range steps {
		if err := ctxsleep.Sleep(ctx, s.wait); err != nil {
			readers.finish()
			return res, err
		}
		*s.mark = time.Since(t0)
		if s.do != nil {
			if err := s.do(); err != nil {
				readers.finish()
				return res, err
			}
		}
		fmt.Fprintf(progress, "# %s: %s at %v\n", name, s.say, s.mark.Round(100*time.Millisecond))
	}
	reads := readers.finish()
	b := <-burstDone
	stopWrites()
	w := <-writesDone
	res.Writes, res.WritesFailed = w[0]+b[0], w[1]+b[1]
	res.APIServerHWM, res.EtcdHWM = hwmBytes(apiPID), hwmBytes(etcd.pid())
	samples, metrics := smp.stop()
	samplerStopped = true
	res.FirstErrors = readers.firstErrors()
	summarize(&res, tl, reads, samples, metrics)
	res.Samples, res.Metrics = thinSamples(samples), thinMetrics(metrics)
	fmt.Fprintf(progress, "# %s: drained at %v\n", name, time.Since(t0).Round(100*time.Millisecond))
	return res, ctx.Err()
}

// refusal finds, in local-up's output, kube-apiserver refusing a flag or
// an implementation, which means this build cannot run the configuration.
func refusal(out string) (string, bool) {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		for _, s := range []string{"unknown flag", "unrecognized feature gate", "not available in this build", "invalid argument"} {
			if strings.Contains(l, s) {
				return l, true
			}
		}
	}
	return "", false
}

// waitServed waits until the apiserver's cache (rv=0) holds n configmaps
// in Namespace, and a consistent LIST answers.
func waitServed(ctx context.Context, rc *rest.Config, n int) error {
	c := rest.CopyConfig(rc)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	got := -1
	if ctxsleep.Poll(ctx, 500*time.Millisecond, func() bool {
		l, lerr := cs.CoreV1().ConfigMaps(Namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err = lerr; err == nil {
			got = len(l.Items)
		}
		if got != n {
			return false
		}
		_, err = cs.CoreV1().ConfigMaps(Namespace).List(ctx, metav1.ListOptions{})
		return err == nil
	}) != nil {
		return fmt.Errorf("stall: the apiserver served %d of %d configmaps after 3m (last error %v)", got, n, err)
	}
	return nil
}
