package customsecret

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Bounds of a secret.
const (
	MaxNameLen        = 256
	MaxDescriptionLen = 2000
	// MinValueLen is the shortest value, in bytes, that is masked where it appears (see
	// secret.Redactor): a shorter one would show in the agent's output.
	MinValueLen = 6
	// MaxValueLen keeps a value well inside what one environment variable may hold.
	MaxValueLen = 64 << 10
	// MaxPerUser bounds a user's secrets: each is given to every conversation and masked in
	// every event, so their number and size bound what one user costs the server.
	MaxPerUser = 100
)

// InvalidError says why a name, description or value cannot be a secret's.
type InvalidError struct {
	Field string // name, description or value
	Msg   string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Msg }

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reserved are the variables that steer the shell the agent's terminal runs in, or that bash
// will not take: a secret of that name would break every command instead of reaching it.
var reserved = map[string]bool{
	"PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true, "PROMPT_COMMAND": true,
	"IFS": true, "BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true,
	"BASHPID": true, "EUID": true, "UID": true, "PPID": true, "HISTCMD": true,
}

// CheckName reports whether name can be a secret's: the name of an environment variable
// that the agent's terminal can hand to its commands.
func CheckName(name string) error {
	switch {
	case name == "":
		return &InvalidError{"name", "the name is empty"}
	case len(name) > MaxNameLen:
		return &InvalidError{"name", fmt.Sprintf("the name is longer than %d characters", MaxNameLen)}
	case !envName.MatchString(name):
		return &InvalidError{"name", fmt.Sprintf("%q is not an environment variable name: it must start with a letter or underscore and hold only letters, digits and underscores", name)}
	case reserved[name] || strings.HasPrefix(strings.ToLower(name), "__agentd"):
		return &InvalidError{"name", fmt.Sprintf("%q is reserved: the agent's shell depends on that variable", name)}
	}
	return nil
}

// CheckValue reports whether value can be a secret's value. It never quotes the value.
func CheckValue(value string) error {
	switch {
	case len(value) < MinValueLen:
		return &InvalidError{"value", fmt.Sprintf("the value is shorter than %d bytes, too short to be masked where it appears", MinValueLen)}
	case len(value) > MaxValueLen:
		return &InvalidError{"value", fmt.Sprintf("the value is longer than %d bytes", MaxValueLen)}
	case strings.ContainsRune(value, 0):
		return &InvalidError{"value", "the value holds a NUL character, which an environment variable cannot"}
	}
	return nil
}

// CheckDescription reports whether description can be a secret's.
func CheckDescription(description string) error {
	if utf8.RuneCountInString(description) > MaxDescriptionLen {
		return &InvalidError{"description", fmt.Sprintf("the description is longer than %d characters", MaxDescriptionLen)}
	}
	return nil
}
