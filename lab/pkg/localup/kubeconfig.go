package localup

import (
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig for server that authenticates as the
// admin user with the PKI's client certificate. Credentials are embedded, so
// the file keeps working when copied elsewhere.
func WriteKubeconfig(path, server string, pki PKI) error {
	return writeKubeconfig(path, server, pki.CACert(), AdminUser, pki.AdminCert(), pki.AdminKey())
}

// WriteClientKubeconfig writes a kubeconfig for server that authenticates
// as user with the client credential called name (PKI.EnsureClient).
func WriteClientKubeconfig(path, server string, pki PKI, name, user string) error {
	return writeKubeconfig(path, server, pki.CACert(), user, pki.ClientCert(name), pki.ClientKey(name))
}

func writeKubeconfig(path, server, caFile, user, certFile, keyFile string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	const name = "freshcache-local"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

// RESTConfig is the admin's client configuration for server.
func RESTConfig(server string, pki PKI) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   pki.CACert(),
			CertFile: pki.AdminCert(),
			KeyFile:  pki.AdminKey(),
		},
	}
}
