package localup

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI names the credential files of a local control plane.
type PKI struct {
	Dir string
}

// CACert is the cluster CA's certificate; every file is under Dir.
func (p PKI) CACert() string { return filepath.Join(p.Dir, "ca.crt") }

// CAKey is the cluster CA's private key.
func (p PKI) CAKey() string { return filepath.Join(p.Dir, "ca.key") }

// ServingCert is the apiservers' serving certificate.
func (p PKI) ServingCert() string { return filepath.Join(p.Dir, "apiserver.crt") }

// ServingKey is the apiservers' serving key.
func (p PKI) ServingKey() string { return filepath.Join(p.Dir, "apiserver.key") }

// AdminCert is the admin client certificate (AdminUser).
func (p PKI) AdminCert() string { return filepath.Join(p.Dir, "admin.crt") }

// AdminKey is the admin client key.
func (p PKI) AdminKey() string { return filepath.Join(p.Dir, "admin.key") }

// ServiceAccountKey is the key that signs service account tokens.
func (p PKI) ServiceAccountKey() string { return filepath.Join(p.Dir, "sa.key") }

// ServiceAccountPub is the key that verifies service account tokens.
func (p PKI) ServiceAccountPub() string { return filepath.Join(p.Dir, "sa.pub") }

// ClientCert is the certificate of the client credential called name (see
// EnsureClient).
func (p PKI) ClientCert(name string) string { return filepath.Join(p.Dir, name+".crt") }

// ClientKey is the key of the client credential called name.
func (p PKI) ClientKey(name string) string { return filepath.Join(p.Dir, name+".key") }

// ServingCertFor is the certificate of component's serving credential (see
// EnsureServing).
func (p PKI) ServingCertFor(component string) string {
	return filepath.Join(p.Dir, component+"-serving.crt")
}

// ServingKeyFor is the key of component's serving credential.
func (p PKI) ServingKeyFor(component string) string {
	return filepath.Join(p.Dir, component+"-serving.key")
}

// AdminUser is the common name of the admin credential. It is in the
// system:masters group, which RBAC lets do anything.
const AdminUser = "freshcache-admin"

// The identities of the other components, as a real cluster gives them:
// RBAC's bootstrap policy binds roles to these user names (and, for
// kubelets, the Node authorizer recognises system:node:<name> in
// system:nodes), so each component gets exactly its own permissions.
const (
	ControllerManagerUser = "system:kube-controller-manager"
	SchedulerUser         = "system:kube-scheduler"
	NodesGroup            = "system:nodes"
)

// NodeUser is the user name of the kubelet of node.
func NodeUser(node string) string { return "system:node:" + node }

// Ensure creates every missing file. Existing files are kept, so restarts
// reuse the credentials that earlier kubeconfigs hold; only the apiservers'
// serving certificate is issued again, by the same CA, when it is not
// valid for every one of hosts (a data directory of a run without real
// nodes lacks the node IP). Clients check it against the CA, so they do
// not notice.
func (p PKI) Ensure(hosts []string) error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	if !exists(p.CACert()) || !exists(p.CAKey()) {
		if err := p.writeCA(); err != nil {
			return err
		}
	}
	ca, caKey, err := p.loadCA()
	if err != nil {
		return err
	}
	if !exists(p.ServingKey()) || !certCovers(p.ServingCert(), ca, hosts) {
		if err := writeLeaf(servingTemplate("kube-apiserver", hosts), ca, caKey, p.ServingCert(), p.ServingKey()); err != nil {
			return err
		}
	}
	if !exists(p.AdminCert()) || !exists(p.AdminKey()) {
		tmpl := leafTemplate(AdminUser, []string{"system:masters"}, x509.ExtKeyUsageClientAuth)
		if err := writeLeaf(tmpl, ca, caKey, p.AdminCert(), p.AdminKey()); err != nil {
			return err
		}
	}
	if !exists(p.ServiceAccountKey()) || !exists(p.ServiceAccountPub()) {
		if err := p.writeServiceAccountKeys(); err != nil {
			return err
		}
	}
	return nil
}

// EnsureClient writes, unless both exist, a client certificate and key
// called name for user cn in groups orgs, signed by the CA that Ensure
// wrote. An existing pair is kept even if it names another user: the name
// is the identity, so callers give each identity its own name.
func (p PKI) EnsureClient(name, cn string, orgs []string) error {
	if exists(p.ClientCert(name)) && exists(p.ClientKey(name)) {
		return nil
	}
	ca, caKey, err := p.loadCA()
	if err != nil {
		return err
	}
	return writeLeaf(leafTemplate(cn, orgs, x509.ExtKeyUsageClientAuth), ca, caKey, p.ClientCert(name), p.ClientKey(name))
}

// EnsureServing writes, unless both exist, a serving certificate for
// component valid for hosts, signed by the CA, so that local-up (and anyone
// with ca.crt) can check the component's /healthz without skipping TLS
// verification.
func (p PKI) EnsureServing(component string, hosts []string) error {
	if exists(p.ServingCertFor(component)) && exists(p.ServingKeyFor(component)) {
		return nil
	}
	ca, caKey, err := p.loadCA()
	if err != nil {
		return err
	}
	return writeLeaf(servingTemplate(component, hosts), ca, caKey, p.ServingCertFor(component), p.ServingKeyFor(component))
}

// certCovers reports whether the certificate at path was signed by ca and
// is valid for every one of hosts (IP addresses and DNS names).
func certCovers(path string, ca *x509.Certificate, hosts []string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.CheckSignatureFrom(ca) != nil {
		return false
	}
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func servingTemplate(cn string, hosts []string) *x509.Certificate {
	tmpl := leafTemplate(cn, nil, x509.ExtKeyUsageServerAuth)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return tmpl
}

// DefaultHosts are the names the serving certificate is valid for: loopback,
// and the kubernetes Service's ClusterIP (the first address of
// serviceClusterIPRange) and in-cluster names.
func DefaultHosts() []string {
	return []string{
		"127.0.0.1", "::1", "10.0.0.1", "localhost",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
}

func (p PKI) writeCA() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "freshcache-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	return writeKeyPair(p.CACert(), p.CAKey(), der, key)
}

func (p PKI) loadCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(p.CACert())
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(p.CAKey())
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("localup: %s or %s is not PEM; remove both to regenerate", p.CACert(), p.CAKey())
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func leafTemplate(cn string, orgs []string, usage x509.ExtKeyUsage) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(5 * 365 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
}

func writeLeaf(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certPath, keyPath string) error {
	sn, err := serial()
	if err != nil {
		return err
	}
	tmpl.SerialNumber = sn
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	return writeKeyPair(certPath, keyPath, der, key)
}

func writeKeyPair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// writeServiceAccountKeys writes an RSA key: kube-apiserver signs
// service-account tokens with RS256 by default.
func (p PKI) writeServiceAccountKeys() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.ServiceAccountKey(), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(p.ServiceAccountPub(), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}
