package localup

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ReadyFileName is the file under the data directory that local-up writes
// once everything is up, and removes when it stops. Tests and scripts read
// it instead of local-up's human output.
const ReadyFileName = "ready.json"

// ReadyFile is the content of ready.json. Paths are absolute.
type ReadyFile struct {
	// PID is local-up's own process id: a reader that started local-up
	// checks it to tell this run's file from one a killed run left behind.
	PID     int    `json:"pid"`
	DataDir string `json:"dataDir"`
	// Kubeconfig is the admin kubeconfig of the first apiserver
	// (APIServers[0].Kubeconfig).
	Kubeconfig        string         `json:"kubeconfig"`
	Etcd              ReadyEtcd      `json:"etcd"`
	APIServers        []ReadyProcess `json:"apiservers"`
	ControllerManager *ReadyProcess  `json:"controllerManager,omitempty"`
	Scheduler         *ReadyProcess  `json:"scheduler,omitempty"`
	Nodes             []ReadyNode    `json:"nodes"`
	// RealNodes are the --real-nodes.
	RealNodes []ReadyRealNode `json:"realNodes,omitempty"`
	// Kwok is the kwok controller of --kwok-nodes.
	Kwok *ReadyKwok `json:"kwok,omitempty"`
}

// ReadyKwok is the kwok controller and its nodes.
type ReadyKwok struct {
	PID        int    `json:"pid"`
	Kubeconfig string `json:"kubeconfig"`
	User       string `json:"user"`
	// Config is kwok's configuration file (its stages).
	Config string `json:"config"`
	Log    string `json:"log"`
	// Nodes are the kwok nodes' names, in index order.
	Nodes []string `json:"nodes"`
}

// ReadyEtcd is where etcd serves.
type ReadyEtcd struct {
	Endpoints []string `json:"endpoints"`
	// Embedded is false with --etcd-servers.
	Embedded bool `json:"embedded"`
	Members  int  `json:"members,omitempty"`
}

// ReadyProcess is a kube-apiserver, the controller-manager or the
// scheduler.
type ReadyProcess struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// URL is the process's https endpoint.
	URL string `json:"url"`
	// Kubeconfig is, for an apiserver, the admin kubeconfig for it; for a
	// controller, the one the controller itself uses.
	Kubeconfig string `json:"kubeconfig"`
	// User is the identity Kubeconfig authenticates as.
	User string `json:"user"`
	Log  string `json:"log"`
}

// ReadyNode is a hollow node.
type ReadyNode struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// APIServer is the name of the apiserver it talks to, APIServerURL
	// that apiserver's URL.
	APIServer    string `json:"apiserver"`
	APIServerURL string `json:"apiserverURL"`
	KubeletPort  int    `json:"kubeletPort"`
	Kubeconfig   string `json:"kubeconfig"`
	User         string `json:"user"`
	Log          string `json:"log"`
	// RootDir is the kubelet's root directory (kubemark picks it under
	// /tmp); local-up removes it when the node stops.
	RootDir string `json:"rootDir,omitempty"`
}

// ReadyFilePath is where local-up with dataDir writes its ready file.
func ReadyFilePath(dataDir string) string { return filepath.Join(dataDir, ReadyFileName) }

// ReadReadyFile reads and parses a ready file.
func ReadReadyFile(path string) (*ReadyFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f ReadyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("localup: %s: %w", path, err)
	}
	return &f, nil
}

func (c *Cluster) readyFile() *ReadyFile {
	f := &ReadyFile{
		PID:     os.Getpid(),
		DataDir: c.dataDir,
		Etcd:    ReadyEtcd{Endpoints: c.Endpoints, Embedded: c.Etcd != nil},
		Nodes:   []ReadyNode{},
	}
	if c.Etcd != nil {
		f.Etcd.Members = c.Options.EtcdMembers
	}
	for i, s := range c.APIServers {
		f.APIServers = append(f.APIServers, ReadyProcess{Name: s.Name, PID: s.Pid(), URL: s.URL, Kubeconfig: c.Kubeconfigs[i], User: AdminUser, Log: s.LogPath})
	}
	if len(c.Kubeconfigs) > 0 {
		f.Kubeconfig = c.Kubeconfigs[0]
	}
	component := func(comp *Component) *ReadyProcess {
		if comp == nil {
			return nil
		}
		return &ReadyProcess{Name: comp.Name, PID: comp.Pid(), URL: comp.URL, Kubeconfig: comp.Kubeconfig, User: comp.User, Log: comp.LogPath}
	}
	f.RealNodes = c.readyRealNodes()
	if k := c.Kwok; k != nil {
		f.Kwok = &ReadyKwok{PID: k.Pid(), Kubeconfig: k.Kubeconfig, User: KwokUser, Config: k.Config, Log: k.LogPath, Nodes: k.Nodes}
	}
	f.ControllerManager = component(c.ControllerManager)
	f.Scheduler = component(c.Scheduler)
	for _, n := range c.Nodes {
		api := c.APIServers[n.APIServer]
		f.Nodes = append(f.Nodes, ReadyNode{
			Name: n.NodeName, PID: n.Pid(), APIServer: api.Name, APIServerURL: api.URL, KubeletPort: n.KubeletPort,
			Kubeconfig: n.Kubeconfig, User: NodeUser(n.NodeName), Log: n.LogPath, RootDir: n.RootDir(),
		})
	}
	return f
}

// writeReadyFile writes the ready file atomically: a reader sees no file
// or a whole one.
func (c *Cluster) writeReadyFile() error {
	data, err := json.MarshalIndent(c.readyFile(), "", "  ")
	if err != nil {
		return err
	}
	path := ReadyFilePath(c.dataDir)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
