package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Machine describes where a run happened.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	// GCEnv is GOGC and GOMEMLIMIT as set in the environment (empty when
	// neither is: the Go defaults, GOGC=100 and no limit). They change how
	// often the collector's mark phase runs, which moves every row.
	GCEnv string `json:"gc_env,omitempty"`
}

// Identity is what a report says about its run; report structs embed it
// first, so that its fields lead their JSON.
type Identity struct {
	Kind      string    `json:"kind"` // storage | memory | apiserver | cluster
	Date      time.Time `json:"date"`
	GitCommit string    `json:"git_commit"`
	Command   string    `json:"command"`
	Machine   Machine   `json:"machine"`
	Notes     []string  `json:"notes,omitempty"`
}

// NewIdentity fills the run's identity: date, machine, commit and command.
func NewIdentity(kind string) Identity {
	return Identity{
		Kind:      kind,
		Date:      time.Now().UTC().Truncate(time.Second),
		GitCommit: GitCommit(),
		Command:   strings.Join(os.Args, " "),
		Machine:   ThisMachine(),
	}
}

// WriteHeading writes the report's title, commit, machine and command:
// the head of every markdown report.
func (id Identity) WriteHeading(w io.Writer) {
	fmt.Fprintf(w, "# freshcache-bench %s: %s\n\n", id.Kind, id.Date.Format("2006-01-02 15:04 UTC"))
	gcEnv := ""
	if id.Machine.GCEnv != "" {
		gcEnv = ", " + id.Machine.GCEnv
	}
	fmt.Fprintf(w, "- commit: `%s`\n- machine: %s, %d cores (GOMAXPROCS %d), %s, %s%s\n- command: `%s`\n",
		id.GitCommit, id.Machine.CPU, id.Machine.Cores, id.Machine.GOMAXPROCS, id.Machine.GoVersion, id.Machine.OS, gcEnv, id.Command)
}

// ThisMachine reads the CPU model from /proc/cpuinfo where there is one.
func ThisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	var gc []string
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(k); ok {
			gc = append(gc, k+"="+v)
		}
	}
	m.GCEnv = strings.Join(gc, " ")
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// buildCommit is stamped by the Makefile at build time (-ldflags -X): the
// commit the binary was built from, with "+dirty" for a modified work tree
// (docs/results, the benchmarks' own output, aside).
var buildCommit string

// GitCommit is the commit the measured code was built from: buildCommit
// when the binary carries one, otherwise HEAD at run time, with "+dirty"
// when the work tree, docs/results aside, differs from it. The run-time
// fallback only reads: GIT_OPTIONAL_LOCKS=0 keeps git status from
// refreshing the index.
func GitCommit() string {
	if buildCommit != "" {
		return buildCommit
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	// docs/results is the benchmarks' own output, not what they ran.
	st := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", ":/", ":(top,exclude)docs/results")
	st.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	if s, err := st.Output(); err == nil && len(strings.TrimSpace(string(s))) > 0 {
		c += "+dirty"
	}
	return c
}

// WriteJSON writes v as indented JSON to path, with a final newline.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads the JSON at path into v, which WriteJSON wrote. Its errors
// are os.ReadFile's and json.Unmarshal's, unwrapped, so that callers add
// the context they need.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
