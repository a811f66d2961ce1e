package kindlb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestImage runs the offline load-balancer image as kind v0.33 runs its
// envoy image: started with a bash loop around `envoy -c <bootstrap>` on
// a user-defined Docker network, then configured by renaming new listener
// and cluster files into place through `docker exec`. Two backends answer
// HTTPS with their names (haproxy from the same image, with a throwaway
// certificate). Requests through the published port reach both; once one
// backend stops, the health check takes it out and every request reaches
// the other. It needs Docker and the image: hack/kind-images.sh runs it
// with KINDLB_IMAGE set after building the image; without it the test is
// skipped.
func TestImage(t *testing.T) {
	image := os.Getenv("KINDLB_IMAGE")
	if image == "" {
		t.Skip("KINDLB_IMAGE is not set: hack/kind-images.sh sets it after building the image")
	}
	docker := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("docker", args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	name := fmt.Sprintf("freshcache-kindlb-test-%d", os.Getpid())
	docker("", "network", "create", name)
	t.Cleanup(func() { _ = exec.Command("docker", "network", "rm", name).Run() })
	rm := func(c string) { t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", c).Run() }) }

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "backend.pem"), selfSigned(t), 0o644); err != nil {
		t.Fatal(err)
	}
	backends := []string{name + "-cp1", name + "-cp2"}
	for _, b := range backends {
		cfg := "global\n    log stdout format raw local0\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 10s\n    timeout server 10s\n" +
			"frontend apiserver\n    bind :6443 ssl crt /certs/backend.pem\n    http-request return status 200 content-type text/plain string " + b + "\n"
		if err := os.WriteFile(filepath.Join(dir, b+".cfg"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		rm(b)
		docker("", "run", "-d", "--name", b, "--network", name, "-v", dir+":/certs:ro", image, "haproxy", "-db", "-f", "/certs/"+b+".cfg")
	}

	lb := name + "-lb"
	rm(lb)
	bootstrap := "dynamic_resources:\n  cds_config:\n    path_config_source:\n      path: /home/envoy/cds.yaml\n  lds_config:\n    path_config_source:\n      path: /home/envoy/lds.yaml\n"
	start := fmt.Sprintf("mkdir -p /home/envoy && printf '%%s' '%s' > /home/envoy/envoy.yaml && echo 'resources: []' > /home/envoy/cds.yaml && echo 'resources: []' > /home/envoy/lds.yaml && while true; do envoy -c /home/envoy/envoy.yaml && break; sleep 1; done", bootstrap)
	docker("", "run", "-d", "--name", lb, "--network", name, "-p", "127.0.0.1::6443", image, "bash", "-c", start)
	port := docker("", "port", lb, "6443/tcp")

	cds := strings.NewReplacer("ha-control-plane2", backends[1], "ha-control-plane", backends[0]).Replace(kindCDS)
	docker(kindLDS, "exec", "-i", lb, "cp", "/dev/stdin", "/home/envoy/lds.yaml.tmp")
	docker(cds, "exec", "-i", lb, "cp", "/dev/stdin", "/home/envoy/cds.yaml.tmp")
	docker("", "exec", lb, "sh", "-c", "chmod 666 /home/envoy/cds.yaml.tmp /home/envoy/lds.yaml.tmp && mv /home/envoy/cds.yaml.tmp /home/envoy/cds.yaml && mv /home/envoy/lds.yaml.tmp /home/envoy/lds.yaml")

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // the backends' throwaway certificate
		DisableKeepAlives: true,                                  // a connection per request, so round robin shows
	}}
	get := func() (string, error) {
		resp, err := client.Get("https://" + port + "/healthz")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; load balancer log:\n%s", what, docker("", "logs", lb))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	seen := map[string]bool{}
	until("both backends to answer through the load balancer", func() bool {
		if body, err := get(); err == nil {
			seen[body] = true
		}
		return seen[backends[0]] && seen[backends[1]]
	})

	docker("", "stop", "-t", "1", backends[0])
	until("ten answers in a row, all from the backend left", func() bool {
		for range 10 {
			if body, err := get(); err != nil || body != backends[1] {
				return false
			}
		}
		return true
	})
}

// selfSigned returns a PEM certificate and key for the test's backends.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kindlb-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})...)
}
