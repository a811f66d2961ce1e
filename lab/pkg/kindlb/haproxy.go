package kindlb

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// HealthPort is where haproxy answers 200 on loopback whatever the
// configuration, so that it always has a proxy to run (it refuses a
// configuration without one) and a probe inside the container can tell it
// is up. envoy's admin port, which kind's bootstrap puts at 10000.
const HealthPort = 10000

// dockerDNS is Docker's embedded DNS server, which resolves container
// names on a user-defined network such as kind's: kind's endpoints are the
// control planes' container names.
const dockerDNS = "127.0.0.11:53"

// idleTimeout is how long a proxied connection may be idle: envoy's
// tcp_proxy default, which kind's listener keeps. Watches are long-lived
// connections that may be quiet for minutes.
const idleTimeout = time.Hour

var serverName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Render returns the haproxy configuration that does what c says.
func Render(c Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Rendered by kind-lb (lab/pkg/kindlb) from kind's listener and cluster files.\n")
	b.WriteString("global\n    log stdout format raw local0 info\n\n")
	fmt.Fprintf(&b, "resolvers docker\n    nameserver dns %s\n    hold valid 10s\n\n", dockerDNS)
	fmt.Fprintf(&b, "defaults\n    mode tcp\n    log global\n    option dontlognull\n    timeout connect %s\n    timeout client %s\n    timeout server %s\n\n",
		ms(c.ConnectTimeout), ms(idleTimeout), ms(idleTimeout))
	fmt.Fprintf(&b, "listen health\n    mode http\n    bind 127.0.0.1:%d\n    http-request return status 200 content-type text/plain string ok\n", HealthPort)
	if c.Port == 0 {
		return b.String()
	}
	bind := fmt.Sprintf("%s:%d", c.Listen, c.Port)
	if strings.Contains(c.Listen, ":") {
		// "::" (kind's IPv6 clusters): both families, as envoy binds it.
		bind = fmt.Sprintf("%s:%d v4v6", c.Listen, c.Port)
	}
	fmt.Fprintf(&b, "\nfrontend apiserver\n    bind %s\n    default_backend kube_apiservers\n", bind)
	b.WriteString("\nbackend kube_apiservers\n    balance roundrobin\n")
	server := " resolvers docker init-addr libc,none"
	if c.Check.Path != "" {
		fmt.Fprintf(&b, "    option httpchk GET %s\n    http-check expect status 200\n    timeout check %s\n", c.Check.Path, ms(c.Check.Timeout))
		server = fmt.Sprintf(" check check-ssl verify none inter %s fall %d rise %d", ms(c.Check.Interval), c.Check.Fall, c.Check.Rise) + server
	}
	for i, s := range c.Servers {
		name := s.Host
		if !serverName.MatchString(name) {
			name = fmt.Sprintf("server%d", i)
		}
		host := s.Host
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		fmt.Fprintf(&b, "    server %s %s:%d%s\n", name, host, s.Port, server)
	}
	return b.String()
}

// ms is d in haproxy's time format, whole milliseconds (at least 1).
func ms(d time.Duration) string {
	return fmt.Sprintf("%dms", max(d.Milliseconds(), 1))
}
