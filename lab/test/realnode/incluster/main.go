// Command incluster is what an in-cluster client does, for
// lab/test/realnode: run in a pod with its service account token mounted, it
// reaches the apiserver through the kubernetes Service with client-go's
// in-cluster configuration (KUBERNETES_SERVICE_HOST and _PORT, the token,
// and the CA the certificate is checked against), then again by the
// Service's DNS name, and asks each time who it is (a SelfSubjectReview).
// It prints one line per address and exits non-zero on any failure. It is
// built statically and mounted into a busybox pod: the image has no TLS
// client that today's Go servers accept.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "incluster:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 10 * time.Second
	byName := rest.CopyConfig(cfg)
	byName.Host = "https://kubernetes.default.svc"
	for _, c := range []*rest.Config{cfg, byName} {
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			return err
		}
		r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("%s: %w", c.Host, err)
		}
		fmt.Printf("%s user=%s\n", c.Host, r.Status.UserInfo.Username)
	}
	return nil
}
