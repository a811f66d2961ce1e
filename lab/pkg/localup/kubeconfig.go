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
	pem, err := readFiles(caFile, certFile, keyFile)
	if err != nil {
		return err
	}
	ca, cert, key := pem[0], pem[1], pem[2]
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

// readFiles reads every file of paths, in order; the first that fails ends
// it.
func readFiles(paths ...string) ([][]byte, error) {
	out := make([][]byte, len(paths))
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
