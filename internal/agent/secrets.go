package agent

import "strings"

// SecretInfo is a secret the conversation's commands get, as the model is told of it: never
// its value.
type SecretInfo struct {
	Name        string
	Description string
}

// secretsSection tells the model which secrets its terminal commands get, so that it uses them
// by name instead of asking the user for them.
func secretsSection(secrets []SecretInfo) string {
	if len(secrets) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n<CUSTOM_SECRETS>\nThe user gave this conversation these secrets. Every terminal command gets them as environment variables: use them by name (\"$NAME\"), never write their values into files, commands or messages. Wherever a value appears in output it is shown as <secret-hidden>.\n")
	for _, s := range secrets {
		b.WriteString("* " + s.Name)
		if d := strings.TrimSpace(s.Description); d != "" {
			b.WriteString(": " + strings.Join(strings.Fields(d), " "))
		}
		b.WriteString("\n")
	}
	b.WriteString("</CUSTOM_SECRETS>")
	return b.String()
}
