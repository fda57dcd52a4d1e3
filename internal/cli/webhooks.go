package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/internal/apiclient"
	"github.com/agentd/agentd/internal/apitypes"
)

func (a *app) webhooksCommand() *cobra.Command {
	var events []string
	var conv, description string
	create := &cobra.Command{
		Use:   "create <url>",
		Short: "Register an endpoint for signed event deliveries; its secret is shown this once",
		Long: `Register an endpoint that agentd POSTs events to, signed with HMAC-SHA256 under a secret
it generates and shows this once (docs/api.md#webhooks says how to verify a delivery).
Kinds: conversation.created, conversation.start_failed, conversation.status_changed,
conversation.finished, conversation.waiting, conversation.error, sandbox.paused,
sandbox.resumed, sandbox.deleted, pull_request.opened, or * for all.`,
		Example: `  agentd webhooks create https://ci.example.com/agentd --events conversation.finished,conversation.error`,
		Args:    args("url"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			req := apitypes.WebhookCreateRequest{URL: argv[0]}
			for _, e := range events {
				req.Events = append(req.Events, apitypes.WebhookEventKind(strings.TrimSpace(e)))
			}
			if conv != "" {
				req.ConversationID = &conv
			}
			if description != "" {
				req.Description = &description
			}
			w, err := c.CreateWebhook(cmd.Context(), req)
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return printJSON(a.env.Stdout, w)
			}
			fmt.Fprintf(a.env.Stderr, "Created webhook %s. Its signing secret is shown this once:\n", w.ID)
			fmt.Fprintln(a.env.Stdout, w.Secret)
			return nil
		},
	}
	create.Flags().StringSliceVar(&events, "events", []string{"*"}, "kinds of event to deliver, comma-separated")
	create.Flags().StringVar(&conv, "conversation", "", "only this conversation's events")
	create.Flags().StringVar(&description, "description", "", "what the endpoint is for")

	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List your webhooks",
		Args:    args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			ws, err := c.Webhooks(cmd.Context())
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return jsonLines(a.env.Stdout, ws)
			}
			now := time.Now()
			rows := make([][]string, len(ws))
			for i, w := range ws {
				kinds := make([]string, len(w.Events))
				for j, k := range w.Events {
					kinds[j] = string(k)
				}
				rows[i] = []string{w.ID, w.URL, strings.Join(kinds, ","), deref(w.ConversationID), ago(w.CreatedAt, now)}
			}
			return table(a.env.Stdout, []string{"ID", "URL", "EVENTS", "CONVERSATION", "CREATED"}, rows)
		},
	}

	del := &cobra.Command{
		Use:     "delete <webhook>",
		Aliases: []string{"rm"},
		Short:   "Delete a webhook; its pending deliveries are dropped",
		Args:    args("webhook"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := c.DeleteWebhook(cmd.Context(), argv[0]); err != nil {
				return err
			}
			return a.done(cmd, "Deleted webhook "+argv[0]+".")
		},
	}

	var status string
	var limit int
	deliveries := &cobra.Command{
		Use:   "deliveries <webhook>",
		Short: "List a webhook's recent deliveries, newest first",
		Args:  args("webhook"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			page, err := c.WebhookDeliveries(cmd.Context(), argv[0], status, apiclient.Page{Limit: limit})
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return jsonLines(a.env.Stdout, page.Items)
			}
			st := a.style(a.env.Stdout)
			now := time.Now()
			rows := make([][]string, len(page.Items))
			for i, d := range page.Items {
				code := "-"
				if d.ResponseCode != nil {
					code = fmt.Sprint(*d.ResponseCode)
				}
				rows[i] = []string{d.ID, string(d.Event), st.status(string(d.Status)), fmt.Sprint(d.Attempts), code, ago(d.CreatedAt, now), deref(d.Error)}
			}
			return table(a.env.Stdout, []string{"ID", "EVENT", "STATUS", "ATTEMPTS", "CODE", "CREATED", "ERROR"}, rows)
		},
	}
	deliveries.Flags().StringVar(&status, "status", "", "only deliveries in this status: pending, delivered or failed")
	deliveries.Flags().IntVarP(&limit, "limit", "n", 20, "list at most this many (up to 100)")

	redeliver := &cobra.Command{
		Use:   "redeliver <webhook> <delivery>",
		Short: "Send a delivery again (with the same delivery id)",
		Args:  args("webhook", "delivery"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			d, err := c.Redeliver(cmd.Context(), argv[0], argv[1])
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return printJSON(a.env.Stdout, d)
			}
			fmt.Fprintf(a.env.Stdout, "Delivery %s is queued again.\n", d.ID)
			return nil
		},
	}
	c := group("webhooks", "Register endpoints that agentd tells about conversations and sandboxes", create, list, del, deliveries, redeliver)
	c.Aliases = []string{"webhook"}
	return c
}
