package githead

import (
	"os/exec"
	"strconv"
	"strings"
)

// Head returns HEAD's commit, abbreviated to abbrev hex digits when abbrev
// is positive, and whether the work tree has uncommitted changes to it.
func Head(abbrev int) (commit string, dirty bool) {
	args := []string{"rev-parse", "HEAD"}
	if abbrev > 0 {
		args = []string{"rev-parse", "--short=" + strconv.Itoa(abbrev), "HEAD"}
	}
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return "unknown", false
	}
	dirty = exec.Command("git", "diff", "--quiet", "HEAD", "--").Run() != nil
	return strings.TrimSpace(string(out)), dirty
}
