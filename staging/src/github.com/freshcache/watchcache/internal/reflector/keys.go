package reflector

import (
	"path"
	"strings"
)

// EtcdKey is the key prefix under which an etcd3 store with
// storagebackend.Config.Prefix storagePrefix keeps the objects of
// resourcePrefix ("/pods"): "/registry/pods/".
func EtcdKey(storagePrefix, resourcePrefix string) string {
	k := strings.TrimPrefix(resourcePrefix, "/")
	if !strings.HasSuffix(k, "/") {
		k += "/"
	}
	return StorageRoot(storagePrefix) + k
}

// StorageRoot is the etcd key under which the etcd3 store keeps every
// resource of a storage prefix: the prefix made absolute, with a trailing
// "/".
func StorageRoot(storagePrefix string) string {
	root := path.Join("/", storagePrefix)
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	return root
}
