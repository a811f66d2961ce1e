package realnode

// iptables: the kubelet (KUBE-IPTABLES-HINT, KUBE-KUBELET-CANARY, and
// KUBE-FIREWALL on some versions), the CNI plugins and kube-proxy add
// chains and rules. The undo compares iptables-save output from before the
// run with the current one and reverses only the difference, so rules that
// someone else changed meanwhile in other chains stay.

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// ruleset is one iptables-save output: table name to table.
type ruleset map[string]*ipTable

type ipTable struct {
	// chains maps a chain to its policy ("-" for a user-defined chain).
	chains map[string]string
	// rules are the "-A CHAIN ..." lines, in order.
	rules []string
}

var counters = regexp.MustCompile(`\[\d+:\d+\]`)

// parseSave reads iptables-save output. Comments and counters are
// dropped.
func parseSave(out string) (ruleset, error) {
	rs := ruleset{}
	var cur *ipTable
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "*"):
			cur = &ipTable{chains: map[string]string{}}
			rs[line[1:]] = cur
		case line == "COMMIT":
			cur = nil
		case cur == nil:
			return nil, fmt.Errorf("realnode: iptables-save line %d outside a table: %q", n+1, line)
		case strings.HasPrefix(line, ":"):
			f := strings.Fields(line[1:])
			if len(f) < 2 {
				return nil, fmt.Errorf("realnode: iptables-save line %d: %q", n+1, line)
			}
			cur.chains[f[0]] = f[1]
		case strings.HasPrefix(line, "-A "):
			cur.rules = append(cur.rules, line)
		default:
			return nil, fmt.Errorf("realnode: iptables-save line %d: unexpected %q", n+1, line)
		}
	}
	return rs, nil
}

// NormalizeSave is iptables-save output without comments and counters,
// tables sorted by name: two outputs of the same rules compare equal.
func NormalizeSave(out string) string {
	var b strings.Builder
	var tables []string
	blocks := map[string][]string{}
	cur := ""
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "*") {
			cur = line
			tables = append(tables, cur)
		}
		blocks[cur] = append(blocks[cur], counters.ReplaceAllString(line, "[0:0]"))
	}
	sort.Strings(tables)
	for _, t := range tables {
		b.WriteString(strings.Join(blocks[t], "\n"))
		b.WriteByte('\n')
	}
	return b.String()
}

func ruleChain(rule string) string {
	f := strings.Fields(rule)
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// undoScript is the iptables-restore --noflush input that turns after
// back into before, and the tables after has that before had not (once the
// script ran, they hold only empty built-in chains; the caller may delete
// them). In each table it declares chains that went missing, puts back
// built-in policies, deletes added rules from chains that existed before,
// flushes and deletes added chains, and appends rules that went missing.
func undoScript(before, after ruleset) (script string, newTables []string) {
	var names []string
	for name := range after {
		names = append(names, name)
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		bt, at := before[name], after[name]
		if bt == nil {
			newTables = append(newTables, name)
			bt = &ipTable{chains: map[string]string{}}
		}
		if at == nil {
			at = &ipTable{chains: map[string]string{}}
		}
		lines := tableUndo(bt, at)
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "*%s\n%s\nCOMMIT\n", name, strings.Join(lines, "\n"))
	}
	return b.String(), newTables
}

func tableUndo(before, after *ipTable) []string {
	var lines []string
	for _, c := range slices.Sorted(maps.Keys(before.chains)) {
		policy := before.chains[c]
		now, ok := after.chains[c]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf(":%s %s [0:0]", c, policy))
		case policy != "-" && now != policy:
			lines = append(lines, fmt.Sprintf(":%s %s [0:0]", c, policy))
		}
	}
	// Built-in chains (those with a policy) are never deleted: they
	// belong to the table, which deleteEmptyNFTables deals with.
	var added []string
	for _, c := range slices.Sorted(maps.Keys(after.chains)) {
		if _, ok := before.chains[c]; !ok && after.chains[c] == "-" {
			added = append(added, c)
		}
	}
	// Rules as multisets: a rule present twice now and once before is
	// deleted once. Deletions go last first, so that the kept copy is
	// the earlier one.
	left := counts(before.rules)
	var deletes []string
	for i := len(after.rules) - 1; i >= 0; i-- {
		r := after.rules[i]
		if left[r] > 0 {
			left[r]--
			continue
		}
		if slices.Contains(added, ruleChain(r)) {
			continue // goes with its chain
		}
		deletes = append(deletes, "-D"+strings.TrimPrefix(r, "-A"))
	}
	lines = append(lines, deletes...)
	for _, c := range added {
		lines = append(lines, "-F "+c)
	}
	for _, c := range added {
		lines = append(lines, "-X "+c)
	}
	now := counts(after.rules)
	for _, r := range before.rules {
		if now[r] > 0 {
			now[r]--
			continue
		}
		lines = append(lines, r)
	}
	return lines
}

func counts(rules []string) map[string]int {
	m := map[string]int{}
	for _, r := range rules {
		m[r]++
	}
	return m
}

// iptablesSave runs cmd-save ("iptables" or "ip6tables"); "" when the
// tool is not installed.
func iptablesSave(ctx context.Context, cmd string) (string, error) {
	path, err := exec.LookPath(cmd + "-save")
	if err != nil {
		return "", nil
	}
	out, err := exec.CommandContext(ctx, path).Output()
	if err != nil {
		return "", fmt.Errorf("realnode: %s-save: %w", cmd, exitDetail(err))
	}
	return string(out), nil
}

// undoIPTables reverses, for cmd, what changed since before.
func undoIPTables(ctx context.Context, cmd, before string) error {
	if _, err := exec.LookPath(cmd + "-restore"); err != nil {
		return nil
	}
	nowOut, err := iptablesSave(ctx, cmd)
	if err != nil {
		return err
	}
	b, err := parseSave(before)
	if err != nil {
		return err
	}
	a, err := parseSave(nowOut)
	if err != nil {
		return err
	}
	script, newTables := undoScript(b, a)
	if script != "" {
		c := exec.CommandContext(ctx, cmd+"-restore", "--noflush")
		c.Stdin = strings.NewReader(script)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("realnode: %s-restore --noflush: %w: %s\ninput:\n%s", cmd, err, strings.TrimSpace(stderr.String()), script)
		}
	}
	return deleteEmptyNFTables(ctx, cmd, newTables)
}

// exitDetail adds a failed command's stderr to its error.
func exitDetail(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
