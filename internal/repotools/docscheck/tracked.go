package docscheck

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// TrackedFiles lists the files git tracks in the repository at root, as
// slash-separated paths relative to it: what the repository checks read.
func TrackedFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, errors.New("git ls-files listed nothing")
	}
	return files, nil
}
