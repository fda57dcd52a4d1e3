// Package cli is agentd's command-line client: the commands that drive a server from a
// terminal or a script (login, conversations, sandboxes, specs, events, keys, users,
// settings, webhooks). It talks to the server only through the public HTTP API and its event
// socket (internal/apiclient); cmd/agentd mounts its commands beside serve and runtime.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/internal/apiclient"
)

// Exit codes. They are part of the CLI's contract (docs/cli.md): scripts branch on them.
const (
	ExitOK = 0
	// ExitError: the server failed (5xx), could not be reached, or answered something this
	// client cannot read.
	ExitError = 1
	// ExitUsage: the command line is wrong, or the server refused the request as invalid
	// (400, 409, 422 and the other 4xx not below).
	ExitUsage = 2
	// ExitNotFound: no such conversation, sandbox, key, ... of the caller's (404, 410).
	ExitNotFound = 3
	// ExitAuth: no API key, or the server refused it (401) or the action (403).
	ExitAuth = 4
	// ExitAgentError: the agent ended in error or got stuck, or the conversation failed to
	// start.
	ExitAgentError = 5
	// ExitAgentWaiting: the agent stopped before finishing: it waits for the user to
	// confirm its actions, or it was paused.
	ExitAgentWaiting = 6
	// ExitInterrupted: interrupted (Ctrl-C).
	ExitInterrupted = 130
)

// Env is what the commands use of the process: its streams, environment and directories.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment (AGENTD_URL, AGENTD_API_KEY, NO_COLOR).
	Getenv func(string) string
	// ConfigDir is the user's configuration directory (os.UserConfigDir).
	ConfigDir func() (string, error)
	// Terminal reports whether w is a terminal (colours and spinners only there).
	Terminal func(w io.Writer) bool
	// Version is sent as the User-Agent.
	Version string
}

// usageError is a wrong command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Usagef returns a usage error: exit code ExitUsage.
func Usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// IsUsage reports whether err is a usage error.
func IsUsage(err error) bool {
	var u *usageError
	return errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command ")
}

// outcomeError ends a followed conversation with an exit code of its own.
type outcomeError struct {
	code int
	msg  string
}

func (e *outcomeError) Error() string { return e.msg }

// authError: there is no key to send.
var errNoKey = errors.New("no API key: run `agentd login`, or set AGENTD_API_KEY")

// ExitCode is the exit code for err (nil: ExitOK).
func ExitCode(err error) int {
	var oe *outcomeError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &oe):
		return oe.code
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case IsUsage(err):
		return ExitUsage
	case errors.Is(err, errNoKey):
		return ExitAuth
	}
	switch s := apiclient.StatusOf(err); {
	case s == 401 || s == 403:
		return ExitAuth
	case s == 404 || s == 410:
		return ExitNotFound
	case s >= 400 && s < 500:
		return ExitUsage
	}
	return ExitError
}

// Commands returns the client's top-level commands.
func Commands(env *Env) []*cobra.Command {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.ConfigDir == nil {
		env.ConfigDir = os.UserConfigDir
	}
	if env.Terminal == nil {
		env.Terminal = func(io.Writer) bool { return false }
	}
	a := &app{env: env}
	return []*cobra.Command{
		a.loginCommand(),
		a.conversationsCommand(),
		a.sandboxesCommand(),
		a.specsCommand(),
		a.eventsCommand(),
		a.keysCommand(),
		a.usersCommand(),
		a.settingsCommand(),
		a.webhooksCommand(),
	}
}

// app holds what every command shares.
type app struct {
	env *Env
}

// GlobalFlags are the flags every client command takes; cmd/agentd adds them to the root.
func GlobalFlags(root *cobra.Command) {
	root.PersistentFlags().String("url", "", "agentd server URL (default: AGENTD_URL, else the one agentd login saved)")
	root.PersistentFlags().Bool("json", false, "print JSON for scripts (JSON lines for streams) instead of tables")
}

// jsonOut reports whether the command was asked for JSON.
func jsonOut(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool("json")
	return v
}

// group is a command that only holds subcommands: run without one (or with an unknown one)
// it is a usage error.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("unknown command %q for %q\n\n%s", args[0], cmd.CommandPath(), cmd.UsageString())
			}
			return Usagef("%s needs a command\n\n%s", cmd.CommandPath(), cmd.UsageString())
		},
	}
	c.AddCommand(subs...)
	return c
}

// args checks the number of positional arguments, naming them in the error.
func args(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			want := "no arguments"
			if len(names) > 0 {
				want = "<" + strings.Join(names, "> <") + ">"
			}
			return Usagef("%s takes %s, got %d argument(s); see %s --help", cmd.CommandPath(), want, len(args), cmd.CommandPath())
		}
		return nil
	}
}
