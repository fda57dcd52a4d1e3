package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/internal/apiclient"
	"github.com/agentd/agentd/internal/apitypes"
)

func (a *app) conversationsCommand() *cobra.Command {
	c := group("conversations", "Start, list, message, pause and delete conversations",
		a.convCreateCommand(), a.convListCommand(), a.convGetCommand(), a.convSendCommand(),
		a.convPauseCommand(), a.convResumeCommand(), a.convDeleteCommand())
	c.Aliases = []string{"conversation", "conv"}
	return c
}

// message is the text of --message: "-" reads standard input.
func (a *app) message(text string) (string, error) {
	if text != "-" {
		return text, nil
	}
	b, err := io.ReadAll(a.env.Stdin)
	if err != nil {
		return "", fmt.Errorf("read the message from standard input: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// newConversationID is a random UUID in the 32-hex form agentd writes.
func newConversationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

func (a *app) convCreateCommand() *cobra.Command {
	var (
		repo, branch, provider, msg, title, model, sandboxID, instructions string
		follow, noWait                                                     bool
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Start a conversation; with --follow, stream it until the agent is done",
		Long: `Start a conversation with a first message for the agent, optionally on a repository.

Without --follow it waits until the conversation has started (its sandbox running, its
repository cloned) and prints it; --no-wait prints it at once. With --follow it then streams
the agent's steps until the agent finishes or waits for the user, and exits with the outcome:
0 when it finished, 5 when it ended in error (or the start failed), 6 when it waits for the
user to confirm an action or was paused.`,
		Example: `  agentd conversations create --message "Add a README" --follow
  agentd conversations create --repo octo/app --branch main --message "Fix the failing test" --follow
  git log -1 --format=%B | agentd conversations create --repo octo/app --message - --json`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if msg == "" {
				return Usagef("--message is required (\"-\" reads it from standard input)")
			}
			if follow && noWait {
				return Usagef("--follow and --no-wait exclude each other")
			}
			text, err := a.message(msg)
			if err != nil {
				return err
			}
			if text == "" {
				return Usagef("the message is empty")
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			id := newConversationID()
			req := apitypes.AppConversationStartRequest{
				ConversationID: &id,
				InitialMessage: &apitypes.SendMessageRequest{Content: []apitypes.Content{{Text: &apitypes.TextContent{Type: "text", Text: text}}}, Run: true},
			}
			opt := func(s string) *string {
				if s == "" {
					return nil
				}
				return &s
			}
			req.SelectedRepository, req.SelectedBranch, req.Title = opt(repo), opt(branch), opt(title)
			req.LLMModel, req.SandboxID, req.ConversationInstructions = opt(model), opt(sandboxID), opt(instructions)
			if provider != "" {
				p := apitypes.ProviderType(provider)
				req.GitProvider = &p
			}
			task, err := c.StartConversation(ctx, req)
			if err != nil {
				return err
			}
			if noWait {
				if jsonOut(cmd) {
					return printJSON(a.env.Stdout, task)
				}
				fmt.Fprintf(a.env.Stdout, "Conversation %s is starting (start task %s).\n", id, task.ID)
				return nil
			}
			conv, err := a.waitStarted(ctx, c, task.ID)
			if err != nil {
				return err
			}
			if !follow {
				if jsonOut(cmd) {
					return printJSON(a.env.Stdout, conv)
				}
				return a.printConversation(conv)
			}
			if !jsonOut(cmd) {
				st := a.style(a.env.Stderr)
				fmt.Fprintf(a.env.Stderr, "%s %s %s\n", st.dim("conversation"), conv.ID, st.dim("(Ctrl-C stops following; the agent goes on)"))
			} else {
				fmt.Fprintf(a.env.Stderr, "conversation %s\n", conv.ID)
			}
			f := a.newFollower(cmd, c, conv.ID)
			last, err := f.history(ctx)
			if err != nil {
				return err
			}
			if res, ends := outcomeOf(f.status); ends {
				return res
			}
			return f.live(ctx, conv.SandboxID, last, true)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&msg, "message", "m", "", "the first message for the agent (- reads standard input)")
	fl.StringVar(&repo, "repo", "", "repository to work on, owner/name")
	fl.StringVar(&branch, "branch", "", "branch of the repository")
	fl.StringVar(&provider, "provider", "", "git provider of the repository: github, gitlab, bitbucket or enterprise_sso (default: the first whose token reaches it)")
	fl.StringVar(&title, "title", "", "title of the conversation")
	fl.StringVar(&model, "model", "", "LLM model for this conversation (default: the one in your settings)")
	fl.StringVar(&sandboxID, "sandbox", "", "run in this existing sandbox (resumed if paused)")
	fl.StringVar(&instructions, "instructions", "", "extra instructions for the agent's system prompt")
	fl.BoolVarP(&follow, "follow", "f", false, "stream the agent's steps until it finishes or waits for the user; the exit code says how it ended")
	fl.BoolVar(&noWait, "no-wait", false, "print the start at once instead of waiting for the conversation to start")
	return cmd
}

func (a *app) convListCommand() *cobra.Command {
	var limit int
	var all bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List your conversations, newest first",
		Args:    args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			max := limit
			if all {
				max = 0
			} else if limit <= 0 {
				return Usagef("--limit must be positive")
			}
			items, err := apiclient.All(max, func(p apiclient.Page) ([]apitypes.AppConversation, *string, error) {
				page, err := c.Conversations(cmd.Context(), p)
				return page.Items, page.NextPageID, err
			})
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return jsonLines(a.env.Stdout, items)
			}
			st := a.style(a.env.Stdout)
			now := time.Now()
			rows := make([][]string, len(items))
			for i, it := range items {
				rows[i] = []string{it.ID, deref(it.Title), st.status(string(it.ConversationStatus)),
					st.status(string(deref(it.ExecutionStatus))), deref(it.SelectedRepository), ago(it.UpdatedAt, now)}
			}
			return table(a.env.Stdout, []string{"ID", "TITLE", "STATUS", "AGENT", "REPOSITORY", "UPDATED"}, rows)
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "list at most this many")
	cmd.Flags().BoolVar(&all, "all", false, "list them all")
	return cmd
}

func (a *app) printConversation(v apitypes.AppConversation) error {
	st := a.style(a.env.Stdout)
	rows := [][]string{
		{"id", v.ID},
		{"title", deref(v.Title)},
		{"status", st.status(string(v.ConversationStatus))},
		{"agent", st.status(string(deref(v.ExecutionStatus)))},
		{"sandbox", v.SandboxID + " (" + st.status(string(v.SandboxStatus)) + ")"},
		{"repository", strings.TrimSpace(deref(v.SelectedRepository) + " " + deref(v.SelectedBranch))},
		{"model", deref(v.LLMModel)},
		{"created", v.CreatedAt.Local().Format(time.DateTime)},
		{"updated", v.UpdatedAt.Local().Format(time.DateTime)},
	}
	if len(v.PRNumber) > 0 {
		prs := make([]string, len(v.PRNumber))
		for i, n := range v.PRNumber {
			prs[i] = fmt.Sprintf("#%d", n)
		}
		rows = append(rows, []string{"pull requests", strings.Join(prs, " ")})
	}
	if v.Metrics != nil && v.Metrics.AccumulatedCost > 0 {
		rows = append(rows, []string{"cost", fmt.Sprintf("$%.4f", v.Metrics.AccumulatedCost)})
	}
	for _, r := range rows {
		if r[1] == "" {
			r[1] = "-"
		}
		fmt.Fprintf(a.env.Stdout, "%-14s %s\n", st.bold(r[0]+":"), r[1])
	}
	return nil
}

func (a *app) convGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "get <conversation>",
		Short:             "Show a conversation",
		Args:              args("conversation"),
		ValidArgsFunction: a.completeConversations,
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			v, err := c.Conversation(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return printJSON(a.env.Stdout, v)
			}
			return a.printConversation(v)
		},
	}
}

