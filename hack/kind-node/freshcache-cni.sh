#!/bin/bash
# hack/kind-images.sh: kind's network with Debian's CNI plugins. Every 5 s,
# with the kubelet's credentials (nodes may list nodes):
# - once this node has a podCIDR (the controller-manager allocates it from
#   kind's podSubnet), write a bridge + host-local + portmap CNI config for it;
# - route every other node's podCIDR through that node's InternalIP (all
#   nodes share kind's Docker network, so the next hop is on-link).
# Since 1.37 the Node authorizer lets a node read only its own Node, so a
# control-plane node (it has admin.conf) first grants the group
# system:nodes get and list on nodes through RBAC.
set -u
kubeconfig=/etc/kubernetes/kubelet.conf
rbac_done=
rbac='apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: freshcache-cni}
rules: [{apiGroups: [""], resources: [nodes], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: freshcache-cni}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: freshcache-cni}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:nodes"}]'

conf=/etc/cni/net.d/10-freshcache-bridge.conflist
me=$(hostname)
mtu=$(cat /sys/class/net/eth0/mtu 2>/dev/null || echo 1500)
while true; do
  if [[ -z $rbac_done && -f /etc/kubernetes/admin.conf ]] &&
    kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f - <<<"$rbac" >/dev/null 2>&1; then
    rbac_done=1
    echo "granted system:nodes get/list on nodes (ClusterRole freshcache-cni)"
  fi
  if [[ -f $kubeconfig ]]; then
    nodes=$(kubectl --kubeconfig="$kubeconfig" get nodes -o \
      jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.podCIDR}{" "}{.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' 2>/dev/null) || nodes=
    while read -r name cidr ip _; do
      [[ -n ${cidr:-} && -n ${ip:-} ]] || continue
      if [[ $name == "$me" ]]; then
        if [[ ! -f $conf ]]; then
          mkdir -p "$(dirname "$conf")"
          cat >"$conf.tmp" <<CONF
{
  "cniVersion": "0.4.0",
  "name": "freshcache",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "mtu": $mtu,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
CONF
          mv "$conf.tmp" "$conf"
          echo "wrote $conf for podCIDR $cidr"
        fi
      elif ! ip route show "$cidr" | grep -q "via $ip "; then
        ip route replace "$cidr" via "$ip" && echo "route $cidr via $ip ($name)"
      fi
    done <<<"$nodes"
  fi
  sleep 5
done
