// Command freshcache-pause is the pause container of local-up's real nodes
// (--real-nodes): the first process of every pod sandbox, which holds the
// pod's namespaces open. It sleeps until SIGINT or SIGTERM, then exits 0,
// and reaps every child it inherits: with a shared PID namespace it is the
// pod's init, and exited processes reparented to it would otherwise stay
// zombies.
//
// make build links it statically (CGO_ENABLED=0), because local-up packs it
// alone into an image (registry.k8s.io/pause:3.10.2, the tag the kubelet
// and containerd expect) with no libc beside it. It takes no flags; -v
// prints its name, as upstream's pause does.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("freshcache-pause")
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: freshcache-pause should be the first process")
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", sig)
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child: one SIGCHLD may stand for several.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