func (a *app) convSendCommand() *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "send <conversation> <message>",
		Short: "Send a message to a conversation's agent",
		Long: `Send a message ("-" reads it from standard input); the agent answers it. With
--follow, stream the agent's steps until it is done, with the exit codes of create --follow.`,
		Args:              args("conversation", "message"),
		ValidArgsFunction: a.completeConversations,
		RunE: func(cmd *cobra.Command, argv []string) error {
			text, err := a.message(argv[1])
			if err != nil {
				return err
			}
			if text == "" {
				return Usagef("the message is empty")
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			conv, err := c.Conversation(ctx, argv[0])
			if err != nil {
				return err
			}
			var f *follower
			var from apiclient.EventHeader
			if follow {
				// What is in the log now is not shown: the answer to this message is.
				f = a.newFollower(cmd, c, conv.ID)
				f.answer = true
				if from, err = f.skipUpTo(ctx); err != nil {
					return err
				}
			}
			if err := c.SendMessage(ctx, conv.ID, text); err != nil {
				return err
			}
			if !follow {
				if !jsonOut(cmd) {
					fmt.Fprintln(a.env.Stdout, "Sent.")
				}
				return nil
			}
			return f.live(ctx, conv.SandboxID, from, true)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "stream the agent's answer until it is done; the exit code says how it ended")
	return cmd
}

