package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/internal/apiclient"
)

// savedLogin is what `agentd login` keeps in the user's configuration directory.
type savedLogin struct {
	URL    string `json:"url"`
	APIKey string `json:"api_key"`
}

// configFile is where the login is kept: <config dir>/agentd/cli.json.
func (a *app) configFile() (string, error) {
	dir, err := a.env.ConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the configuration directory: %w", err)
	}
	return filepath.Join(dir, "agentd", "cli.json"), nil
}

func (a *app) readLogin() (savedLogin, error) {
	path, err := a.configFile()
	if err != nil {
		return savedLogin{}, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return savedLogin{}, nil
	}
	if err != nil {
		return savedLogin{}, err
	}
	var l savedLogin
	if err := json.Unmarshal(data, &l); err != nil {
		return savedLogin{}, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// writeLogin saves l readable by the user alone (the file 0600, its directory 0700), replacing
// the file in one rename so that no reader sees half of it.
func (a *app) writeLogin(l savedLogin) (string, error) {
	path, err := a.configFile()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cli-*.json")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// target is the server and key a command uses: --url, else AGENTD_URL, else the saved login;
// AGENTD_API_KEY, else the saved key.
func (a *app) target(cmd *cobra.Command) (url, key string, err error) {
	saved, err := a.readLogin()
	if err != nil {
		return "", "", err
	}
	url, _ = cmd.Flags().GetString("url")
	if url == "" {
		url = a.env.Getenv("AGENTD_URL")
	}
	if url == "" {
		url = saved.URL
	}
	if url == "" {
		url = "http://127.0.0.1:3000"
	}
	key = a.env.Getenv("AGENTD_API_KEY")
	if key == "" {
		key = saved.APIKey
	}
	return url, key, nil
}

// client is the API client for the command's server and key.
func (a *app) client(cmd *cobra.Command) (*apiclient.Client, error) {
	url, key, err := a.target(cmd)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, errNoKey
	}
	c, err := apiclient.New(url, key, apiclient.Options{UserAgent: "agentd-cli/" + a.env.Version})
	if err != nil {
		return nil, Usagef("%v", err)
	}
	return c, nil
}

func (a *app) loginCommand() *cobra.Command {
	var keyStdin bool
	cmd := &cobra.Command{
		Use:   "login [url]",
		Short: "Save a server URL and API key for the other commands",
		Long: `Save the server's URL and an API key in the user's configuration directory
(<config dir>/agentd/cli.json, readable by the user alone), after checking them with the
server. The key is read from AGENTD_API_KEY, from standard input with --api-key-stdin, or
asked for on the terminal. AGENTD_URL and AGENTD_API_KEY, when set, win over the saved
values for every command.`,
		Example: `  agentd login http://127.0.0.1:3000
  echo "$KEY" | agentd login https://agentd.example.com --api-key-stdin`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return Usagef("login takes at most one argument, the server URL")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			url, _, err := a.target(cmd)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				url = args[0]
			}
			if _, err := apiclient.ParseURL(url); err != nil {
				return Usagef("%v", err)
			}
			key := a.env.Getenv("AGENTD_API_KEY")
			if keyStdin {
				if key, err = readLine(a.env.Stdin); err != nil {
					return fmt.Errorf("read the API key from standard input: %w", err)
				}
			} else if key == "" {
				fmt.Fprint(a.env.Stderr, "API key: ")
				if key, err = readSecret(a.env.Stdin, a.env.Stderr); err != nil {
					return fmt.Errorf("read the API key: %w", err)
				}
			}
			if key == "" {
				return errNoKey
			}
			c, err := apiclient.New(url, key, apiclient.Options{UserAgent: "agentd-cli/" + a.env.Version})
			if err != nil {
				return Usagef("%v", err)
			}
			me, err := c.Me(cmd.Context())
			if err != nil {
				return err
			}
			path, err := a.writeLogin(savedLogin{URL: c.BaseURL(), APIKey: key})
			if err != nil {
				return fmt.Errorf("save the login: %w", err)
			}
			if jsonOut(cmd) {
				return printJSON(a.env.Stdout, map[string]any{"url": c.BaseURL(), "user": me.Name, "user_id": me.ID, "is_admin": me.IsAdmin, "saved_to": path})
			}
			role := ""
			if me.IsAdmin {
				role = " (admin)"
			}
			fmt.Fprintf(a.env.Stdout, "Logged in to %s as %s%s; saved to %s\n", c.BaseURL(), me.Name, role, path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&keyStdin, "api-key-stdin", false, "read the API key from standard input")
	return cmd
}

// readLine reads one line, without its line ending or surrounding spaces.
func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimSpace(line), nil
}
