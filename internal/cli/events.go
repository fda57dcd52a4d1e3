package cli

import (
	"github.com/spf13/cobra"
)

func (a *app) eventsCommand() *cobra.Command {
	var follow, untilDone bool
	cmd := &cobra.Command{
		Use:   "events <conversation>",
		Short: "Show a conversation's events; --follow streams new ones",
		Long: `Show a conversation's events, rendered for people (commands and their output, file
edits as diffs, messages) or, with --json, one JSON event per line as the API has them.

--follow keeps streaming new events until Ctrl-C (or the conversation is deleted); the
stream reconnects by itself after a server restart, without losing or repeating an event.
--until-done streams until the agent stops running and exits with the outcome, as
conversations create --follow does.`,
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
			f := a.newFollower(cmd, c, conv.ID)
			last, err := f.history(ctx)
			if err != nil {
				return err
			}
			if untilDone {
				if res, ends := outcomeOf(f.status); ends {
					return res
				}
			} else if !follow {
				return nil
			}
			if conv.SandboxID == "" {
				// Still starting: its event socket lives in its sandbox's API.
				if conv, err = a.waitStartedConversation(ctx, c, conv.ID); err != nil {
					return err
				}
			}
			return f.live(ctx, conv.SandboxID, last, untilDone)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming new events until interrupted")
	cmd.Flags().BoolVar(&untilDone, "until-done", false, "stream until the agent stops running; the exit code says how it ended")
	return cmd
}
