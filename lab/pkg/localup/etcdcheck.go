package localup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ErrEtcdUnreachable is wrapped when an external etcd does not answer.
var ErrEtcdUnreachable = errors.New("localup: etcd did not answer")

// CheckEtcd makes one linearizable read against endpoints and fails with
// ErrEtcdUnreachable if no answer comes within timeout. It lets local-up say
// why it stops instead of leaving kube-apiserver to retry forever.
func CheckEtcd(ctx context.Context, endpoints []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: timeout,
		Context:     ctx,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("%w at %s: %v", ErrEtcdUnreachable, strings.Join(endpoints, ","), err)
	}
	defer cli.Close()
	if _, err := cli.Get(ctx, "/freshcache-local-up-health-check", clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("%w at %s within %s: %v", ErrEtcdUnreachable, strings.Join(endpoints, ","), timeout, err)
	}
	return nil
}
