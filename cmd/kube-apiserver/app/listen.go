package app

// --extra-bind-address: upstream's kube-apiserver listens on one address
// (--bind-address), or on all of them. local-up's real node needs the
// apiserver on loopback, where local clients and kubeconfigs point, and on
// the node's IP, where the kubernetes Service's endpoint sends pods; all
// addresses would also expose it on every interface of the machine. So the
// server gets one listener that accepts on each address at the same port.

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/spf13/pflag"

	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// listenOptions are the serving flags this build adds to upstream's.
type listenOptions struct {
	// ExtraBindAddresses are served at --secure-port beside --bind-address.
	ExtraBindAddresses []net.IP
}

func (o *listenOptions) addFlags(fs *pflag.FlagSet) {
	fs.IPSliceVar(&o.ExtraBindAddresses, "extra-bind-address", nil,
		"Further IP addresses to serve on, at the port of --secure-port, beside --bind-address (which must not be unspecified). "+
			"The loopback client and the port published in the kubernetes Service's endpoints stay those of --bind-address.")
}

// validate reports flag combinations the listener cannot honour.
func (o *listenOptions) validate(s *genericoptions.SecureServingOptions) []error {
	if len(o.ExtraBindAddresses) == 0 {
		return nil
	}
	var errs []error
	if s.BindAddress == nil || s.BindAddress.IsUnspecified() {
		errs = append(errs, errors.New("--extra-bind-address: --bind-address already listens on every address"))
	}
	if s.PermitPortSharing || s.PermitAddressSharing {
		errs = append(errs, errors.New("--extra-bind-address cannot be combined with --permit-port-sharing or --permit-address-sharing"))
	}
	for _, ip := range o.ExtraBindAddresses {
		if ip.IsUnspecified() || ip.Equal(s.BindAddress) {
			errs = append(errs, fmt.Errorf("--extra-bind-address=%s: give specific addresses other than --bind-address", ip))
		}
	}
	return errs
}

// apply opens the listeners and hands them to the secure serving options
// as one, so that upstream's ApplyTo takes it instead of opening its own.
// It does nothing without extra addresses.
func (o *listenOptions) apply(s *genericoptions.SecureServingOptions) error {
	if len(o.ExtraBindAddresses) == 0 || s.Listener != nil || s.BindPort <= 0 {
		return nil
	}
	network := s.BindNetwork
	if network == "" {
		network = "tcp"
	}
	ln, err := listenAll(network, s.BindAddress, s.BindPort, o.ExtraBindAddresses)
	if err != nil {
		return err
	}
	s.Listener = ln
	return nil
}

// listenAll listens on primary:port, then on each extra address at the
// port primary got (port 0 picks one), and returns one listener for all.
func listenAll(network string, primary net.IP, port int, extra []net.IP) (net.Listener, error) {
	first, err := net.Listen(network, net.JoinHostPort(primary.String(), strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("failed to create listener: %w", err)
	}
	lns := []net.Listener{first}
	port = first.Addr().(*net.TCPAddr).Port
	for _, ip := range extra {
		ln, err := net.Listen(network, net.JoinHostPort(ip.String(), strconv.Itoa(port)))
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return nil, fmt.Errorf("failed to create listener for --extra-bind-address=%s: %w", ip, err)
		}
		lns = append(lns, ln)
	}
	return newMultiListener(lns), nil
}

// multiListener accepts on several listeners. Addr is the first one's:
// the loopback client configuration and the published port come from it.
// Close closes all of them and is safe to call more than once.
type multiListener struct {
	lns      []net.Listener
	accepted chan acceptResult
	// closed is closed by Close; the accept loops then stop handing over.
	closed    chan struct{}
	closeOnce sync.Once
}

type acceptResult struct {
	conn net.Conn
	err  error
}

func newMultiListener(lns []net.Listener) *multiListener {
	m := &multiListener{lns: lns, accepted: make(chan acceptResult), closed: make(chan struct{})}
	for _, ln := range lns {
		go m.acceptLoop(ln)
	}
	return m
}

// acceptLoop hands every connection and every error of ln to Accept, as a
// single listener would return them: the server retries after a temporary
// error (too many open files) and closes the listener after any other.
// Handing over blocks until the server's next Accept, so a failing
// listener cannot spin.
func (m *multiListener) acceptLoop(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		select {
		case m.accepted <- acceptResult{conn, err}:
		case <-m.closed:
			if conn != nil {
				_ = conn.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Accept returns the next connection on any of the listeners.
func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case r := <-m.accepted:
		return r.conn, r.err
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

// Close closes every listener.
func (m *multiListener) Close() error {
	var errs []error
	m.closeOnce.Do(func() {
		close(m.closed)
		for _, ln := range m.lns {
			errs = append(errs, ln.Close())
		}
	})
	return errors.Join(errs...)
}

// Addr is the first listener's address.
func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
