package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/internal/apiclient"
	"github.com/agentd/agentd/internal/apitypes"
)

func (a *app) sandboxesCommand() *cobra.Command {
	c := group("sandboxes", "List, start, pause, resume and delete sandboxes",
		a.sandboxListCommand(), a.sandboxStartCommand(),
		a.sandboxActionCommand("pause", "Freeze a sandbox's processes", "Paused", (*apiclient.Client).PauseSandbox),
		a.sandboxActionCommand("resume", "Thaw a paused sandbox", "Resumed", (*apiclient.Client).ResumeSandbox),
		a.sandboxActionCommand("delete", "Destroy a sandbox and its workspace", "Deleted", (*apiclient.Client).DeleteSandbox))
	c.Aliases = []string{"sandbox", "sb"}
	return c
}

func (a *app) sandboxListCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List your sandboxes",
		Args:    args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			items, err := apiclient.All(0, func(p apiclient.Page) ([]apitypes.SandboxInfo, *string, error) {
				page, err := c.Sandboxes(cmd.Context(), p)
				return page.Items, page.NextPageID, err
			})
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				for i := range items {
					items[i].SessionAPIKey = nil // a key has no place in a listing a script may log
				}
				return jsonLines(a.env.Stdout, items)
			}
			st := a.style(a.env.Stdout)
			now := time.Now()
			rows := make([][]string, len(items))
			for i, it := range items {
				rows[i] = []string{it.ID, st.status(string(it.Status)), it.SandboxSpecID, it.Backend, ago(it.CreatedAt, now), deref(it.Detail)}
			}
			return table(a.env.Stdout, []string{"ID", "STATUS", "SPEC", "BACKEND", "CREATED", "DETAIL"}, rows)
		},
	}
}

func (a *app) sandboxStartCommand() *cobra.Command {
	var spec string
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start a sandbox and wait until it runs",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			sb, err := c.StartSandbox(ctx, spec)
			if err != nil {
				return err
			}
			if sb, err = a.waitSandbox(ctx, c, sb); err != nil {
				return err
			}
			if jsonOut(cmd) {
				sb.SessionAPIKey = nil
				return printJSON(a.env.Stdout, sb)
			}
			fmt.Fprintf(a.env.Stdout, "Sandbox %s is %s (spec %s, backend %s).\n", sb.ID, a.style(a.env.Stdout).status(string(sb.Status)), sb.SandboxSpecID, sb.Backend)
			return nil
		},
	}
	cmd.Flags().StringVar(&spec, "spec", "", "sandbox spec to start from (default: the server's; see agentd specs list)")
	return cmd
}

// waitSandbox waits, with a spinner, while the sandbox starts.
func (a *app) waitSandbox(ctx context.Context, c *apiclient.Client, sb apitypes.SandboxInfo) (apitypes.SandboxInfo, error) {
	sp := a.startSpinner("starting sandbox " + sb.ID)
	defer sp.stop()
	delay := 50 * time.Millisecond
	for sb.Status == "STARTING" {
		select {
		case <-ctx.Done():
			return sb, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
		var err error
		if sb, err = c.Sandbox(ctx, sb.ID); err != nil {
			return sb, err
		}
	}
	if sb.Status != "RUNNING" {
		return sb, fmt.Errorf("sandbox %s is %s: %s", sb.ID, sb.Status, deref(sb.Detail))
	}
	return sb, nil
}

func (a *app) sandboxActionCommand(verb, short, past string, do func(*apiclient.Client, context.Context, string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   verb + " <sandbox>",
		Short: short,
		Args:  args("sandbox"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			var sp *spinner
			if verb == "resume" {
				sp = a.startSpinner("resuming sandbox " + argv[0])
			}
			err = do(c, cmd.Context(), argv[0])
			if sp != nil {
				sp.stop()
			}
			if err != nil {
				return err
			}
			return a.done(cmd, past+" sandbox "+argv[0]+".")
		},
	}
	if verb == "delete" {
		cmd.Aliases = []string{"rm"}
	}
	return cmd
}

func (a *app) specsCommand() *cobra.Command {
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the sandbox specs sandboxes start from",
		Args:    args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			items, err := apiclient.All(0, func(p apiclient.Page) ([]apitypes.SandboxSpecInfo, *string, error) {
				page, err := c.Specs(cmd.Context(), p)
				return page.Items, page.NextPageID, err
			})
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return jsonLines(a.env.Stdout, items)
			}
			rows := make([][]string, len(items))
			for i, it := range items {
				image := it.Image
				if image == "" {
					image = it.Rootfs
				}
				rows[i] = []string{it.ID, it.Network, limitsText(it.Limits), image, it.Description + warnings(it.Warnings)}
			}
			return table(a.env.Stdout, []string{"ID", "NETWORK", "LIMITS", "IMAGE", "DESCRIPTION"}, rows)
		},
	}
	c := group("specs", "List the sandbox specs", list)
	c.Aliases = []string{"spec"}
	return c
}

func limitsText(l apitypes.SandboxLimits) string {
	var parts []string
	if l.MemoryBytes > 0 {
		parts = append(parts, fmt.Sprintf("%dMiB", l.MemoryBytes>>20))
	}
	if l.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("%gcpu", l.CPUs))
	}
	if l.PIDs > 0 {
		parts = append(parts, fmt.Sprintf("%dpids", l.PIDs))
	}
	return strings.Join(parts, " ")
}

func warnings(ws []string) string {
	if len(ws) == 0 {
		return ""
	}
	return " (warning: " + strings.Join(ws, "; ") + ")"
}