func (a *app) convPauseCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "pause <conversation>",
		Short:             "Pause the conversation's agent, interrupting its step in flight",
		Args:              args("conversation"),
		ValidArgsFunction: a.completeConversations,
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			conv, err := c.Conversation(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			if conv.SandboxID == "" {
				return Usagef("conversation %s has no sandbox yet: it is still starting", conv.ID)
			}
			if err := c.PauseAgent(cmd.Context(), conv.SandboxID, conv.ID); err != nil {
				return err
			}
			return a.done(cmd, "Paused the agent of "+conv.ID+".")
		},
	}
}

func (a *app) convResumeCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "resume <conversation>",
		Short:             "Resume a conversation: its sandbox if paused, and its agent",
		Args:              args("conversation"),
		ValidArgsFunction: a.completeConversations,
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			conv, err := c.Conversation(ctx, argv[0])
			if err != nil {
				return err
			}
			if conv.SandboxID == "" {
				return Usagef("conversation %s has no sandbox yet: it is still starting", conv.ID)
			}
			if conv.SandboxStatus == "PAUSED" {
				sp := a.startSpinner("resuming sandbox " + conv.SandboxID)
				err := c.ResumeSandbox(ctx, conv.SandboxID)
				sp.stop()
				if err != nil {
					return err
				}
				if conv, err = c.Conversation(ctx, conv.ID); err != nil {
					return err
				}
			}
			// Only a paused agent is run again: one waiting for confirmation waits for the
			// user's answer, and one that is done waits for a message.
			if deref(conv.ExecutionStatus) == "paused" {
				if err := c.RunAgent(ctx, conv.SandboxID, conv.ID); err != nil && apiclient.StatusOf(err) != 409 {
					return err
				}
			}
			return a.done(cmd, "Resumed "+conv.ID+".")
		},
	}
}

func (a *app) convDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "delete <conversation>",
		Aliases:           []string{"rm"},
		Short:             "Delete a conversation with its sandbox and events",
		Args:              args("conversation"),
		ValidArgsFunction: a.completeConversations,
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := c.DeleteConversation(cmd.Context(), argv[0]); err != nil {
				return err
			}
			return a.done(cmd, "Deleted conversation "+argv[0]+".")
		},
	}
}

// done reports a change that answers nothing else: a sentence for people, {"success": true}
// for scripts.
func (a *app) done(cmd *cobra.Command, msg string) error {
	if jsonOut(cmd) {
		return printJSON(a.env.Stdout, apitypes.Success{Success: true})
	}
	fmt.Fprintln(a.env.Stdout, msg)
	return nil
}

// completeConversations offers the ids of the caller's newest conversations, with their
// titles, as the first argument; nothing when the server cannot be asked.
func (a *app) completeConversations(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := a.client(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	page, err := c.Conversations(cmd.Context(), apiclient.Page{Limit: 50})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out := make([]cobra.Completion, len(page.Items))
	for i, v := range page.Items {
		out[i] = cobra.CompletionWithDesc(v.ID, deref(v.Title))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
