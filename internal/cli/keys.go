package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/internal/apiclient"
	"github.com/agentd/agentd/internal/apitypes"
)

func (a *app) keysCommand() *cobra.Command {
	var userID string
	var expires time.Duration
	create := &cobra.Command{
		Use:   "create <name>",
		Short: "Create an API key; it is shown this once",
		Args:  args("name"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			req := apitypes.APIKeyCreateRequest{Name: argv[0]}
			if userID != "" {
				req.UserID = &userID
			}
			if expires > 0 {
				t := time.Now().Add(expires).UTC()
				req.ExpiresAt = &t
			} else if expires < 0 {
				return Usagef("--expires-in must be positive")
			}
			k, err := c.CreateKey(cmd.Context(), req)
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return printJSON(a.env.Stdout, k)
			}
			fmt.Fprintf(a.env.Stderr, "Created key %s (%s). It is shown this once:\n", k.ID, k.Name)
			fmt.Fprintln(a.env.Stdout, k.Key)
			return nil
		},
	}
	create.Flags().StringVar(&userID, "user", "", "the user the key is for (admins only; default: you)")
	create.Flags().DurationVar(&expires, "expires-in", 0, "the key stops working after this long, e.g. 720h (default: never)")

	var listUser string
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List API keys (never the keys themselves)",
		Args:    args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			ks, err := c.Keys(cmd.Context(), listUser)
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return jsonLines(a.env.Stdout, ks)
			}
			now := time.Now()
			rows := make([][]string, len(ks))
			for i, k := range ks {
				exp := "never"
				if k.ExpiresAt != nil {
					exp = k.ExpiresAt.Local().Format(time.DateTime)
				}
				rows[i] = []string{k.ID, k.Name, k.Prefix + "…", ago(k.CreatedAt, now), exp}
			}
			return table(a.env.Stdout, []string{"ID", "NAME", "PREFIX", "CREATED", "EXPIRES"}, rows)
		},
	}
	list.Flags().StringVar(&listUser, "user", "", "list this user's keys (admins only; default: yours)")

	var revokeUser string
	revoke := &cobra.Command{
		Use:   "revoke <key id>",
		Short: "Revoke an API key",
		Args:  args("key id"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := c.RevokeKey(cmd.Context(), revokeUser, argv[0]); err != nil {
				return err
			}
			return a.done(cmd, "Revoked key "+argv[0]+".")
		},
	}
	revoke.Flags().StringVar(&revokeUser, "user", "", "the user whose key it is (admins only; default: you)")
	c := group("keys", "Create, list and revoke API keys", create, list, revoke)
	c.Aliases = []string{"key"}
	return c
}

func (a *app) usersCommand() *cobra.Command {
	var admin bool
	create := &cobra.Command{
		Use:   "create <name>",
		Short: "Create a user (admins only); then agentd keys create --user gives them a key",
		Args:  args("name"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			u, err := c.CreateUser(cmd.Context(), apitypes.UserCreateRequest{Name: argv[0], IsAdmin: admin})
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return printJSON(a.env.Stdout, u)
			}
			fmt.Fprintf(a.env.Stdout, "Created user %s (%s).\n", u.Name, u.ID)
			return nil
		},
	}
	create.Flags().BoolVar(&admin, "admin", false, "make the user an admin")
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the users (admins only)",
		Args:    args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			us, err := apiclient.All(0, func(p apiclient.Page) ([]apitypes.UserInfo, *string, error) {
				page, err := c.Users(cmd.Context(), p)
				return page.Items, page.NextPageID, err
			})
			if err != nil {
				return err
			}
			if jsonOut(cmd) {
				return jsonLines(a.env.Stdout, us)
			}
			now := time.Now()
			rows := make([][]string, len(us))
			for i, u := range us {
				role := "user"
				if u.IsAdmin {
					role = "admin"
				}
				rows[i] = []string{u.ID, u.Name, role, ago(u.CreatedAt, now)}
			}
			return table(a.env.Stdout, []string{"ID", "NAME", "ROLE", "CREATED"}, rows)
		},
	}
	c := group("users", "Create and list users (admins)", create, list)
	c.Aliases = []string{"user"}
	return c
}
