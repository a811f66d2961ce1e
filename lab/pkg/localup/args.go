package localup

import (
	"strings"

	"github.com/spf13/pflag"
)

// SplitArgs separates the arguments that fs defines from those meant for
// kube-apiserver. Everything after a bare "--" goes to kube-apiserver. An
// unknown flag in the "--name value" form takes the next argument as its
// value when that argument does not look like a flag.
func SplitArgs(fs *pflag.FlagSet, args []string) (ours, theirs []string) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			theirs = append(theirs, args[i+1:]...)
			break
		}
		name, hasValue := flagName(arg)
		if name == "" {
			// A positional argument: local-up takes none, so let its parser
			// refuse it with a clear message.
			ours = append(ours, arg)
			continue
		}
		f := fs.Lookup(name)
		if f == nil && len(name) == 1 {
			f = fs.ShorthandLookup(name)
		}
		if f != nil {
			ours = append(ours, arg)
			if !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
				i++
				ours = append(ours, args[i])
			}
			continue
		}
		theirs = append(theirs, arg)
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			theirs = append(theirs, args[i])
		}
	}
	return ours, theirs
}

func flagName(arg string) (name string, hasValue bool) {
	if !strings.HasPrefix(arg, "-") || arg == "-" {
		return "", false
	}
	trimmed := strings.TrimLeft(arg, "-")
	if eq := strings.IndexByte(trimmed, '='); eq >= 0 {
		return trimmed[:eq], true
	}
	return trimmed, false
}

// HasFlag reports whether args set the kube-apiserver flag name, in either
// "--name=value" or "--name value" form.
func HasFlag(args []string, name string) bool {
	for _, a := range args {
		if n, _ := flagName(a); n == name {
			return true
		}
	}
	return false
}
