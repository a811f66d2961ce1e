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
	ca, err := os.ReadFile(pki.CACert())
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(pki.AdminCert())
	if err != nil {
		return err
	}
	key, err := os.ReadFile(pki.AdminKey())
	if err != nil {
		return err
	}
	const name = "freshcache-local"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: AdminUser, Namespace: "default"}
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
