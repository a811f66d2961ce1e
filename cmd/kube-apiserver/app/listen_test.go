package app

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// TestListenAllServesEveryAddress: one listener accepts on the primary
// address and on each extra one at the port the primary picked, reports
// the primary's address, and stops every listener on Close.
func TestListenAllServesEveryAddress(t *testing.T) {
	primary, extra := net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2") // all of 127/8 is local on Linux
	ln, err := listenAll("tcp", primary, 0, []net.IP{extra})
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	if !addr.IP.Equal(primary) || addr.Port == 0 {
		t.Fatalf("Addr() = %v, want %s with the picked port", addr, primary)
	}
	for _, ip := range []net.IP{primary, extra} {
		target := net.JoinHostPort(ip.String(), strconv.Itoa(addr.Port))
		c, err := net.Dial("tcp", target)
		if err != nil {
			t.Fatalf("dial %s: %v", target, err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got := s.LocalAddr().(*net.TCPAddr).IP; !got.Equal(ip) {
			t.Errorf("accepted a connection to %s, want one to %s", got, ip)
		}
		if _, ok := s.(*net.TCPConn); !ok {
			t.Errorf("accepted %T, want *net.TCPConn (the server sets keep-alives on it)", s)
		}
		_ = s.Close()
		_ = c.Close()
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
	}
	_ = ln.Close() // twice is fine
	for _, ip := range []net.IP{primary, extra} {
		if c, err := net.Dial("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(addr.Port))); err == nil {
			_ = c.Close()
			t.Errorf("%s still accepts after Close", ip)
		}
	}
}

// TestListenAllBusyExtraPort: a busy port on an extra address fails the
// start and releases the primary's.
func TestListenAllBusyExtraPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	_, err = listenAll("tcp", net.ParseIP("127.0.0.1"), port, []net.IP{net.ParseIP("127.0.0.3")})
	if err == nil || !strings.Contains(err.Error(), "--extra-bind-address=127.0.0.3") {
		t.Fatalf("listenAll on a busy extra port = %v, want an error naming the flag", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("the primary's port was not released: %v", err)
	}
	_ = ln.Close()
}

func TestListenOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		bind    string
		extra   []string
		sharing bool
		want    string // "" means valid
	}{
		{name: "no extra addresses", bind: "0.0.0.0"},
		{name: "loopback and a node IP", bind: "127.0.0.1", extra: []string{"10.200.0.1"}},
		{name: "all addresses already", bind: "0.0.0.0", extra: []string{"10.200.0.1"}, want: "every address"},
		{name: "the bind address again", bind: "127.0.0.1", extra: []string{"127.0.0.1"}, want: "other than --bind-address"},
		{name: "unspecified extra", bind: "127.0.0.1", extra: []string{"0.0.0.0"}, want: "other than --bind-address"},
		{name: "port sharing", bind: "127.0.0.1", extra: []string{"10.200.0.1"}, sharing: true, want: "--permit-port-sharing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &genericoptions.SecureServingOptions{BindAddress: net.ParseIP(tt.bind), BindPort: 6443, PermitPortSharing: tt.sharing}
			o := &listenOptions{}
			for _, e := range tt.extra {
				o.ExtraBindAddresses = append(o.ExtraBindAddresses, net.ParseIP(e))
			}
			errs := o.validate(s)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("validate = %v, want none", errs)
			case tt.want != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.want)):
				t.Errorf("validate = %v, want one about %q", errs, tt.want)
			}
		})
	}
}
