package kindlb

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// ErrConfig prefixes every error about kind's configuration files.
var ErrConfig = errors.New("kindlb: configuration")

// Config is what the load balancer does, read from kind's LDS and CDS
// files.
type Config struct {
	// Listen is the listener's address ("0.0.0.0", "::"); Port its port,
	// 0 when kind has not configured a listener yet.
	Listen string
	Port   int
	// Servers are the endpoints, in the order of their names.
	Servers []Server
	// ConnectTimeout bounds a connection to a server.
	ConnectTimeout time.Duration
	// Check is the servers' health check; its Path is "" for none.
	Check Check
}

// Server is one endpoint: a host name (resolved by Docker's DNS on kind's
// network) or an address, and a port.
type Server struct {
	Host string
	Port int
}

// Check is an HTTPS health check of every server.
type Check struct {
	Path              string
	Interval, Timeout time.Duration
	// Fall checks that fail in a row take a server out; Rise checks that
	// pass bring it back.
	Fall, Rise int
}

// socketAddress is envoy's address.socket_address.
type socketAddress struct {
	Address   string `json:"address"`
	PortValue int    `json:"port_value"`
}

type address struct {
	SocketAddress *socketAddress `json:"socket_address"`
}

type ldsFile struct {
	Resources []struct {
		Address address `json:"address"`
	} `json:"resources"`
}

type cdsFile struct {
	Resources []struct {
		ConnectTimeout string `json:"connect_timeout"`
		HealthChecks   []struct {
			Timeout            string `json:"timeout"`
			Interval           string `json:"interval"`
			UnhealthyThreshold int    `json:"unhealthy_threshold"`
			HealthyThreshold   int    `json:"healthy_threshold"`
			HTTPHealthCheck    *struct {
				Path string `json:"path"`
			} `json:"http_health_check"`
		} `json:"health_checks"`
		LoadAssignment struct {
			Endpoints []struct {
				LBEndpoints []struct {
					Endpoint struct {
						Address address `json:"address"`
					} `json:"endpoint"`
				} `json:"lb_endpoints"`
			} `json:"endpoints"`
		} `json:"load_assignment"`
	} `json:"resources"`
}

// Parse reads kind's listener (lds) and cluster (cds) files. kind
// configures one listener and one cluster; more of either is an error,
// as is a listener without a port or an endpoint without an address.
func Parse(lds, cds []byte) (Config, error) {
	c := Config{ConnectTimeout: time.Second}
	var l ldsFile
	if err := yaml.Unmarshal(lds, &l); err != nil {
		return Config{}, fmt.Errorf("%w: listeners: %v", ErrConfig, err)
	}
	switch len(l.Resources) {
	case 0:
	case 1:
		sa := l.Resources[0].Address.SocketAddress
		if sa == nil || sa.PortValue <= 0 || sa.PortValue > 65535 {
			return Config{}, fmt.Errorf("%w: the listener has no port", ErrConfig)
		}
		c.Listen, c.Port = sa.Address, sa.PortValue
		if c.Listen == "" {
			c.Listen = "0.0.0.0"
		}
	default:
		return Config{}, fmt.Errorf("%w: %d listeners, kind configures one", ErrConfig, len(l.Resources))
	}
	var cl cdsFile
	if err := yaml.Unmarshal(cds, &cl); err != nil {
		return Config{}, fmt.Errorf("%w: clusters: %v", ErrConfig, err)
	}
	switch len(cl.Resources) {
	case 0:
		return c, nil
	case 1:
	default:
		return Config{}, fmt.Errorf("%w: %d clusters, kind configures one", ErrConfig, len(cl.Resources))
	}
	r := cl.Resources[0]
	var err error
	if r.ConnectTimeout != "" {
		if c.ConnectTimeout, err = duration(r.ConnectTimeout); err != nil {
			return Config{}, err
		}
	}
	if len(r.HealthChecks) > 0 && r.HealthChecks[0].HTTPHealthCheck != nil {
		h := r.HealthChecks[0]
		c.Check = Check{Path: h.HTTPHealthCheck.Path, Fall: max(h.UnhealthyThreshold, 1), Rise: max(h.HealthyThreshold, 1)}
		if c.Check.Path == "" {
			c.Check.Path = "/"
		}
		if c.Check.Interval, err = duration(h.Interval); err != nil {
			return Config{}, err
		}
		if c.Check.Timeout, err = duration(h.Timeout); err != nil {
			return Config{}, err
		}
	}
	for _, e := range r.LoadAssignment.Endpoints {
		for _, lb := range e.LBEndpoints {
			sa := lb.Endpoint.Address.SocketAddress
			if sa == nil || sa.Address == "" || sa.PortValue <= 0 || sa.PortValue > 65535 {
				return Config{}, fmt.Errorf("%w: an endpoint without an address and port", ErrConfig)
			}
			c.Servers = append(c.Servers, Server{Host: sa.Address, Port: sa.PortValue})
		}
	}
	sort.Slice(c.Servers, func(i, j int) bool { return c.Servers[i].Host < c.Servers[j].Host })
	return c, nil
}

// duration reads a protobuf JSON duration ("0.25s", "3s"); "" is zero.
func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if !strings.HasSuffix(s, "s") {
		return 0, fmt.Errorf("%w: duration %q does not end in s", ErrConfig, s)
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%w: duration %q", ErrConfig, s)
	}
	return time.Duration(f * float64(time.Second)), nil
}
