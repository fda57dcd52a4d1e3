//go:build !agentd_runtime_only

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/agentd/agentd/internal/cli"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/runtime"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/podinit"
)

const overview = `agentd runs software-agent conversations inside sandboxes.

  agentd serve                  start the control plane (see docs/configuration.md)
  agentd runtime                start the in-sandbox tool router (started by agentd itself)
  agentd rotate-key             make a new server key and reseal every stored secret under it
                                (run while agentd serve is stopped)
  agentd keyring create FILE    make the keyring file that the replicas of one database share
  agentd keyring add-key|activate|reseal|prune
                                rotate its key while the replicas run (docs/configuration.md)
  agentd migrate --to URL       copy the data directory's SQLite store into an empty PostgreSQL
                                database (run while agentd serve is stopped; docs/migrate.md)
  agentd login                  save a server URL and API key for the client commands; then
  agentd conversations create --message "..." --follow
                                runs an agent and streams its steps until it is done`

// commandLine runs the full build's command line: the server's commands and the client's.
func commandLine(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	if len(args) == 0 {
		fmt.Fprintln(stderr, root.Long)
		fmt.Fprintln(stderr)
		fmt.Fprint(stderr, root.UsageString())
		return cli.ExitUsage
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return cli.ExitOK
	}
	fmt.Fprintln(stderr, "agentd:", err)
	return cli.ExitCode(err)
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "agentd",
		Short:         "Run software-agent conversations inside sandboxes",
		Long:          overview,
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unknown command %q for %q\n\n%s", args[0], "agentd", cmd.UsageString())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.Usagef("agentd needs a command\n\n%s", cmd.UsageString())
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("agentd {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cli.Usagef("%v; see %s --help", err, c.CommandPath())
	})
	root.AddGroup(&cobra.Group{ID: "server", Title: "Server commands:"},
		&cobra.Group{ID: "client", Title: "Client commands (a server's HTTP API; see docs/cli.md):"})
	root.SetHelpCommandGroupID("client")
	root.SetCompletionCommandGroupID("client")

	for _, c := range serverCommands(stdout, stderr) {
		c.GroupID = "server"
		root.AddCommand(c)
	}
	env := &cli.Env{
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Getenv: os.Getenv, ConfigDir: os.UserConfigDir, Version: version,
		Terminal: func(w io.Writer) bool {
			f, ok := w.(*os.File)
			return ok && isatty.IsTerminal(f.Fd())
		},
	}
	cli.GlobalFlags(root)
	for _, c := range cli.Commands(env) {
		c.GroupID = "client"
		root.AddCommand(c)
	}
	return root
}

// serverCommands are the commands that run agentd itself. They parse their own flags (those
// of internal/config), as they always have.
func serverCommands(stdout, stderr io.Writer) []*cobra.Command {
	serveCmd := &cobra.Command{
		Use:                "serve [flags]",
		Short:              "Start the control plane",
		Long:               "Start the control plane: the HTTP API, the sandboxes and the agents.\n\n" + configHelp(),
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if helpAsked(args) {
				return cmd.Help()
			}
			return serve(cmd.Context(), args, stdout, stderr)
		},
	}
	rotateCmd := &cobra.Command{
		Use:   "rotate-key [flags]",
		Short: "Make a new server key and reseal every stored secret under it (while serve is stopped)",
		Long: "Make a new server key and reseal every stored secret under it. Run it while agentd\n" +
			"serve is stopped (every replica, on PostgreSQL); it takes the data directory and the\n" +
			"keyring as serve does, and rewrites the keyring file.\n\n" + configHelp(),
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if helpAsked(args) {
				return cmd.Help()
			}
			return rotateKey(cmd.Context(), args, stdout)
		},
	}
	keyringCmd := &cobra.Command{
		Use:   "keyring",
		Short: "Make the keyring that the replicas of one database share, and rotate its key while they run",
		Args:  cobra.NoArgs,
	}
	keyringCmd.AddCommand(&cobra.Command{
		Use:   "create FILE",
		Short: "Write a new keyring file with one fresh key (mode 0600)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return createKeyring(args[0], stdout)
		},
	})
	// The steps of a rotation with the replicas running (keyring.go): serve's flags name the
	// keyring file and the database.
	for _, step := range []struct{ use, short string }{
		{"add-key", "Add a new key to the keyring file, not active yet"},
		{"activate KEY", "Make the key seal, once every live replica holds it"},
		{"reseal", "Reseal every stored secret under the active key, once every live replica seals with it"},
		{"prune", "Drop the keys no stored secret is sealed with any more from the keyring file"},
	} {
		name, _, _ := strings.Cut(step.use, " ")
		keyringCmd.AddCommand(&cobra.Command{
			Use:                step.use + " [flags]",
			Short:              step.short,
			Long:               step.short + ". A step of rotating the key while the replicas run: add-key, activate, reseal, prune (docs/configuration.md).\n\n" + configHelp(),
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				if helpAsked(args) {
					return cmd.Help()
				}
				return keyringCommand(cmd.Context(), name, args, stdout)
			},
		})
	}
	migrateCmd := &cobra.Command{
		Use:   "migrate --to URL [flags]",
		Short: "Copy the data directory's SQLite store into an empty PostgreSQL database (while serve is stopped)",
		Long:  migrateHelp + configHelp(),
		// --to, and serve's flags for the data directory, as rotate-key takes them.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if helpAsked(args) {
				return cmd.Help()
			}
			return migrateStore(cmd.Context(), args, stdout, stderr)
		},
	}
	runtimeCmd := &cobra.Command{
		Use:                "runtime [flags]",
		Short:              "Start the in-sandbox tool router (started by agentd itself)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runtime.Main(cmd.Context(), args, os.Getenv, stderr)
		},
	}
	sandboxInitCmd := &cobra.Command{
		Use:                "sandbox-init [flags]",
		Short:              "Prepare a kubernetes sandbox's pod (its init container runs it)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return podinit.Main(args, os.Getenv, stderr)
		},
	}
	versionCmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(stdout, "agentd", version)
		},
	}
	return []*cobra.Command{serveCmd, runtimeCmd, sandboxInitCmd, rotateCmd, keyringCmd, migrateCmd, versionCmd}
}

// helpAsked reports whether a command that parses its own flags was asked for help.
func helpAsked(args []string) bool {
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "-help" })
}

// configHelp lists the server's settings, as docs/configuration.md does.
func configHelp() string {
	var b strings.Builder
	b.WriteString("Flags (each also from the environment or the --config TOML file; docs/configuration.md):\n")
	b.WriteString("      --config string   TOML config file (also AGENTD_CONFIG)\n")
	for _, o := range config.Options() {
		fmt.Fprintf(&b, "      --%s string\n          %s\n          (%s", o.Flag, o.Doc, strings.Join(o.Env, ", "))
		if o.Default != "" {
			fmt.Fprintf(&b, "; default %s", o.Default)
		}
		b.WriteString(")\n")
	}
	return b.String()
}
