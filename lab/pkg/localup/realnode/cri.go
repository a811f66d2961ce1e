package realnode

// The node's containerd spoken to over CRI, as the kubelet does: to know
// it serves, and at the end to remove every pod sandbox, which runs the
// CNI plugins' DEL (addresses released, veths and network namespaces
// gone) before containerd stops.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func criClient(socket string) (runtimeapi.RuntimeServiceClient, func(), error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return runtimeapi.NewRuntimeServiceClient(conn), func() { _ = conn.Close() }, nil
}

// criReady reports whether containerd's CRI service answers Version.
func criReady(ctx context.Context, socket string) (bool, string) {
	c, closeFn, err := criClient(socket)
	if err != nil {
		return false, err.Error()
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := c.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return false, err.Error()
	}
	return v.RuntimeName != "", "no runtime name"
}

// removeSandboxes stops and removes every pod sandbox (and so its
// containers).
func removeSandboxes(ctx context.Context, socket string) error {
	c, closeFn, err := criClient(socket)
	if err != nil {
		return err
	}
	defer closeFn()
	list, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("realnode: listing pod sandboxes: %w", err)
	}
	var errs []error
	for _, sb := range list.Items {
		if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("realnode: stopping sandbox of pod %s/%s: %w", sb.Metadata.GetNamespace(), sb.Metadata.GetName(), err))
			continue
		}
		if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("realnode: removing sandbox of pod %s/%s: %w", sb.Metadata.GetNamespace(), sb.Metadata.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// httpOK reports whether url answers 200.
func httpOK(ctx context.Context, url string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, body)
}
