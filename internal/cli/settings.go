package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) settingsCommand() *cobra.Command {
	get := &cobra.Command{
		Use:   "get [name...]",
		Short: "Show your settings (secrets are never shown, only whether they are set)",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, names []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			s, err := c.Settings(cmd.Context())
			if err != nil {
				return err
			}
			if len(names) > 0 {
				kept := map[string]json.RawMessage{}
				for _, n := range names {
					v, ok := s[n]
					if !ok {
						return Usagef("no setting %q; agentd settings get lists them", n)
					}
					kept[n] = v
				}
				s = kept
			}
			if jsonOut(cmd) {
				return printJSON(a.env.Stdout, s)
			}
			keys := make([]string, 0, len(s))
			for k := range s {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			rows := make([][]string, len(keys))
			for i, k := range keys {
				v := string(s[k])
				var str string
				if json.Unmarshal(s[k], &str) == nil {
					v = str
				}
				rows[i] = []string{k, v}
			}
			return table(a.env.Stdout, []string{"SETTING", "VALUE"}, rows)
		},
	}
	set := &cobra.Command{
		Use:   "set <name>=<value>...",
		Short: "Change settings; the others keep their value",
		Long: `Change settings, each given as name=value. A value that reads as JSON (a number, true,
false, null, an object or a list) is sent as such, anything else as a string; an empty value
clears a secret. agentd settings get lists the names.`,
		Example: `  agentd settings set llm_model=gpt-4o llm_api_key="$OPENAI_API_KEY"
  agentd settings set max_iterations=50 confirmation_mode=true`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return Usagef("settings set takes at least one name=value")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, pairs []string) error {
			body := map[string]any{}
			for _, p := range pairs {
				name, value, ok := strings.Cut(p, "=")
				if !ok || name == "" {
					return Usagef("%q: want name=value", p)
				}
				var v any = value
				var parsed any
				if value != "" && json.Unmarshal([]byte(value), &parsed) == nil {
					if _, isString := parsed.(string); !isString {
						v = parsed
					}
				}
				body[name] = v
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := c.StoreSettings(cmd.Context(), body); err != nil {
				return err
			}
			names := make([]string, 0, len(body))
			for n := range body {
				names = append(names, n)
			}
			slices.Sort(names)
			return a.done(cmd, fmt.Sprintf("Saved %s.", strings.Join(names, ", ")))
		},
	}
	return group("settings", "Show and change your settings (model, keys, limits)", get, set)
}
