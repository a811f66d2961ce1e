package realnode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallPackages runs installPackages against a fake apt-get that
// logs its calls and does what each case says.
func TestInstallPackages(t *testing.T) {
	tests := []struct {
		name    string
		present bool   // the package's file exists from the start
		install bool   // Options.Install
		apt     string // the fake apt-get's body; $LOG and $FILE are set
		want    string // "" for success
		calls   string // apt-get's calls, one per line
	}{
		{name: "present", present: true, install: true, apt: "exit 9", calls: ""},
		{name: "missing, not allowed", install: false, apt: "exit 9",
			want: "missing packages: fake-pkg; run: apt-get install -y fake-pkg", calls: ""},
		{name: "installed at once", install: true, apt: `[ "$1" = install ] && touch "$FILE"`,
			calls: "install -y --no-install-recommends fake-pkg"},
		{name: "fresh machine: lists first", install: true,
			apt:   `if [ "$1" = update ]; then touch "$LOG.updated"; elif [ -e "$LOG.updated" ]; then touch "$FILE"; else echo "E: Unable to locate package fake-pkg"; exit 100; fi`,
			calls: "install -y --no-install-recommends fake-pkg\nupdate\ninstall -y --no-install-recommends fake-pkg"},
		{name: "cannot be installed", install: true,
			apt:   `[ "$1" = update ] && exit 0; echo "E: Unable to locate package fake-pkg"; exit 100`,
			want:  "fake-pkg could not be installed: apt-get install -y --no-install-recommends fake-pkg: exit status 100:\nE: Unable to locate package fake-pkg",
			calls: "install -y --no-install-recommends fake-pkg\nupdate\ninstall -y --no-install-recommends fake-pkg"},
		{name: "update fails", install: true, apt: `[ "$1" = update ] && { echo "E: no network"; exit 100; }; exit 100`,
			want:  "apt-get update failed",
			calls: "install -y --no-install-recommends fake-pkg\nupdate"},
		{name: "installed but file still missing", install: true, apt: "exit 0",
			want: "fake-pkg installed, but files are still missing", calls: "install -y --no-install-recommends fake-pkg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "usr-bin-fake")
			log := filepath.Join(dir, "apt.log")
			if tt.present {
				if err := os.WriteFile(file, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			bin := filepath.Join(dir, "bin")
			script := "#!/bin/sh\necho \"$*\" >> \"$LOG\"\n" + tt.apt + "\n"
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+":/usr/bin:/bin")
			t.Setenv("LOG", log)
			t.Setenv("FILE", file)

			err := installPackages(context.Background(), []debPackage{{"fake-pkg", []string{file}}}, tt.install, func(string, ...any) {})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("installPackages = %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrPackages)):
				t.Fatalf("installPackages = %v, want ErrPackages containing %q", err, tt.want)
			}
			calls, _ := os.ReadFile(log)
			if got := strings.TrimSpace(string(calls)); got != tt.calls {
				t.Errorf("apt-get calls:\n%s\nwant:\n%s", got, tt.calls)
			}
		})
	}
}

func TestMissingPackages(t *testing.T) {
	dir := t.TempDir()
	have := filepath.Join(dir, "have")
	if err := os.WriteFile(have, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lack := filepath.Join(dir, "lack")
	got := missingPackages([]debPackage{
		{"complete", []string{have}},
		{"partial", []string{have, lack}},
		{"absent", []string{lack}},
	})
	if strings.Join(got, ",") != "partial,absent" {
		t.Errorf("missingPackages = %v, want partial and absent", got)
	}
}
