package config

import (
	"fmt"
	"strings"
)

// problem is one thing wrong in a string's variables.
type problem struct {
	msg string
	// unset: a variable that is not set, an error only for a command that
	// reads the value (Reads); the others are errors in any case.
	unset bool
}

// expand replaces ${VAR} and ${VAR:-default} in s from lookup and $${ with a
// literal ${. $VAR without braces and a lone $ are left alone. It returns
// every problem found in s.
func expand(s string, lookup func(string) (string, bool)) (string, []problem) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	var problems []problem
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' { // $${ → literal ${
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			problems = append(problems, problem{msg: fmt.Sprintf("unterminated ${ in %q", truncate(s[i:]))})
			break
		}
		ref := rest[:end]
		s = rest[end+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVarName(name) {
			problems = append(problems, problem{msg: fmt.Sprintf("${%s}: %q is not a variable name (letters, digits and _, not starting with a digit)", truncate(ref), truncate(name))})
			continue
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			b.WriteString(def)
		case !ok:
			problems = append(problems, problem{msg: fmt.Sprintf("environment variable %s is not set (write ${%s:-default} for a default)", name, name), unset: true})
		default:
			b.WriteString(v)
		}
	}
	return b.String(), problems
}

func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// truncate cuts text repeated in a message short.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
