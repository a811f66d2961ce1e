package realnode

// With iptables' nf_tables backend (Debian's default), the first rule in a
// table creates the nf_tables table itself, and it stays, with empty
// built-in chains, after the last rule and chain are gone: iptables-save
// then prints a table that was not there before. Such a table is deleted
// again over netlink. The legacy backend's tables are kernel modules' and
// are left alone.

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/google/nftables"
)

var builtinChains = map[string]bool{"PREROUTING": true, "INPUT": true, "FORWARD": true, "OUTPUT": true, "POSTROUTING": true}

// emptyTable reports whether t holds nothing but built-in chains that
// accept.
func emptyTable(t *ipTable) bool {
	if len(t.rules) > 0 {
		return false
	}
	for c, policy := range t.chains {
		if !builtinChains[c] || policy != "ACCEPT" {
			return false
		}
	}
	return true
}

func nftBackend(ctx context.Context, cmd string) bool {
	out, err := exec.CommandContext(ctx, cmd, "--version").Output()
	return err == nil && strings.Contains(string(out), "nf_tables")
}

// deleteEmptyNFTables deletes those of tables (names that were not there
// before the run) that are now empty.
func deleteEmptyNFTables(ctx context.Context, cmd string, tables []string) error {
	if len(tables) == 0 || !nftBackend(ctx, cmd) {
		return nil
	}
	out, err := iptablesSave(ctx, cmd)
	if err != nil {
		return err
	}
	now, err := parseSave(out)
	if err != nil {
		return err
	}
	family := nftables.TableFamilyIPv4
	if cmd == "ip6tables" {
		family = nftables.TableFamilyIPv6
	}
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("realnode: nf_tables: %w", err)
	}
	n := 0
	for _, name := range tables {
		if t, ok := now[name]; ok && emptyTable(t) {
			conn.DelTable(&nftables.Table{Name: name, Family: family})
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("realnode: deleting the empty %s tables %v: %w", cmd, tables, err)
	}
	return nil
}
